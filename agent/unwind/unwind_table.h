/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind_table.h - how to find a function's caller at any instruction of
 * a binary built without frame pointers, as a compact table
 * (unwind_table.c): what the user-space walk (unwind.c) and the BPF
 * programs' store (agent/profile/bpf/bpf_unwind.c) give complete stacks
 * for such code with.
 *
 * Built from the call frame information the compiler emits for every
 * function (.eh_frame, or a debug file's .debug_frame), through elfutils'
 * libdw (dwarf_getcfi_elf, dwarf_cfi_addrframe): no DWARF interpreter of
 * our own.  Each row says, from its address until the next row's, where
 * the canonical frame address (CFA, the stack pointer before the call)
 * is: the stack pointer or the frame pointer plus an offset, or the one
 * expression x86-64's PLT stubs use; the return address saved at CFA + an
 * offset (on x86-64 always CFA - 8: a row that says otherwise is not
 * kept) or, on arm64, still in the link register; and the caller's frame
 * pointer saved at CFA + an offset or left alone.  The registers are
 * those of the file's architecture (x86-64 or arm64: its ELF header
 * says; any other is refused), so that a test reads an arm64 binary's
 * rules on an amd64 host; the BPF programs and the walk take the rows of
 * their own architecture only (unwind_pack.h).  Rows whose rules
 * cannot be followed this way say so (VM_UNWIND_NONE): an unwinder falls
 * back to the frame pointer there.
 *
 * Input is untrusted (any binary a target maps): libdw bounds every read,
 * the table's rows are bounded (VM_UNWIND_MAX_ROWS), and a file that is
 * not one yields an error, never a crash (tests/fuzz/fuzz_unwind.c).
 * libdw reads a function's rules from its start again for each of its
 * rows, so a function of K rows costs K * K / 2 steps: a function's rows
 * are bounded (VM_UNWIND_MAX_FUNCTION_ROWS, past it the rest of the
 * function has no rule), which keeps a build linear in the file, and so
 * is the CPU time one build may take (VM_UNWIND_BUILD_CPU_MS).
 */
#ifndef VMTOOLS_AGENT_UNWIND_TABLE_H
#define VMTOOLS_AGENT_UNWIND_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Rows one binary's table may have (postgres: ~60,000; libc: ~25,000). */
#define VM_UNWIND_MAX_ROWS (2u << 20)
/*
 * Rows read from one function's rules (before equal ones are merged):
 * compilers' largest functions have a few hundred; past it the rest of
 * the function is one VM_UNWIND_NONE row, counted in `truncated`.
 */
#define VM_UNWIND_MAX_FUNCTION_ROWS 2048
/*
 * The CPU time one build may take, in ms, below the I/O pool's deadline
 * for a read (agent/iopool/iopool.h) so a build ends by itself: past it
 * the binary has no table (-ETIME).
 */
#define VM_UNWIND_BUILD_CPU_MS 2000

enum vm_unwind_cfa {
	VM_UNWIND_NONE, /* no rule here: fall back to the frame pointer */
	VM_UNWIND_SP, /* CFA = sp + cfa_off */
	VM_UNWIND_FP, /* CFA = fp + cfa_off */
	/*
	 * An x86-64 PLT stub's: CFA = sp + 8, and 8 more once past the stub's
	 * 11th byte (its push): ((pc & 15) >= 11) << 3.
	 */
	VM_UNWIND_PLT,
	VM_UNWIND_OUTERMOST, /* the return address is undefined: stop */
};

/* One row: from addr (link-time) until the next row's addr. */
struct vm_unwind_row {
	uint64_t addr;
	int32_t cfa_off;
	int32_t fp_off; /* fp saved at CFA + fp_off; 0: not saved here */
	/*
	 * The return address saved at CFA + ra_off; 0: not saved, still in
	 * the link register (arm64).
	 */
	int32_t ra_off;
	uint8_t cfa; /* enum vm_unwind_cfa */
	bool signal; /* the frame a signal handler returns through */
};

#define VM_UNWIND_MAX_SEGS 16

struct vm_unwind_table {
	struct vm_unwind_row *rows; /* sorted by addr */
	size_t n, cap;
	/* The file's PT_LOAD segments: file offsets to link-time addresses. */
	struct {
		uint64_t vaddr, offset, filesz;
	} segs[VM_UNWIND_MAX_SEGS];
	size_t n_segs;
	/* What was passed over: rows with rules no unwinder here follows. */
	size_t unsupported;
	/* Functions cut at VM_UNWIND_MAX_FUNCTION_ROWS. */
	size_t truncated;
	/* Set before a build: its CPU time bound, 0 for VM_UNWIND_BUILD_CPU_MS. */
	unsigned cpu_ms;
};

/*
 * The table of the ELF file open on fd (it stays open): its .eh_frame
 * (or .debug_frame).  0; -ENOENT when it has no call frame information;
 * -EINVAL for a file libdw cannot read, or of another architecture than
 * x86-64 and arm64; -E2BIG past VM_UNWIND_MAX_ROWS;
 * -ETIME past its CPU time bound (t->cpu_ms); -ENOMEM; with a sentence
 * naming what in err.
 */
int vm_unwind_table_build_fd(int fd, struct vm_unwind_table *t,
			     const char *what, struct vm_error *err);

/* The same from memory (fuzz inputs). */
int vm_unwind_table_build_mem(const void *buf, size_t len,
			      struct vm_unwind_table *t, const char *what,
			      struct vm_error *err);

/*
 * The row that holds addr (link-time), or NULL when none does (before
 * the first row: no rule).
 */
const struct vm_unwind_row *vm_unwind_lookup(const struct vm_unwind_table *t,
					     uint64_t addr);

/*
 * The link-time address of file offset off (a run-time pc less its
 * mapping's start, plus the mapping's file offset); false when no segment
 * holds it.
 */
bool vm_unwind_link_addr(const struct vm_unwind_table *t, uint64_t off,
			 uint64_t *link);

/*
 * How many of the functions of the ELF file open on fd (its .eh_frame_hdr
 * starts) begin by setting up a frame pointer (unwind_fp_prologue(), in
 * bpf/unwind_x86.h), in percent, into *percent: a binary built
 * with -fomit-frame-pointer, as GCC does at -O2, has almost none, and a
 * frame-pointer walk cannot pass its frames.  0, or a negative errno.
 */
int vm_unwind_frame_pointer_share(int fd, unsigned *percent);

/* The memory the table holds. */
size_t vm_unwind_table_bytes(const struct vm_unwind_table *t);

void vm_unwind_table_free(struct vm_unwind_table *t);

#endif
