/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * unwind.h - the unwind tables as the BPF programs read them
 * (bpf/unwind_walk.bpf.h) and the agent packs them
 * (agent/unwind/unwind_pack.c) and writes them
 * (agent/profile/bpf/bpf_unwind.c): a store of rows, one run of rows per
 * binary, and for each target process the executable mappings that have
 * a run, sorted by address.
 *
 * A binary's rows are followed in the store by their index, one entry
 * (a row's 8 bytes) for each page of its row addresses, k from 0 to
 * `pages`: how many of its rows start before page k (addresses below
 * k << shift), where in page k the first of its own rows starts, and the
 * rule in effect where page k starts (the last row before it).  Most
 * pcs lie before the first row of their page (a function's body, past
 * its prologue): the index entry is then the answer and no row is read;
 * else a binary search among the page's few rows finds it.  The agent
 * picks the page size so that a page holds about 2 rows on average, and
 * the index takes half the rows' space.  The entry's `addr` holds the
 * count in bits 0-21 and the first row's offset in the page in bits
 * 22-31 (at most UNWIND_PAGE_OFF_MAX: a page larger than that says "at
 * least"); its `rule` is a row's.
 *
 * A row is agent/unwind/unwind_table.h's, made small, 8 bytes: its
 * address is an offset from the binary's first row (a binary's rows
 * span less than 4 GiB), and its rules are packed in 32 bits (the
 * unwind_row_* functions below read them): the kind of CFA rule in bits
 * 0-2, where fp was saved in bits 3-10 (eighths of its offset from the
 * CFA, signed: -1,024 to 1,016 bytes; 0: not saved), on an architecture
 * whose return address is not always at one place (UNWIND_RA_BITS 8:
 * arm64) where it was saved in the next 8 bits (the same way; 0: still
 * in the link register), and the CFA's offset in the bits left, in units
 * of UNWIND_CFA_SCALE (signed: x86-64's 21 bits of bytes, within 1 MiB;
 * arm64's 13 bits of 8 bytes, within 32 KiB).  A rule that does not fit
 * is left to the frame pointer (UNWIND_NONE).  A mapping's `bias` turns a pc into
 * the offset: row address = pc - bias.
 *
 * What is the architecture's (its registers, signal frame, pt_regs) is
 * in one file per architecture, chosen below: the rest of the unwinder
 * speaks of pc, sp and fp.
 */
#ifndef VMTOOLS_BPF_UNWIND_H
#define VMTOOLS_BPF_UNWIND_H

#include <linux/types.h>

/*
 * The BPF programs are built for one architecture (-D__TARGET_ARCH_x);
 * user space is its compiler's.  A unit test may ask for arm64's rules on
 * any host (VMTOOLS_UNWIND_ARM64), to walk synthetic arm64 frames.
 */
#if defined(VMTOOLS_UNWIND_ARM64) || defined(__TARGET_ARCH_arm64) || \
	(!defined(__bpf__) && !defined(__TARGET_ARCH_x86) &&         \
	 defined(__aarch64__))
#include "bpf/unwind_arm64.h"
#elif defined(__TARGET_ARCH_x86) || (!defined(__bpf__) && defined(__x86_64__))
#include "bpf/unwind_x86.h"
#else
#error "The unwinder knows x86-64 and arm64: another architecture needs its registers, signal frame and pt_regs in a bpf/unwind_<arch>.h like bpf/unwind_x86.h, chosen here."
#endif

/* An index entry's count of rows and offset of its page's first row. */
#define UNWIND_COUNT_BITS 22
#define UNWIND_COUNT_MASK ((1u << UNWIND_COUNT_BITS) - 1)
#define UNWIND_PAGE_OFF_MAX ((1u << (32 - UNWIND_COUNT_BITS)) - 1)

/* Executable mappings with tables one process may have. */
#define UNWIND_MAX_MAPS 64
/* Halvings that find a row among a binary's: at most 2^22 rows. */
#define UNWIND_ROW_STEPS UNWIND_COUNT_BITS

enum unwind_cfa {
	UNWIND_NONE, /* no rule: the frame pointer's */
	UNWIND_SP, /* CFA = sp + cfa_off */
	UNWIND_FP, /* CFA = fp + cfa_off */
	UNWIND_PLT, /* CFA = sp + 8, + 8 once (pc & 15) >= cfa_off */
	UNWIND_OUTERMOST, /* the return address is undefined: stop */
	UNWIND_SIGNAL, /* __restore_rt: the registers a signal saved */
};

struct unwind_row {
	__u32 addr; /* from the binary's first row's address */
	__u32 rule; /* cfa, fp_off / 8, cfa_off: see above */
};

_Static_assert(sizeof(struct unwind_row) == 8, "a row is 8 bytes");

#define UNWIND_CFA_SHIFT (11 + UNWIND_RA_BITS)
/* The ra_off of a row with no rules (UNWIND_NONE, UNWIND_SIGNAL). */
#if UNWIND_RA_BITS
#define UNWIND_RA_DEFAULT 0
#else
#define UNWIND_RA_DEFAULT UNWIND_RA_OFF
#endif
#define UNWIND_CFA_OFF_MAX \
	(((1 << (31 - UNWIND_CFA_SHIFT)) - 1) * UNWIND_CFA_SCALE)
#define UNWIND_FP_OFF_MAX 1016

static inline __u32 unwind_row_cfa(const struct unwind_row *r)
{
	return r->rule & 7;
}

static inline __s32 unwind_row_cfa_off(const struct unwind_row *r)
{
	return ((__s32)r->rule >> UNWIND_CFA_SHIFT) * UNWIND_CFA_SCALE;
}

static inline __s32 unwind_row_fp_off(const struct unwind_row *r)
{
	return (__s32)(__s8)(r->rule >> 3) * 8;
}

/* Where the return address was saved from the CFA; 0: in the link register. */
static inline __s32 unwind_row_ra_off(const struct unwind_row *r)
{
#if UNWIND_RA_BITS
	return (__s32)(__s8)(r->rule >> 11) * 8;
#else
	return UNWIND_RA_OFF;
#endif
}

/*
 * The rule of a row; the offsets must be in range (fp_off and ra_off
 * multiples of 8, cfa_off of UNWIND_CFA_SCALE; ra_off UNWIND_RA_OFF where
 * a row has no bits for it).
 */
static inline __u32 unwind_rule(__u32 cfa, __s32 cfa_off, __s32 fp_off,
				__s32 ra_off)
{
	__u32 rule = (cfa & 7) | ((__u32)(__u8)(__s8)(fp_off / 8) << 3) |
		     ((__u32)(cfa_off / UNWIND_CFA_SCALE) << UNWIND_CFA_SHIFT);

#if UNWIND_RA_BITS
	rule |= (__u32)(__u8)(__s8)(ra_off / 8) << 11;
#endif
	return rule;
}

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
	/*
	 * 1: the process has more executable mappings than m[] holds, so a
	 * pc in none of m[] may still be in one of its.
	 */
	__u32 partial;
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

#endif
