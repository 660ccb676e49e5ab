// SPDX-License-Identifier: Apache-2.0
/*
 * curl.c - opens libcurl when pushing starts (see curl.h), by the soname
 * of the development library the agent was built against (VM_CURL_SONAME,
 * from the Makefile), so the functions match the header.
 */
#include "agent/continuous/curl.h"

#include "common/cleanup.h"
#include "common/dl.h"

#ifndef VM_CURL_SONAME
#error "VM_CURL_SONAME: the Makefile gives libcurl's soname"
#endif

#define VM_CURL_DEFINE(name) typeof(name) *sym_##name;
VM_CURL_FUNCTIONS(VM_CURL_DEFINE)
#undef VM_CURL_DEFINE

#define VM_CURL_ENTRY(name) VM_DL_FUNC(name, sym_##name),
static const struct vm_dl_func funcs[] = { VM_CURL_FUNCTIONS(VM_CURL_ENTRY) };
#undef VM_CURL_ENTRY

static struct vm_dl curl = {
	.soname = VM_CURL_SONAME,
	.funcs = funcs,
	.n_funcs = ARRAY_SIZE(funcs),
};

int vm_curl_load(struct vm_error *err)
{
	int r = vm_dl_load(&curl, err);

	/* Once, before any thread uses it; later calls do nothing. */
	if (r == 0)
		sym_curl_global_init(CURL_GLOBAL_DEFAULT);
	return r;
}
