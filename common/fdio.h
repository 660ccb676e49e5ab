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

#endif
