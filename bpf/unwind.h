/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * unwind.h - the unwind tables as the BPF programs read them
 * (bpf/unwind.bpf.h) and the agent writes them
 * (agent/profile/bpf/bpf_unwind.c): a store of rows, one run of rows per
 * binary, and for each target process the executable mappings that have
 * a run, sorted by address.
 *
 * A binary's rows are followed in the store by their index, which
 * narrows the search for a row to a few: for each page of its row
 * addresses, k from 0 to `pages`, how many of its rows start before page
 * k (addresses below k << shift), four 32-bit counts to a row of the
 * store.  The agent picks the page size so that a page holds about 8
 * rows on average and the index takes a 32nd of the rows' space.
 *
 * A row is agent/symbolize/unwind_table.h's, made small: its address is
 * an offset from the binary's first row (a binary's rows span less than
 * 4 GiB), the rules fit 12 bytes, and it is 16: a BPF array keeps its
 * values 8-byte aligned, which the agent, writing them through a mapping
 * of the array, must match.  A mapping's `bias` turns a pc into
 * that offset: row address = pc - bias.
 */
#ifndef VMTOOLS_BPF_UNWIND_H
#define VMTOOLS_BPF_UNWIND_H

/* Executable mappings with tables one process may have. */
#define UNWIND_MAX_MAPS 64
/* Halvings that find a row among a binary's: at most 2^22 rows. */
#define UNWIND_ROW_STEPS 22

enum unwind_cfa {
	UNWIND_NONE, /* no rule: the frame pointer's */
	UNWIND_RSP, /* CFA = rsp + cfa_off */
	UNWIND_RBP, /* CFA = rbp + cfa_off */
	UNWIND_PLT, /* CFA = rsp + 8, + 8 once (rip & 15) >= cfa_off */
	UNWIND_OUTERMOST, /* the return address is undefined: stop */
	UNWIND_SIGNAL, /* __restore_rt: the registers a signal saved */
};

struct unwind_row {
	__u32 addr; /* from the binary's first row's address */
	__s32 cfa_off;
	__s16 rbp_off; /* rbp saved at CFA + rbp_off; 0: not saved */
	__u8 cfa; /* enum unwind_cfa */
	__u8 pad;
	__u32 pad2;
};

_Static_assert(sizeof(struct unwind_row) % 8 == 0,
	       "a BPF array's values are 8-byte aligned");

struct unwind_map {
	__u64 start, end; /* run-time addresses */
	__u64 bias; /* row address = pc - bias */
	__u32 first, count; /* the binary's rows in the store */
	__u32 index, pages; /* its index in the store, and its pages */
	__u32 shift; /* a page is 1 << shift bytes of row addresses */
	__u32 pad;
};

struct unwind_proc {
	__u32 n; /* mappings in m[], sorted by start */
	__u32 pad;
	struct unwind_map m[UNWIND_MAX_MAPS];
};

/*
 * What the calibration program (bpf/calibrate.bpf.c) sees at a system
 * call of the agent's own thread: where the user registers are and the
 * first bytes of its task_struct, among which the pointer to its kernel
 * stack, whose top they are at.
 */
#define CALIBRATE_TASK_BYTES 4096

struct calibrate_seen {
	__u64 regs; /* the pt_regs the system call entered with */
	__u64 task; /* bpf_get_current_task() */
	__u64 words[CALIBRATE_TASK_BYTES / 8];
};

/* sizeof(struct pt_regs) on x86-64, and where rbp, rip, cs and rsp are. */
#define PT_REGS_SIZE 168
#define PT_REGS_RBP 32
#define PT_REGS_RIP 128
#define PT_REGS_CS 136
#define PT_REGS_RSP 152

#endif
