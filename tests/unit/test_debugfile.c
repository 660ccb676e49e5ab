// SPDX-License-Identifier: Apache-2.0
/*
 * test_debugfile.c - unit tests of where a separate debug file is looked
 * for and whose frames it names (agent/symbolize/debugfile.c, symcache.c),
 * on real files without root: this test program stripped (objcopy) is the
 * binary; its debug file, and the same with every symbol renamed EVIL_…,
 * are put where the agent looks under two directories that stand for two
 * processes' roots.  Each root gets the names of the file it shows, and a
 * third root showing the first's file shares its entry; the agent's own
 * root, which shows none, gets the binary's own symbols.  A debug file
 * without the binary's build id is refused, and the skipped list says
 * why, once: it is not read again.  The places follow gdb's order; the build id check refuses
 * another's or none.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/binaries/binaries.h"
#include "agent/symbolize/debugfile.h"
#include "agent/symbolize/symcache.h"

__attribute__((noinline)) int vmtest_only_in_debug_file(int x)
{
	return x * 7 + 3;
}

/* Run the shell command fmt…; it must succeed. */
__attribute__((format(printf, 1, 2))) static void run(const char *fmt, ...)
{
	char *cmd;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&cmd, fmt, ap);
	va_end(ap);
	assert_true(r > 0);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

static bool has_symbol(const struct vm_symfile *f, const char *name)
{
	for (size_t i = 0; i < f->info.n_syms; i++)
		if (!strcmp(f->info.syms[i].name, name))
			return true;
	return false;
}

static void test_places_and_check(void **state)
{
	struct vm_elf_info bin = { .build_id = { 0xab, 0xcd, 0xef },
				   .build_id_len = 3 },
			   dbg = bin;
	struct vm_debugfile_place p[VM_DEBUGFILE_PLACES];
	char why[160];

	(void)state;
	bin.debuglink = "x.debug";
	assert_int_equal(vm_debugfile_places(&bin, "/usr/bin/x", "/proc/7/root",
					     "/usr/lib/debug", p),
			 4);
	assert_string_equal(
		p[0].path,
		"/proc/7/root/usr/lib/debug/.build-id/ab/cdef.debug");
	assert_false(p[0].by_debuglink);
	assert_string_equal(p[1].path, "/proc/7/root/usr/bin/x.debug");
	assert_string_equal(p[2].path, "/proc/7/root/usr/bin/.debug/x.debug");
	assert_string_equal(p[3].path,
			    "/proc/7/root/usr/lib/debug/usr/bin/x.debug");
	assert_true(p[3].by_debuglink);
	/* By build id only; a debug link naming the binary itself is not. */
	assert_int_equal(vm_debugfile_places(&bin, NULL, "/mnt",
					     "/usr/lib/debug", p),
			 1);
	bin.debuglink = "x";
	assert_int_equal(vm_debugfile_places(&bin, "/usr/bin/x", "",
					     "/usr/lib/debug", p),
			 3);
	assert_string_equal(p[1].path, "/usr/bin/.debug/x");

	assert_int_equal(vm_debugfile_check(&bin, &dbg, why, sizeof(why)), 0);
	dbg.build_id[2] = 0xee;
	assert_int_equal(vm_debugfile_check(&bin, &dbg, why, sizeof(why)),
			 -EINVAL);
	assert_string_equal(why, "its build id is not the binary's: not taken "
				 "as its debug file");
	dbg.build_id_len = 0;
	assert_int_equal(vm_debugfile_check(&bin, &dbg, why, sizeof(why)),
			 -EINVAL);
	assert_non_null(strstr(why, "it has no build id"));
	/* A binary without a build id: its debug link's CRC is the check. */
	bin.build_id_len = 0;
	assert_int_equal(vm_debugfile_check(&bin, &dbg, why, sizeof(why)), 0);
}

static void test_debug_file_per_root(void **state)
{
	char dir[] = "/tmp/test_debugfile.XXXXXX", bin[64], root[4][80];
	char hex[2 * VM_BUILD_ID_MAX + 1], debug[200], self[4096] = "";
	const struct vm_symfile *own, *a, *b, *a2, *c, *again;
	struct vm_symcache_config cfg = { .debug_dir = "/dbg" };
	struct vm_binaries_skip skip[4];
	struct vm_binaries_stats st;
	struct vm_binaries *home;
	struct vm_symcache *sc;
	size_t n;

	(void)state;
	assert_int_equal(vmtest_only_in_debug_file(1), 10);
	assert_non_null(mkdtemp(dir));
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	/* Ours: in system()'s shell, /proc/self/exe is the shell's. */
	assert_true(readlink("/proc/self/exe", self, sizeof(self) - 1) > 0);
	run("objcopy --strip-all %s %s", self, bin);
	home = vm_binaries_new(NULL);
	assert_non_null(home);
	sc = vm_symcache_new(home, &cfg);
	assert_non_null(sc);

	vm_symcache_lock(sc);
	assert_int_equal(vm_symcache_get(sc, bin, bin, "", 0, &own, NULL), 0);
	assert_null(own->debug_path);
	assert_false(has_symbol(own, "vmtest_only_in_debug_file"));
	assert_true(own->info.build_id_len >= 2);
	for (size_t i = 0; i < own->info.build_id_len; i++)
		sprintf(hex + 2 * i, "%02x", own->info.build_id[i]);
	snprintf(debug, sizeof(debug), "dbg/.build-id/%.2s/%s.debug", hex,
		 hex + 2);
	for (size_t i = 0; i < 4; i++) {
		snprintf(root[i], sizeof(root[i]), "%s/root%zu", dir, i);
		run("mkdir -p $(dirname %s/%s)", root[i], debug);
	}
	/* 0: the real file; 1: EVIL_…; 2: 0's file again; 3: no build id. */
	run("objcopy --only-keep-debug %s %s/%s", self, root[0], debug);
	run("objcopy --prefix-symbols=EVIL_ %s/%s %s/%s", root[0], debug,
	    root[1], debug);
	run("ln %s/%s %s/%s", root[0], debug, root[2], debug);
	run("objcopy --remove-section .note.gnu.build-id %s/%s %s/%s", root[0],
	    debug, root[3], debug);

	assert_int_equal(vm_symcache_get(sc, bin, bin, root[0], 0, &a, NULL),
			 0);
	assert_ptr_not_equal(a, own);
	assert_true(has_symbol(a, "vmtest_only_in_debug_file"));
	assert_int_equal(vm_symcache_get(sc, bin, bin, root[1], 0, &b, NULL),
			 0);
	assert_ptr_not_equal(b, a);
	assert_true(has_symbol(b, "EVIL_vmtest_only_in_debug_file"));
	assert_false(has_symbol(b, "vmtest_only_in_debug_file"));
	/* The same file through another root: the same entry. */
	assert_int_equal(vm_symcache_get(sc, bin, bin, root[2], 0, &a2, NULL),
			 0);
	assert_ptr_equal(a2, a);
	/* Each root keeps its own, the agent's too. */
	assert_int_equal(
		vm_symcache_get(sc, bin, bin, root[0], 0, &again, NULL), 0);
	assert_ptr_equal(again, a);
	assert_int_equal(vm_symcache_get(sc, bin, bin, "", 0, &again, NULL), 0);
	assert_ptr_equal(again, own);
	assert_false(has_symbol(own, "EVIL_vmtest_only_in_debug_file"));
	vm_symcache_unlock(sc);
	/*
	 * No build id: refused, the binary's own symbols, and said once (a
	 * second run does not read it again).
	 */
	for (int run = 0; run < 2; run++) {
		vm_symcache_lock(sc);
		assert_int_equal(
			vm_symcache_get(sc, bin, bin, root[3], 0, &c, NULL), 0);
		assert_ptr_equal(c, own);
		vm_symcache_unlock(sc);
	}
	vm_binaries_stats(home, &st);
	assert_int_equal(st.facet[VM_BINARY_SYMBOLS].skipped, 1);
	vm_binaries_skipped(home, VM_BINARY_SYMBOLS, skip, 4, &n);
	assert_int_equal(n, 1);
	assert_non_null(strstr(skip[0].file, "root3/dbg/.build-id/"));
	assert_non_null(strstr(skip[0].reason, "it has no build id"));

	vm_symcache_free(sc);
	vm_binaries_free(home);
	run("rm -rf '%s'", dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_places_and_check),
		cmocka_unit_test(test_debug_file_per_root),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
