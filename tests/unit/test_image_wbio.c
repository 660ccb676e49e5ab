// SPDX-License-Identifier: Apache-2.0
/*
 * test_image_wbio.c - unit tests of imagebuilder/wbio.c: small writes are
 * kept and read back before they reach the file, large writes replace
 * kept copies, and after close the file holds exactly what was written
 * last, block for block, whatever the order of the writes.
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

#include "imagebuilder/wbio.h"
#include "tests/unit/assert_file.h"

#define BS 4096
#define BLOCKS 3000 /* spans three index chunks */

static void fill(char *buf, size_t blocks, unsigned tag)
{
	for (size_t i = 0; i < blocks * BS; i++)
		buf[i] = (char)(tag + i / BS);
}

static io_channel open_channel(char *path)
{
	io_channel ch = NULL;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)BLOCKS * BS), 0);
	close(fd);
	assert_int_equal(vm_wbio_manager->open(path, IO_FLAG_RW, &ch), 0);
	assert_int_equal(io_channel_set_blksize(ch, BS), 0);
	return ch;
}

static void test_kept_then_written(void **state)
{
	char path[] = "/tmp/test_image_wbio.XXXXXX";
	io_channel ch = open_channel(path);
	char *want = calloc(BLOCKS, BS), *got = malloc((size_t)BLOCKS * BS);
	char blk[BS], big[64 * BS];

	(void)state;
	/* Small writes in reverse order, across chunk boundaries. */
	for (int b = BLOCKS - 1; b >= 0; b -= 7) {
		fill(blk, 1, (unsigned)b);
		assert_int_equal(io_channel_write_blk64(ch, b, 1, blk), 0);
		memcpy(want + (size_t)b * BS, blk, BS);
	}
	/* Read back through the channel: the kept copies, and zeros. */
	assert_int_equal(io_channel_read_blk64(ch, 0, 100, got), 0);
	assert_memory_equal(got, want, 100 * BS);
	/* A large write replaces kept blocks inside it. */
	fill(big, 64, 200);
	assert_int_equal(io_channel_write_blk64(ch, 1000, 64, big), 0);
	memcpy(want + 1000 * BS, big, sizeof(big));
	/* A small one over it is kept again, and wins. */
	fill(blk, 1, 77);
	assert_int_equal(io_channel_write_blk64(ch, 1010, 1, blk), 0);
	memcpy(want + 1010 * BS, blk, BS);
	assert_int_equal(io_channel_read_blk64(ch, 990, 40, got), 0);
	assert_memory_equal(got, want + 990 * BS, 40 * BS);
	assert_int_equal(io_channel_close(ch), 0);
	assert_file_holds(path, want, (size_t)BLOCKS * BS);
	unlink(path);
	free(want);
	free(got);
}

static void test_flush_writes_through(void **state)
{
	char path[] = "/tmp/test_image_wbio.XXXXXX";
	io_channel ch = open_channel(path);
	char blk[BS], got[BS];
	int fd;

	(void)state;
	fill(blk, 1, 9);
	assert_int_equal(io_channel_write_blk64(ch, 5, 1, blk), 0);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	/* Kept, not yet in the file ... */
	assert_int_equal(pread(fd, got, BS, 5 * BS), BS);
	assert_memory_not_equal(got, blk, BS);
	/* ... until flushed. */
	assert_int_equal(io_channel_flush(ch), 0);
	assert_int_equal(pread(fd, got, BS, 5 * BS), BS);
	assert_memory_equal(got, blk, BS);
	close(fd);
	assert_int_equal(io_channel_close(ch), 0);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_then_written),
		cmocka_unit_test(test_flush_writes_through),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
