/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dl.h - libraries opened with dlopen() when first needed instead of
 * linked (dl.c).  Every linked library is mapped and relocated when the
 * program starts, whatever the command: libmicrohttpd (the REST service)
 * and libcrypto (SHA-256 of the tools disk's files and of tokens) would
 * slow the start of every one-shot `vmtools-agent profile`, which uses
 * neither.  A user lists the functions it calls once, in a struct vm_dl,
 * and calls them through the pointers vm_dl_load() fills in, the way
 * systemd opens its optional libraries.
 */
#ifndef VMTOOLS_COMMON_DL_H
#define VMTOOLS_COMMON_DL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

struct vm_dl_func {
	const char *name;
	void **fn; /* where its address goes */
};

struct vm_dl {
	const char *soname; /* the version the program was built against */
	const struct vm_dl_func *funcs;
	size_t n_funcs;
	/* Filled by vm_dl_load(). */
	atomic_int state; /* 0 not tried, 1 loaded, -1 failed */
	char failure[256];
};

/* A pointer to fill in, as vm_dl_func.fn wants it. */
#define VM_DL_FUNC(name, ptr)          \
	{                              \
#name, (void **)&(ptr) \
	}

/*
 * Open lib->soname and resolve every function, once for the process
 * (later calls give the first answer, quickly); 0, or -ENOENT with what to
 * install in err.  Thread-safe.  The library stays loaded.
 */
int vm_dl_load(struct vm_dl *lib, struct vm_error *err);

#endif
