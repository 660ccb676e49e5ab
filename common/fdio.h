/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fdio.h - whole reads and writes on a file descriptor (fdio.c): read()
 * and write() may move less than asked or be interrupted, and every reader
 * or writer of a file wants all of it or an error; and opening a file that
 * someone else named, which must never wait.
 */
#ifndef VMTOOLS_COMMON_FDIO_H
#define VMTOOLS_COMMON_FDIO_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>

/* All len bytes of buf to fd: 0, or a negative errno. */
int vm_write_all(int fd, const void *buf, size_t len);

/*
 * Up to len bytes from fd into buf, until the end of the file: the count
 * read (less than len only at the end), or a negative errno.
 */
long long vm_read_all(int fd, void *buf, size_t len);

/*
 * path opened for reading as a regular file, without ever waiting: the
 * open does not block (a FIFO named like a debug file has no writer, a
 * device may never answer) and anything but a regular file is closed
 * again.  The descriptor, or -EINVAL for what is not a regular file, or a
 * negative errno.
 */
int vm_open_regular(const char *path);

/* The flags every open of a file someone else named reads it with. */
#define VM_OPEN_REGULAR_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

/*
 * fd (opened with VM_OPEN_REGULAR_FLAGS) when it is a regular file, else
 * closed and -EINVAL; a negative fd is passed on.  vm_open_regular() and
 * beneath.h's vm_open_beneath_regular() end with it.
 */
int vm_keep_regular(int fd);

/*
 * name in the directory dir_fd read whole, when it is a regular file of at
 * most max bytes, never through a symbolic link and without waiting:
 * *data malloc'd with a NUL after its *len bytes.  0; -EINVAL when not a
 * regular file, -EFBIG when larger, -ENOMEM, or -errno.
 */
int vm_read_file_at(int dir_fd, const char *name, size_t max, void **data,
		    size_t *len);

/*
 * data written to name in dir_fd so that a reader sees all of it or none:
 * to tmp first (O_EXCL | O_NOFOLLOW: a file or link someone else put
 * there is removed, never written through), synced, then renamed over
 * name.  *disk_bytes (may be NULL) gets what the file takes on the disk.
 * 0, or -errno with tmp removed.
 */
int vm_write_file_at(int dir_fd, const char *name, const char *tmp,
		     const void *data, size_t len, uint64_t *disk_bytes);

#endif
