/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elf_objects.h - where named global variables of an executable are when
 * it runs (elf_objects.c): their values in .dynsym, and the executable's
 * loadable segments to turn a mapping of the file into a load bias.  The
 * PostgreSQL labels need two pointers postgres exports this way
 * (agent/profile/bpf/bpf_pg.c).
 *
 * Input is untrusted (the executable of any process): every size and
 * index is checked through libelf (tests/fuzz/fuzz_elf.c).
 */
#ifndef VMTOOLS_AGENT_ELF_OBJECTS_H
#define VMTOOLS_AGENT_ELF_OBJECTS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbolize/elf.h"

#define VM_ELF_OBJECTS_MAX_SEGS 16

struct vm_elf_objects {
	struct vm_elf_segment segs[VM_ELF_OBJECTS_MAX_SEGS]; /* PT_LOAD */
	size_t n_segs;
};

/*
 * The link-time values of the n .dynsym objects names[] into values[]
 * (0 for one that is not there) and the file's PT_LOADs into out.  0, or
 * -EINVAL for a file that is not a readable ELF file.
 */
int vm_elf_objects_fd(int fd, const char *const *names, size_t n,
		      uint64_t *values, struct vm_elf_objects *out);
int vm_elf_objects_mem(const void *buf, size_t len, const char *const *names,
		       size_t n, uint64_t *values, struct vm_elf_objects *out);

/*
 * The run-time address of link-time address vaddr, for a file mapped at
 * start from file offset pgoff; false when no segment holds pgoff.
 */
bool vm_elf_objects_runtime(const struct vm_elf_objects *o, uint64_t start,
			    uint64_t pgoff, uint64_t vaddr, uint64_t *addr);

#endif
