/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cleanup.h - scope-bound release of resources, in the manner of systemd.
 *
 * A variable declared `_cleanup_free_ char *p = NULL;` is freed when it goes
 * out of scope, so an early return cannot leak it.  Hand ownership on with
 * TAKE_PTR(p) / TAKE_FD(fd).
 */
#ifndef VMTOOLS_COMMON_CLEANUP_H
#define VMTOOLS_COMMON_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void vm_freep(void *p)
{
	free(*(void **)p);
}

static inline void vm_closep(int *fd)
{
	int saved = errno;

	if (*fd >= 0)
		close(*fd);
	errno = saved;
}

static inline void vm_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void vm_closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(vm_freep)
#define _cleanup_close_ _cleanup_(vm_closep)
#define _cleanup_fclose_ _cleanup_(vm_fclosep)
#define _cleanup_closedir_ _cleanup_(vm_closedirp)

#define TAKE_PTR(p)                         \
	({                                  \
		__typeof__(p) _taken = (p); \
		(p) = NULL;                 \
		_taken;                     \
	})

#define TAKE_FD(fd)                \
	({                         \
		int _taken = (fd); \
		(fd) = -1;         \
		_taken;            \
	})

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
