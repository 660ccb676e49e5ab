// SPDX-License-Identifier: Apache-2.0
/*
 * test_image_elfdeps.c - unit tests of imagebuilder/elfdeps.c: DT_NEEDED
 * closure of a real host binary, incompatible candidates skipped like
 * ld.so does, $ORIGIN expansion, clear errors.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "imagebuilder/elfdeps.h"

static int has_lib(const struct vm_elf_closure *c, const char *name)
{
	for (size_t i = 0; i < c->n_libs; i++)
		if (!strcmp(c->libs[i].name, name))
			return 1;
	return 0;
}

static void test_closure_of_env(void **state)
{
	struct vm_elf_closure c;
	struct vm_error err = { 0 };

	assert_int_equal(vm_elf_closure("/usr/bin/env", NULL, NULL, &c, &err),
			 0);
	assert_non_null(c.interp);
	assert_string_equal(c.interp_name, "ld-linux-x86-64.so.2");
	assert_true(has_lib(&c, "libc.so.6"));
	/* libc needs the loader, which is not listed twice. */
	assert_false(has_lib(&c, "ld-linux-x86-64.so.2"));
	for (size_t i = 0; i < c.n_libs; i++)
		assert_int_equal(c.libs[i].path[0], '/');
	vm_elf_closure_clear(&c);
}

static void test_incompatible_candidate_skipped(void **state)
{
	char dir[] = "/tmp/test_elfdeps.XXXXXX", fake[PATH_MAX];
	const char *dirs[4] = { dir, "/lib/x86_64-linux-gnu",
				"/usr/lib/x86_64-linux-gnu", NULL };
	struct vm_elf_closure c;
	struct vm_error err = { 0 };
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(fake, sizeof(fake), "%s/libc.so.6", dir);
	f = fopen(fake, "w");
	fputs("not an ELF file\n", f);
	fclose(f);
	assert_int_equal(vm_elf_closure("/usr/bin/env", dirs, NULL, &c, &err),
			 0);
	for (size_t i = 0; i < c.n_libs; i++)
		if (!strcmp(c.libs[i].name, "libc.so.6"))
			assert_null(strstr(c.libs[i].path, dir));
	vm_elf_closure_clear(&c);
	/* With only the fake one, the missing library is named. */
	dirs[1] = NULL;
	assert_int_equal(vm_elf_closure("/usr/bin/env", dirs, NULL, &c, &err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "needs libc.so.6"));
	unlink(fake);
	rmdir(dir);
}

static void test_not_elf(void **state)
{
	struct vm_elf_info info;
	struct vm_error err = { 0 };

	assert_int_equal(vm_elf_read("/etc/hostname", &info, &err), -ENOEXEC);
	assert_non_null(strstr(err.msg, "/etc/hostname is not an ELF file"));
	vm_error_clear(&err);
	assert_int_equal(vm_elf_read("/nonexistent", &info, &err), -ENOENT);
}

static void test_expand_origin(void **state)
{
	char out[64];

	assert_int_equal(vm_elf_expand_origin("$ORIGIN/../lib", "/opt/x/bin",
					      out, sizeof(out)),
			 0);
	assert_string_equal(out, "/opt/x/bin/../lib");
	assert_int_equal(vm_elf_expand_origin("${ORIGIN}:/l", "/o", out,
					      sizeof(out)),
			 0);
	assert_string_equal(out, "/o:/l");
	/* $ORIGINAL is not $ORIGIN. */
	assert_int_equal(
		vm_elf_expand_origin("$ORIGINAL", "/o", out, sizeof(out)), 0);
	assert_string_equal(out, "$ORIGINAL");
	assert_int_equal(vm_elf_expand_origin("$ORIGIN$ORIGIN$ORIGIN",
					      "/a-long-origin-directory-name",
					      out, sizeof(out)),
			 -ENAMETOOLONG);
}

/*
 * The walk for kernels without openat2 resolves as RESOLVE_IN_ROOT does:
 * relative and absolute symlinks (an absolute one from the root), ".."
 * that stops at the root, loops refused, missing names said.
 */
static void test_resolve_in_root(void **state)
{
	char root[] = "/tmp/test_elfdeps_root.XXXXXX", p[PATH_MAX + 64];
	char out[PATH_MAX], want[PATH_MAX + 64];
	FILE *f;

	assert_non_null(mkdtemp(root));
	snprintf(p, sizeof(p), "%s/usr", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/usr/lib", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/usr/lib/libx.so.1", root);
	assert_non_null(f = fopen(p, "w"));
	fclose(f);
	snprintf(want, sizeof(want), "%s/usr/lib/libx.so.1", root);
	snprintf(p, sizeof(p), "%s/lib", root); /* merged /usr */
	assert_int_equal(symlink("usr/lib", p), 0);
	snprintf(p, sizeof(p), "%s/usr/lib/abs.so", root);
	assert_int_equal(symlink("/lib/libx.so.1", p), 0);
	snprintf(p, sizeof(p), "%s/usr/lib/up.so", root);
	assert_int_equal(symlink("../../../../../usr/lib/libx.so.1", p), 0);
	snprintf(p, sizeof(p), "%s/usr/lib/a.so", root);
	assert_int_equal(symlink("b.so", p), 0);
	snprintf(p, sizeof(p), "%s/usr/lib/b.so", root);
	assert_int_equal(symlink("a.so", p), 0);

	assert_int_equal(vm_elf_resolve_in_root(root, "/lib/libx.so.1", out),
			 0);
	assert_string_equal(out, want);
	assert_int_equal(vm_elf_resolve_in_root(root, "/lib/abs.so", out), 0);
	assert_string_equal(out, want);
	assert_int_equal(vm_elf_resolve_in_root(root, "/usr/lib/up.so", out),
			 0);
	assert_string_equal(out, want);
	assert_int_equal(
		vm_elf_resolve_in_root(root, "/../../lib/./libx.so.1", out), 0);
	assert_string_equal(out, want);
	assert_int_equal(vm_elf_resolve_in_root(root, "/lib/a.so", out),
			 -ELOOP);
	assert_int_equal(vm_elf_resolve_in_root(root, "/lib/none.so", out),
			 -ENOENT);
	snprintf(p, sizeof(p), "rm -rf '%s'", root);
	assert_int_equal(system(p), 0);
}

/*
 * With a sysroot, a binary whose loader the sysroot lacks is refused,
 * though the host has it: nothing of the host's is taken.
 */
static void test_sysroot_never_the_host(void **state)
{
	char root[] = "/tmp/test_elfdeps_sys.XXXXXX", p[PATH_MAX + 64];
	struct vm_elf_closure c;
	struct vm_error err = { 0 };

	assert_non_null(mkdtemp(root));
	assert_int_equal(vm_elf_closure("/usr/bin/env", NULL, root, &c, &err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "which the sysroot"));
	assert_non_null(strstr(err.msg, root));
	snprintf(p, sizeof(p), "rm -rf '%s'", root);
	assert_int_equal(system(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_closure_of_env),
		cmocka_unit_test(test_incompatible_candidate_skipped),
		cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_expand_origin),
		cmocka_unit_test(test_resolve_in_root),
		cmocka_unit_test(test_sysroot_never_the_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
