// SPDX-License-Identifier: Apache-2.0
/*
 * mhd.c - opens libmicrohttpd when the REST service starts (see mhd.h).
 *
 * The library is the one the agent was built against, by its soname
 * (VM_MHD_SONAME, taken from the development library by the Makefile), so
 * the functions match the header they were compiled with.
 */
#include "agent/serve/mhd.h"

#include "common/cleanup.h"
#include "common/dl.h"

#ifndef VM_MHD_SONAME
#error "VM_MHD_SONAME: the Makefile gives libmicrohttpd's soname"
#endif

#define VM_MHD_DEFINE(name) typeof(name) *sym_##name;
VM_MHD_FUNCTIONS(VM_MHD_DEFINE)
#undef VM_MHD_DEFINE

#define VM_MHD_ENTRY(name) VM_DL_FUNC(name, sym_##name),
static const struct vm_dl_func funcs[] = { VM_MHD_FUNCTIONS(VM_MHD_ENTRY) };
#undef VM_MHD_ENTRY

static struct vm_dl mhd = {
	.soname = VM_MHD_SONAME,
	.funcs = funcs,
	.n_funcs = ARRAY_SIZE(funcs),
};

int vm_mhd_load(struct vm_error *err)
{
	return vm_dl_load(&mhd, err);
}
