// SPDX-License-Identifier: Apache-2.0
/*
 * fdio.c - whole reads and writes on a file descriptor, and of a file in
 * a directory the agent owns (see fdio.h).
 */
#include "common/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int vm_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

long long vm_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (long long)got;
}

int vm_keep_regular(int fd)
{
	struct stat st;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int vm_open_regular(const char *path)
{
	int fd = open(path, VM_OPEN_REGULAR_FLAGS);

	return vm_keep_regular(fd < 0 ? -errno : fd);
}

int vm_read_file_at(int dir_fd, const char *name, size_t max, void **data,
		    size_t *len)
{
	struct stat st;
	long long got;
	char *buf;
	int fd;

	fd = openat(dir_fd, name, VM_OPEN_REGULAR_FLAGS | O_NOFOLLOW);
	fd = vm_keep_regular(fd < 0 ? -errno : fd);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size > max) {
		close(fd);
		return -EFBIG;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	got = vm_read_all(fd, buf, (size_t)st.st_size);
	close(fd);
	if (got < 0) {
		free(buf);
		return (int)got;
	}
	buf[got] = '\0';
	*data = buf;
	*len = (size_t)got;
	return 0;
}

int vm_write_file_at(int dir_fd, const char *name, const char *tmp,
		     const void *data, size_t len, uint64_t *disk_bytes)
{
	const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	struct stat st;
	int fd, r;

	fd = openat(dir_fd, tmp, flags, 0600);
	if (fd < 0 && errno == EEXIST) {
		/* Whatever is there is not ours to write through. */
		unlinkat(dir_fd, tmp, 0);
		fd = openat(dir_fd, tmp, flags, 0600);
	}
	if (fd < 0)
		return -errno;
	r = vm_write_all(fd, data, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && disk_bytes && fstat(fd, &st) == 0)
		*disk_bytes = (uint64_t)st.st_blocks * 512;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dir_fd, tmp, dir_fd, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dir_fd, tmp, 0);
	return r;
}
