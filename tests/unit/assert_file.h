/* SPDX-License-Identifier: Apache-2.0 */
/*
 * assert_file.h - a check the image writer's unit tests share: a file
 * holds exactly the bytes the test meant it to, no more and no fewer.
 * Included after <cmocka.h>; each test_*.c is its own binary, so the
 * helper is static inline rather than a separate object.
 */
#ifndef VMTOOLS_TESTS_ASSERT_FILE_H
#define VMTOOLS_TESTS_ASSERT_FILE_H

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file at path is len bytes long and holds want. */
static inline void assert_file_holds(const char *path, const void *want,
				     size_t len)
{
	char *got = malloc(len);
	struct stat st;
	int fd = open(path, O_RDONLY);

	assert_non_null(got);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, (off_t)len);
	assert_int_equal(pread(fd, got, len, 0), (ssize_t)len);
	assert_memory_equal(got, want, len);
	close(fd);
	free(got);
}

#endif
