// SPDX-License-Identifier: Apache-2.0
/*
 * test_elf.c - unit tests of agent/symbolize/elf.c on its own: a file that
 * only looks like ELF is refused with its name, this very test program is
 * read with its symbols sorted and its build id, and xz data that is not
 * xz is refused.  The symbolizer's use of it is in test_symbolize.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/symbolize/elf.h"

static void test_elf_errors(void **state)
{
	struct vm_elf_info info = { 0 };
	struct vm_error err = { 0 };
	static const char junk[] = "\177ELF this is not really an ELF file";
	void *xz = NULL;
	size_t xz_len = 0;
	int fd;

	(void)state;
	assert_int_equal(vm_elf_read_mem(junk, sizeof(junk), &info, "junk",
					 &err),
			 -ENOEXEC);
	assert_non_null(strstr(err.msg, "junk"));
	vm_elf_info_free(&info);

	fd = open("/proc/self/exe", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(vm_elf_read_fd(fd, &info, "self", NULL), 0);
	close(fd);
	assert_true(info.has_symtab);
	assert_int_equal(info.build_id_len, 20);
	assert_true(info.n_segs > 0);
	for (size_t i = 1; i < info.n_syms; i++)
		assert_true(info.syms[i - 1].addr < info.syms[i].addr);
	vm_elf_info_free(&info);

	assert_int_equal(vm_xz_decompress("nope", 4, 1024, &xz, &xz_len, &err),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elf_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
