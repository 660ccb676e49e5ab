// SPDX-License-Identifier: Apache-2.0
/*
 * test_unwind_cache.c - unit tests of agent/unwind/unwind_cache.c on
 * the test's own executable and libc: one build however often a binary is
 * asked for, a copy of it under another name (same build id) sharing that
 * table, a file without call frame information answered NULL and not
 * read again, the bound evicting tables no one holds and skipping, with a
 * sentence naming the file, one that does not fit, the number of
 * binaries remembered bounded (the least recently used forgotten), and
 * clear() keeping
 * what is held.
 *
 * A file that is not ELF is read once; the binaries remembered are bounded
 * at 4,096.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/unwind/unwind_cache.h"

static char dir[] = "/tmp/test_unwind_cache.XXXXXX";

static const struct vm_unwind_table *ask(const char *path)
{
	const struct vm_unwind_table *t;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	t = vm_unwind_cache_get(fd, path);
	close(fd);
	return t;
}

static void copy(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

static void one_build_per_binary(void **state)
{
	struct vm_unwind_cache_stats a, b;
	const struct vm_unwind_table *t1, *t2, *t3;
	char path[128];

	(void)state;
	vm_unwind_cache_stats(&a);
	t1 = ask("/proc/self/exe");
	assert_non_null(t1);
	assert_true(t1->n > 0);
	t2 = ask("/proc/self/exe");
	assert_ptr_equal(t1, t2);
	/* A copy under another name: its build id is the same. */
	snprintf(path, sizeof(path), "%s/copy", dir);
	copy("/proc/self/exe", path);
	t3 = ask(path);
	assert_ptr_equal(t1, t3);
	vm_unwind_cache_stats(&b);
	assert_int_equal(b.builds, a.builds + 1);
	assert_int_equal(b.hits, a.hits + 2);
	assert_true(b.bytes >= vm_unwind_table_bytes(t1));
	vm_unwind_cache_put(t1);
	vm_unwind_cache_put(t2);
	vm_unwind_cache_put(t3);
	unlink(path);
}

static void not_elf_is_null_once(void **state)
{
	struct vm_unwind_cache_stats a, b;
	char path[128];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/text", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("not an ELF file\n", f);
	fclose(f);
	vm_unwind_cache_stats(&a);
	assert_null(ask(path));
	assert_null(ask(path));
	vm_unwind_cache_stats(&b);
	assert_int_equal(b.tables, a.tables);
	/* Read once: the second ask is answered from the cache. */
	assert_int_equal(b.builds, a.builds + 1);
	assert_int_equal(b.hits, a.hits + 1);
	unlink(path);
}

/* Binaries without a table are remembered too, but not without bound. */
static void entries_bounded(void **state)
{
	struct vm_unwind_cache_stats a, b;
	char path[128];

	(void)state;
	vm_unwind_cache_clear();
	for (int i = 0; i <= VM_UNWIND_CACHE_MAX_ENTRIES; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/t%d", dir, i);
		f = fopen(path, "w");
		assert_non_null(f);
		fprintf(f, "not ELF %d\n", i);
		fclose(f);
		assert_null(ask(path));
	}
	/* The first was the least recently used: gone, read again. */
	vm_unwind_cache_stats(&a);
	snprintf(path, sizeof(path), "%s/t0", dir);
	assert_null(ask(path));
	vm_unwind_cache_stats(&b);
	assert_int_equal(b.builds, a.builds + 1);
	assert_int_equal(b.hits, a.hits);
	for (int i = 0; i <= VM_UNWIND_CACHE_MAX_ENTRIES; i++) {
		snprintf(path, sizeof(path), "%s/t%d", dir, i);
		unlink(path);
	}
	vm_unwind_cache_clear();
}

static void bound_evicts_then_skips(void **state)
{
	const struct vm_unwind_table *self, *libc;
	struct vm_unwind_cache_stats st;
	size_t self_bytes;

	(void)state;
	vm_unwind_cache_clear();
	self = ask("/proc/self/exe");
	assert_non_null(self);
	self_bytes = vm_unwind_table_bytes(self);
	vm_unwind_cache_put(self);
	/* Room for this executable's table only: libc's evicts it. */
	vm_unwind_cache_set_limit(self_bytes + 1);
	libc = ask("/lib/x86_64-linux-gnu/libc.so.6");
	vm_unwind_cache_stats(&st);
	if (libc) {
		/* libc's table fit where the unheld one was. */
		assert_true(st.bytes <= self_bytes + 1);
		vm_unwind_cache_put(libc);
	} else {
		assert_int_equal(st.tables, 0);
		assert_true(st.skipped > 0);
		assert_non_null(strstr(st.last_skipped, "libc.so.6"));
	}
	/* Held tables are never evicted: the next one is skipped. */
	vm_unwind_cache_set_limit(0);
	vm_unwind_cache_clear();
	self = ask("/proc/self/exe");
	assert_null(self);
	vm_unwind_cache_stats(&st);
	assert_true(st.skipped > 0);
	assert_non_null(strstr(st.last_skipped, "would pass the bound"));
	vm_unwind_cache_set_limit(VM_UNWIND_CACHE_MAX_BYTES);
}

static void clear_keeps_held(void **state)
{
	const struct vm_unwind_table *t;
	struct vm_unwind_cache_stats st;

	(void)state;
	vm_unwind_cache_clear();
	t = ask("/proc/self/exe");
	assert_non_null(t);
	vm_unwind_cache_clear();
	vm_unwind_cache_stats(&st);
	assert_int_equal(st.tables, 1);
	assert_true(t->n > 0); /* still there */
	vm_unwind_cache_put(t);
	vm_unwind_cache_clear();
	vm_unwind_cache_stats(&st);
	assert_int_equal(st.tables, 0);
	assert_int_equal(st.bytes, 0);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	vm_unwind_cache_clear();
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_build_per_binary),
		cmocka_unit_test(not_elf_is_null_once),
		cmocka_unit_test(entries_bounded),
		cmocka_unit_test(bound_evicts_then_skips),
		cmocka_unit_test(clear_keeps_held),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
