// SPDX-License-Identifier: Apache-2.0
/*
 * fdio.c - whole writes to a file descriptor (see fdio.h).
 */
#include "common/fdio.h"

#include <errno.h>
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
