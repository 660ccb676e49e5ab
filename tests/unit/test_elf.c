// SPDX-License-Identifier: Apache-2.0
/*
 * test_elf.c - unit tests of agent/symbolize/elf.c on its own: a file that
 * only looks like ELF is refused with its name, this very test program is
 * read with its symbols sorted and its build id, and xz data that is not
 * xz is refused; the function starts of .eh_frame_hdr (ehframe.c): those
 * of this program are its functions' symbol addresses, and a table made
 * by hand is read with its encodings, unsorted entries and a count larger
 * than its bytes.  Hostile tables (tests/lib/hostile-elf.py): a million
 * symbols named by one long string take their entries, not a copy of the
 * name each, in .symtab and in .gnu_debugdata; a table over the bound is
 * refused with EFBIG while it is read, and a merge over it changes
 * nothing.  An arm64 program ($BUILD/programs/arm64-frames, read on any
 * host): its mapping symbols ($x, $d) name nothing, its functions and
 * its PLT stubs (NAME@plt, 16 bytes after .plt's 32-byte header) are
 * named; a PLT of another layout gets no names.  The symbolizer's use of
 * it is in test_symbolize.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/unwind/ehframe.h"
#include "agent/symbolize/elf.h"
#include "agent/symbolize/elf_plt.h"
#include "hostile_elf.h"

/* A static function the compiler gives an FDE, as every function. */
__attribute__((noinline)) static int vmtest_static_leaf(int x)
{
	return x * 7 + 3;
}

static void test_function_starts_of_self(void **state)
{
	struct vm_elf_info info = { 0 };
	size_t sized = 0, found = 0;
	uint64_t start;
	int fd;

	(void)state;
	assert_int_equal(vmtest_static_leaf(1), 10);
	fd = open("/proc/self/exe", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(vm_elf_read_fd(fd, &info, "self", NULL), 0);
	close(fd);
	assert_true(info.n_fn_starts > 10);
	/* Inside each function, the start found is the symbol's address. */
	for (size_t i = 0; i < info.n_syms; i++) {
		const struct vm_elf_symbol *s = &info.syms[i];

		/* PLT stubs share one FDE, the whole .plt's. */
		if (s->size < 2 || strstr(s->name, "@plt"))
			continue;
		sized++;
		if (vm_elf_function_start(&info, s->addr + s->size / 2,
					  &start) &&
		    start == s->addr)
			found++;
		if (!strcmp(s->name, "vmtest_static_leaf")) {
			assert_true(vm_elf_function_start(&info, s->addr + 1,
							  &start));
			assert_int_equal(start, s->addr);
		}
	}
	/* A few (_start) have no FDE of their own. */
	assert_true(found * 10 >= sized * 9);
	assert_false(vm_elf_function_start(&info, 0, &start));
	vm_elf_info_free(&info);
}

static void test_arm64_program(void **state)
{
	const char *build = getenv("BUILD");
	struct vm_elf_info info = { 0 };
	const struct vm_elf_symbol *s;
	uint64_t printf_at = 0, caller_at = 0, first;
	size_t stubs = 0;
	char path[4096];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/programs/arm64-frames",
		 build ? build : "build");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		skip();
		return;
	}
	assert_int_equal(vm_elf_read_fd(fd, &info, path, NULL), 0);
	close(fd);
	for (size_t i = 0; i < info.n_syms; i++) {
		s = &info.syms[i];
		assert_int_not_equal(s->name[0], '$');
		if (strstr(s->name, "@plt")) {
			stubs++;
			assert_int_equal(s->size, 16);
		}
		if (!strcmp(s->name, "printf@plt"))
			printf_at = s->addr;
		if (!strcmp(s->name, "frames_caller"))
			caller_at = s->addr;
	}
	assert_true(stubs >= 2);
	assert_int_not_equal(printf_at, 0);
	/* Inside the stub, its name; inside the function, its own. */
	s = vm_elf_lookup(&info, printf_at + 12);
	assert_non_null(s);
	assert_string_equal(s->name, "printf@plt");
	s = vm_elf_lookup(&info, caller_at + 8);
	assert_non_null(s);
	assert_string_equal(s->name, "frames_caller");
	vm_elf_info_free(&info);

	/* The layouts: arm64's, x86-64's with and without .plt.sec. */
	assert_true(vm_elf_plt_layout(EM_AARCH64, 0x5d0, 32 + 5 * 16, 0, 0, 5,
				      &first));
	assert_int_equal(first, 0x5d0 + 32);
	assert_true(vm_elf_plt_layout(EM_X86_64, 0x1000, 16 + 3 * 16, 0, 0, 3,
				      &first));
	assert_int_equal(first, 0x1010);
	assert_true(vm_elf_plt_layout(EM_X86_64, 0x1000, 16 + 3 * 16, 0x2000,
				      3 * 16, 3, &first));
	assert_int_equal(first, 0x2000);
	/* arm64's BTI stubs (24 bytes), or a count that does not fit: none. */
	assert_false(vm_elf_plt_layout(EM_AARCH64, 0x5d0, 32 + 5 * 24, 0, 0, 5,
				       &first));
	assert_false(vm_elf_plt_layout(EM_AARCH64, 0x5d0, 32 + 5 * 16, 0, 0, 4,
				       &first));
	assert_false(vm_elf_plt_layout(EM_RISCV, 0x5d0, 32 + 5 * 16, 0, 0, 5,
				       &first));
}

static void test_ehframe_table(void **state)
{
	/* version 1, eh_frame_ptr pcrel|sdata4, count udata4, datarel|sdata4 */
	uint8_t t[] = {
		1,    0x1b, 0x03, 0x3b, /* */
		0x00, 0x01, 0x00, 0x00, /* eh_frame at hdr + 4 + 0x100 */
		5,    0,    0,	  0, /* 5 entries claimed, 4 present */
		0x40, 0,    0,	  0,
		0,    0,    0,	  0, /* hdr + 0x40 */
		0x10, 0,    0,	  0,
		0,    0,    0,	  0, /* hdr + 0x10: out of order */
		0x40, 0,    0,	  0,
		0,    0,    0,	  0, /* again */
		0xf0, 0xff, 0xff, 0xff,
		0,    0,    0,	  0, /* hdr - 0x10 */
	};
	struct vm_ehframe_hdr h = {
		.data = t, .len = sizeof(t), .vaddr = 0x2000, .ptr_size = 8
	};
	uint64_t *starts, start;
	size_t n;

	(void)state;
	assert_int_equal(vm_ehframe_hdr_starts(&h, &starts, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(starts[0], 0x1ff0);
	assert_int_equal(starts[1], 0x2010);
	assert_int_equal(starts[2], 0x2040);
	assert_true(vm_ehframe_lookup(starts, n, 0x203f, &start));
	assert_int_equal(start, 0x2010);
	assert_true(vm_ehframe_lookup(starts, n, 0x9000, &start));
	assert_int_equal(start, 0x2040);
	assert_false(vm_ehframe_lookup(starts, n, 0x1fef, &start));
	free(starts);

	t[0] = 2; /* an unknown version */
	assert_int_equal(vm_ehframe_hdr_starts(&h, &starts, &n), -EINVAL);
	t[0] = 1;
	t[3] = 0xff; /* no table */
	assert_int_equal(vm_ehframe_hdr_starts(&h, &starts, &n), -ENOENT);
	t[3] = 0x31; /* uleb128 entries: no binary search */
	assert_int_equal(vm_ehframe_hdr_starts(&h, &starts, &n), -EINVAL);
	h.len = 6; /* cut inside eh_frame_ptr */
	t[3] = 0x3b;
	assert_int_equal(vm_ehframe_hdr_starts(&h, &starts, &n), -EINVAL);
	assert_null(starts);
}

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

static void read_path(const char *path, struct vm_elf_info *info, int want,
		      struct vm_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(vm_elf_read_fd(fd, info, path, err), want);
	close(fd);
}

static void test_hostile_tables(void **state)
{
	char dir[] = "/tmp/test_elf.XXXXXX", *shared, *mini, *distinct;
	struct vm_elf_info info = { 0 }, small = { 0 };
	struct vm_error err = { 0 };
	size_t held;

	(void)state;
	assert_non_null(mkdtemp(dir));
	/* 1,000,000 symbols x 4 KiB names: 4 GB copied one by one. */
	shared = hostile_elf(dir, "shared",
			     "--symbols 1000000 --name-bytes 4096");
	read_path(shared, &info, 0, NULL);
	assert_int_equal(info.n_syms, 1000001);
	assert_int_equal(info.names.count, 2); /* "spin" and the long one */
	assert_ptr_equal(info.syms[1].name, info.syms[999999].name);
	held = vm_elf_info_bytes(&info);
	print_message("1,000,000 symbols sharing a 4 KiB name: %zu MiB\n",
		      held >> 20);
	assert_true(held < (48u << 20));
	vm_elf_info_free(&info);

	/* The same in .gnu_debugdata, xz-compressed into a few hundred KB. */
	mini = hostile_elf(dir, "mini",
			   "--symbols 1000000 --name-bytes 4096 --debugdata");
	read_path(mini, &info, 0, NULL);
	assert_true(info.has_debugdata);
	assert_int_equal(info.n_syms, 1000001);
	assert_true(vm_elf_info_bytes(&info) < (48u << 20));

	/* Over a bound of 8 MiB: refused as it is read, what it says. */
	small.max_bytes = 8u << 20;
	read_path(shared, &small, -EFBIG, &err);
	assert_non_null(strstr(err.msg, "take more than 8 MiB"));
	assert_true(vm_elf_info_bytes(&small) <= (8u << 20));
	vm_elf_info_free(&small);
	small.max_bytes = 8u << 20;
	read_path(mini, &small, -EFBIG, NULL);
	vm_elf_info_free(&small);

	/* Distinct names count: 200,000 of 100 bytes pass 16 MiB. */
	distinct = hostile_elf(dir, "distinct",
			       "--symbols 200000 --name-bytes 100 --distinct");
	small.max_bytes = 16u << 20;
	read_path(distinct, &small, -EFBIG, NULL);
	vm_elf_info_free(&small);

	/* A merge over the bound leaves the symbols as they were. */
	small.max_bytes = 24u << 20;
	read_path("/proc/self/exe", &small, 0, NULL);
	held = small.n_syms;
	assert_int_equal(vm_elf_merge_symbols(&small, &info, true), -EFBIG);
	assert_int_equal(small.n_syms, held);
	for (size_t i = 1; i < small.n_syms; i++)
		assert_true(small.syms[i - 1].addr < small.syms[i].addr);
	vm_elf_info_free(&small);
	vm_elf_info_free(&info);

	hostile_elf_done(dir);
	free(shared);
	free(mini);
	free(distinct);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elf_errors),
		cmocka_unit_test(test_function_starts_of_self),
		cmocka_unit_test(test_ehframe_table),
		cmocka_unit_test(test_arm64_program),
		cmocka_unit_test(test_hostile_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
