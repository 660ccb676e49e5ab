/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfdeps.h - the shared-library closure of an executable, resolved the
 * way the dynamic loader would, read with libelf.
 */
#ifndef VMTOOLS_IMAGEBUILDER_ELFDEPS_H
#define VMTOOLS_IMAGEBUILDER_ELFDEPS_H

#include <stddef.h>

#include "common/error.h"

struct vm_elf_info {
	int elfclass; /* ELFCLASS32 / ELFCLASS64 */
	int machine; /* EM_* */
	char *interp; /* PT_INTERP, or NULL when static */
	char **needed; /* DT_NEEDED, in order */
	size_t n_needed, cap_needed;
	char *rpath, *runpath; /* raw strings, or NULL */
};

int vm_elf_read(const char *path, struct vm_elf_info *info,
		struct vm_error *err);
void vm_elf_info_clear(struct vm_elf_info *info);

struct vm_elf_lib {
	char *name; /* the DT_NEEDED name, as it goes in the bundle */
	char *path; /* resolved host path (symlinks followed) */
};

struct vm_elf_closure {
	char *interp; /* the loader's host path (resolved), or NULL */
	char *interp_name; /* its file name, e.g. ld-linux-x86-64.so.2 */
	struct vm_elf_lib *libs; /* breadth-first order, no duplicates */
	size_t n_libs, cap_libs;
};

/*
 * Resolve binary's DT_NEEDED closure: for each object, DT_RPATH (when it
 * has no DT_RUNPATH), DT_RUNPATH, then `dirs` (NULL: the multiarch defaults
 * for the binary's machine), with $ORIGIN expanded; a candidate of another
 * ELF class or machine is skipped, as ld.so does.  A name that cannot be
 * found is an error naming it and the object that needs it.  With sysroot
 * (a directory; NULL: the host), the loader and every library are looked
 * for beneath it, as the binary's own system would find them, never on
 * the host (a binary of another architecture).
 */
int vm_elf_closure(const char *binary, const char *const *dirs,
		   const char *sysroot, struct vm_elf_closure *out,
		   struct vm_error *err);
void vm_elf_closure_clear(struct vm_elf_closure *c);

/*
 * path (absolute) resolved beneath root (a real path) as if root were /,
 * as openat2's RESOLVE_IN_ROOT does, for where it is missing: a component
 * at a time, a symlink's target walked in its place (an absolute one from
 * root), ".." never above root, at most 40 symlinks.  The host path into
 * out (PATH_MAX bytes): 0 or -errno.
 */
int vm_elf_resolve_in_root(const char *root, const char *path, char *out);

/* Expand $ORIGIN / ${ORIGIN} in one search-path entry. */
int vm_elf_expand_origin(const char *entry, const char *origin, char *out,
			 size_t size);

#endif
