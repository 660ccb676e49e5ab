/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elf.h - what the symbolizer reads from one ELF file (elf.c, through
 * libelf): function symbols from .symtab, .dynsym and the xz-compressed
 * .gnu_debugdata (elf_debugdata.c), the function starts of .eh_frame_hdr
 * (ehframe.h), the loadable segments that turn a file offset into a symbol
 * address, the GNU build id and the .gnu_debuglink.
 *
 * Input is untrusted (any file a process maps): every size and index is
 * checked, and a malformed file yields an error or fewer symbols, never a
 * crash (tests/fuzz/fuzz_elf.c).  What one file's symbols may take is
 * bounded (max_bytes): each name is kept once however many symbols point
 * at it, and a table that outgrows the bound is refused with EFBIG while
 * it is read, before it has taken more.
 */
#ifndef VMTOOLS_AGENT_ELF_H
#define VMTOOLS_AGENT_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/samples/sample.h"
#include "common/error.h"
#include "common/strpool.h"

/* What one binary's symbols may take, unless max_bytes says otherwise. */
#define VM_ELF_SYMBOLS_MAX_BYTES ((size_t)128 << 20)

struct vm_elf_symbol {
	uint64_t addr;
	uint64_t size; /* 0 when the symbol table does not say */
	const char *name; /* in the info's pool */
	bool from_debug_file; /* merged from a separate debug file */
};

struct vm_elf_segment {
	uint64_t vaddr;
	uint64_t offset;
	uint64_t filesz;
};

struct vm_elf_info {
	uint8_t build_id[VM_BUILD_ID_MAX];
	uint8_t build_id_len;
	char *debuglink; /* file name from .gnu_debuglink, or NULL */
	uint32_t debuglink_crc;
	bool has_symtab; /* a full .symtab (not only .dynsym) was read */
	bool has_debugdata; /* symbols came from .gnu_debugdata too */
	struct vm_elf_segment *segs;
	size_t n_segs, cap_segs;
	struct vm_elf_symbol *syms; /* sorted by addr, one per addr */
	size_t n_syms;
	size_t cap_syms;
	struct vm_strpool names; /* the symbols' names, each once */
	/* Bound on vm_elf_info_bytes() while reading; 0: the default. */
	size_t max_bytes;
	/* Function starts from .eh_frame_hdr (ehframe.h), sorted. */
	uint64_t *fn_starts;
	size_t n_fn_starts;
};

/*
 * Read the ELF file open on fd (it stays open; the caller closes it).
 * -EFBIG: its symbols would take more than info->max_bytes (what was read
 * is kept; the caller drops it).
 */
int vm_elf_read_fd(int fd, struct vm_elf_info *info, const char *what,
		   struct vm_error *err);

/* The same from memory (a decompressed .gnu_debugdata, fuzz inputs). */
int vm_elf_read_mem(const void *buf, size_t len, struct vm_elf_info *info,
		    const char *what, struct vm_error *err);

/*
 * Add other's symbols to info, then re-sort; from_debug_file: other is a
 * separate debug file (not the file's own .gnu_debugdata).  All or none:
 * -EFBIG (over info->max_bytes) or -ENOMEM leave info's symbols as they
 * were.
 */
int vm_elf_merge_symbols(struct vm_elf_info *info,
			 const struct vm_elf_info *other, bool from_debug_file);

/* The function containing addr (a link-time address), or NULL. */
const struct vm_elf_symbol *vm_elf_lookup(const struct vm_elf_info *info,
					  uint64_t addr);

/*
 * The start of the function holding addr (a link-time address) from
 * .eh_frame_hdr; false when no function starts at or below it.
 */
bool vm_elf_function_start(const struct vm_elf_info *info, uint64_t addr,
			   uint64_t *start);

/* Link-time address of a file offset; false when no segment holds it. */
bool vm_elf_offset_to_addr(const struct vm_elf_info *info, uint64_t offset,
			   uint64_t *addr);

/* The memory info holds: symbols, names, segments, function starts. */
size_t vm_elf_info_bytes(const struct vm_elf_info *info);

void vm_elf_info_free(struct vm_elf_info *info);

/*
 * Decompress xz data (.gnu_debugdata) with liblzma; at most max_out bytes
 * of output.  *out is malloc'd.
 */
int vm_xz_decompress(const void *in, size_t in_len, size_t max_out, void **out,
		     size_t *out_len, struct vm_error *err);

#endif
