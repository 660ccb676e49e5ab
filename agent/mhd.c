// SPDX-License-Identifier: Apache-2.0
/*
 * mhd.c - opens libmicrohttpd when the REST service starts (see mhd.h).
 *
 * The library is the one the agent was built against, by its soname
 * (VM_MHD_SONAME, taken from the development library by the Makefile), so
 * the functions match the header they were compiled with.  The handle is
 * never closed: the service uses the library until the process exits.
 */
#include "agent/mhd.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#ifndef VM_MHD_SONAME
#error "VM_MHD_SONAME: the Makefile gives libmicrohttpd's soname"
#endif

#define VM_MHD_DEFINE(name) typeof(name) *sym_##name;
VM_MHD_FUNCTIONS(VM_MHD_DEFINE)
#undef VM_MHD_DEFINE

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[512]; /* why load() failed; empty: it did not */

static void load(void)
{
	void *h = dlopen(VM_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
	const char *e;

	if (!h) {
		e = dlerror();
		snprintf(
			failure, sizeof(failure),
			"cannot load %s (%s): install libmicrohttpd, the REST service needs it",
			VM_MHD_SONAME, e ? e : "unknown error");
		return;
	}
#define VM_MHD_RESOLVE(name)                                                    \
	sym_##name = (typeof(name) *)dlsym(h, #name);                           \
	if (!sym_##name) {                                                      \
		snprintf(                                                       \
			failure, sizeof(failure),                               \
			"%s has no function " #name                             \
			": install the libmicrohttpd the agent was built with", \
			VM_MHD_SONAME);                                         \
		return;                                                         \
	}
	VM_MHD_FUNCTIONS(VM_MHD_RESOLVE)
#undef VM_MHD_RESOLVE
}

int vm_mhd_load(struct vm_error *err)
{
	/* Once it returns, load() has run to its end, in whichever thread. */
	pthread_once(&once, load);
	if (failure[0])
		return vm_error_set(err, ENOENT, "%s", failure);
	return 0;
}
