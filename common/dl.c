// SPDX-License-Identifier: Apache-2.0
/*
 * dl.c - opening a library and resolving its functions at run time (see
 * dl.h).  All or nothing: a library that lacks one of the functions is
 * treated as absent, so a caller never meets a NULL pointer.
 */
#include "common/dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int open_lib(struct vm_dl *lib)
{
	void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
	const char *e;

	if (!h) {
		e = dlerror();
		snprintf(lib->failure, sizeof(lib->failure),
			 "cannot load %s (%s): install it", lib->soname,
			 e ? e : "unknown error");
		return -1;
	}
	for (size_t i = 0; i < lib->n_funcs; i++) {
		*lib->funcs[i].fn = dlsym(h, lib->funcs[i].name);
		if (*lib->funcs[i].fn)
			continue;
		snprintf(
			lib->failure, sizeof(lib->failure),
			"%s has no function %s: install the version this program was built with",
			lib->soname, lib->funcs[i].name);
		for (size_t j = 0; j < i; j++)
			*lib->funcs[j].fn = NULL;
		dlclose(h);
		return -1;
	}
	return 1;
}

int vm_dl_load(struct vm_dl *lib, struct vm_error *err)
{
	int state = atomic_load_explicit(&lib->state, memory_order_acquire);

	if (state == 0) {
		pthread_mutex_lock(&lock);
		state = atomic_load_explicit(&lib->state, memory_order_relaxed);
		if (state == 0) {
			state = open_lib(lib);
			atomic_store_explicit(&lib->state, state,
					      memory_order_release);
		}
		pthread_mutex_unlock(&lock);
	}
	if (state < 0)
		return vm_error_set(err, ENOENT, "%s", lib->failure);
	return 0;
}
