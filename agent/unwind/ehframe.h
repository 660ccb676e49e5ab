/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ehframe.h - function start addresses from an ELF file's .eh_frame_hdr
 * (ehframe.c), for frames no symbol names.
 *
 * Every function a compiler emits has an FDE in .eh_frame, static ones
 * included, and the linker sorts their start addresses into the binary
 * search table of .eh_frame_hdr (PT_GNU_EH_FRAME), which stripping keeps:
 * it is what unwinders and C++ exceptions use.  The table is read from the
 * segment's bytes (libelf hands them over) and is untrusted: every read is
 * bounded by them (tests/fuzz/fuzz_ehframe.c).
 */
#ifndef VMTOOLS_AGENT_EHFRAME_H
#define VMTOOLS_AGENT_EHFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

/* Most entries taken from one table (libc has ~3,000, postgres ~12,000). */
#define VM_EHFRAME_MAX_FDES (4u << 20)

struct vm_ehframe_hdr {
	const uint8_t *data; /* the section's bytes */
	size_t len;
	uint64_t vaddr; /* its link-time address (datarel and pcrel base) */
	unsigned ptr_size; /* 4 or 8: the ELF class */
	bool big_endian; /* the file's byte order (ELFDATA2MSB) */
};

/*
 * The function start addresses of the table, sorted, one per address,
 * into a malloc'd *starts (NULL when none).  0; -EINVAL for a table that
 * is not one (bad version, encodings it cannot hold); -ENOENT when it has
 * no search table; -ENOMEM.
 */
int vm_ehframe_hdr_starts(const struct vm_ehframe_hdr *h, uint64_t **starts,
			  size_t *n);

/*
 * The function starts of the .eh_frame_hdr segment (PT_GNU_EH_FRAME) of
 * the ELF file e, as vm_ehframe_hdr_starts gives them: 0, -ENOENT when it
 * has none, -EINVAL, -ENOMEM.
 */
int vm_ehframe_starts_of_elf(Elf *e, uint64_t **starts, size_t *n);

/*
 * The start of the function holding addr: the greatest start <= addr.
 * False below the first one.
 */
bool vm_ehframe_lookup(const uint64_t *starts, size_t n, uint64_t addr,
		       uint64_t *start);

#endif
