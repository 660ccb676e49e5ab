// SPDX-License-Identifier: Apache-2.0
/*
 * test_image_datawrite.c - unit tests of imagebuilder/datawrite.c: data
 * kept by the caller and data copied, at consecutive and scattered blocks,
 * and pieces larger than one write, all land where they belong; the
 * caller hears when kept data may be reused, and only then, with the mark
 * it had set before the data was given; a failed write is reported.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "imagebuilder/datawrite.h"
#include "tests/unit/assert_file.h"

#define BS 4096
#define BLOCKS 6000

static void fill(char *buf, size_t blocks, unsigned tag)
{
	for (size_t i = 0; i < blocks * BS; i++)
		buf[i] = (char)(tag * 7 + i / BS);
}

/* Called by dw's thread: the last mark heard, read after a sync. */
static void count_written(void *ctx, size_t mark)
{
	*(size_t *)ctx = mark;
}

static void test_lands_where_it_belongs(void **state)
{
	char path[] = "/tmp/test_image_datawrite.XXXXXX";
	char *want = calloc(BLOCKS, BS);
	char *kept = aligned_alloc(BS, 64 * BS), *scratch = malloc(64 * BS + 1);
	char *large = malloc((size_t)(VM_DW_BLOCKS + 100) * BS + 1);
	struct vm_datawrite dw;
	struct vm_error err = { 0 };
	int fd = mkstemp(path);
	size_t written = 0;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)BLOCKS * BS), 0);
	assert_int_equal(vm_dw_open(&dw, path, BS, &err), 0);
	dw.written = count_written;
	dw.ctx = &written;

	/* Kept, then copied (from a misaligned buffer), consecutively. */
	fill(kept, 64, 1);
	assert_int_equal(vm_dw_write(&dw, 10, 64, kept, 1, &err), 0);
	memcpy(want + 10 * BS, kept, 64 * BS);
	dw.mark = 1;
	fill(scratch + 1, 3, 2);
	assert_int_equal(vm_dw_write(&dw, 74, 3, scratch + 1, 0, &err), 0);
	memcpy(want + 74 * BS, scratch + 1, 3 * BS);
	memset(scratch, 0, 64 * BS + 1); /* copied: reuse is fine */
	dw.mark = 2;
	assert_int_equal(written, 0);
	/* Scattered: what was gathered is handed over first, marked 2. */
	fill(scratch, 2, 3);
	assert_int_equal(vm_dw_write(&dw, 500, 2, scratch, 0, &err), 0);
	memcpy(want + 500 * BS, scratch, 2 * BS);
	assert_int_equal(dw.handed_mark, 2);
	/* Larger than one write, not kept, misaligned. */
	fill(large + 1, VM_DW_BLOCKS + 100, 4);
	assert_int_equal(vm_dw_write(&dw, 1000, VM_DW_BLOCKS + 100, large + 1,
				     0, &err),
			 0);
	memcpy(want + 1000 * BS, large + 1, (size_t)(VM_DW_BLOCKS + 100) * BS);
	/* Handed over in the middle of it: marked as before it. */
	assert_int_equal(dw.handed_mark, 2);
	dw.mark = 3;
	assert_int_equal(vm_dw_sync(&dw, &err), 0);
	assert_int_equal(written, 3);
	vm_dw_close(&dw);

	close(fd);
	assert_file_holds(path, want, (size_t)BLOCKS * BS);
	unlink(path);
	free(want);
	free(kept);
	free(scratch);
	free(large);
}

/* Kept data from many places, more than one write's worth of pieces. */
static void test_many_pieces(void **state)
{
	char path[] = "/tmp/test_image_datawrite.XXXXXX";
	size_t n = VM_DW_IOV + 10, blocks = 2 * n;
	char *want = calloc(blocks, BS);
	char *kept = aligned_alloc(BS, blocks * BS);
	struct vm_datawrite dw;
	struct vm_error err = { 0 };
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)(blocks * BS)), 0);
	assert_int_equal(vm_dw_open(&dw, path, BS, &err), 0);
	fill(kept, blocks, 5);
	/* Every other block of memory, to consecutive image blocks. */
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(
			vm_dw_write(&dw, i, 1, kept + 2 * i * BS, 1, &err), 0);
		memcpy(want + i * BS, kept + 2 * i * BS, BS);
	}
	assert_int_equal(vm_dw_sync(&dw, &err), 0);
	vm_dw_close(&dw);
	close(fd);
	assert_file_holds(path, want, blocks * BS);
	unlink(path);
	free(want);
	free(kept);
}

/* A write the device refuses is reported, naming the image. */
static void test_failed_write_is_reported(void **state)
{
	char *kept = aligned_alloc(BS, 4 * BS);
	struct vm_datawrite dw;
	struct vm_error err = { 0 };

	(void)state;
	/* /dev/full: every write fails with ENOSPC. */
	assert_int_equal(vm_dw_open(&dw, "/dev/full", BS, &err), 0);
	dw.name = "the-image";
	memset(kept, 1, 4 * BS);
	assert_int_equal(vm_dw_write(&dw, 0, 4, kept, 1, &err), 0);
	assert_true(vm_dw_sync(&dw, &err) < 0);
	assert_non_null(strstr(err.msg, "the-image"));
	vm_dw_close(&dw);
	free(kept);
}

static void test_missing_directory_is_an_error(void **state)
{
	struct vm_datawrite dw;
	struct vm_error err = { 0 };

	(void)state;
	assert_true(vm_dw_open(&dw, "/nonexistent-dir/x.img", BS, &err) < 0);
	assert_non_null(strstr(err.msg, "/nonexistent-dir/x.img"));
	vm_dw_close(&dw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lands_where_it_belongs),
		cmocka_unit_test(test_many_pieces),
		cmocka_unit_test(test_failed_write_is_reported),
		cmocka_unit_test(test_missing_directory_is_an_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
