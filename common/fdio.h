/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fdio.h - whole writes to a file descriptor (fdio.c): write() may write
 * less than asked or be interrupted, and every writer of a file wants all
 * of it or an error.
 */
#ifndef VMTOOLS_COMMON_FDIO_H
#define VMTOOLS_COMMON_FDIO_H

#include <stddef.h>

/* All len bytes of buf to fd: 0, or a negative errno. */
int vm_write_all(int fd, const void *buf, size_t len);

#endif
