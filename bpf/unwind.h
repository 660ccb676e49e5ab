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
 * CFA, signed: -1,024 to 1,016 bytes; 0: not saved), and the CFA's
 * offset in the bits left (x86-64: 21 bits, within 1 MiB).  arm64's
 * return address is not always at one place: its rows say where, and
 * may count both offsets from sp or x29 instead (the layout is beside
 * unwind_rule() below).  A rule that does not fit is left to the frame
 * pointer (UNWIND_NONE: a rule whose kind bits are 0).  A mapping's `bias` turns a pc into
 * the offset: row address = pc - bias.
 *
 * What is the architecture's (its registers, signal frame, pt_regs) is
 * in one file per architecture, chosen below: the rest of the unwinder
 * speaks of pc, sp and fp.
 */
#ifndef VMTOOLS_BPF_UNWIND_H
#define VMTOOLS_BPF_UNWIND_H

#include <stdbool.h>
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

#define UNWIND_FP_OFF_MAX 1016

static inline __u32 unwind_row_cfa(const struct unwind_row *r)
{
	return r->rule & 7;
}

#if UNWIND_RA_BITS
/*
 * arm64's rows: bits 3-10 where fp was saved, bits 11-18 where the
 * return address was (eighths, signed; -128: not saved, the link
 * register's), bit 19 whether those are from the CFA (0) or from the
 * register the CFA is computed from, sp or x29 (1: a frame record at the
 * bottom of a large frame, x29 at CFA - 2304, is at sp + 0), the CFA's
 * offset in eighths in bits 20-31 (signed: within 16 KiB).
 */
#define UNWIND_CFA_SHIFT 20
#define UNWIND_FROM_BASE (1u << 19)
#define UNWIND_SLOT_NONE (-128)
#define UNWIND_RA_DEFAULT 0
#define UNWIND_CFA_OFF_MAX (((1 << 11) - 1) * UNWIND_CFA_SCALE)

static inline __s32 unwind_row_cfa_off(const struct unwind_row *r)
{
	return ((__s32)r->rule >> UNWIND_CFA_SHIFT) * UNWIND_CFA_SCALE;
}

/* A slot's offset from the CFA; 0: not saved. */
static inline __s32 unwind_row_slot(const struct unwind_row *r, unsigned shift)
{
	__s32 v = (__s8)(r->rule >> shift);

	if (v == UNWIND_SLOT_NONE)
		return 0;
	return r->rule & UNWIND_FROM_BASE ? v * 8 - unwind_row_cfa_off(r) :
					    v * 8;
}

static inline __s32 unwind_row_fp_off(const struct unwind_row *r)
{
	return unwind_row_slot(r, 3);
}

/* Where the return address was saved from the CFA; 0: in the link register. */
static inline __s32 unwind_row_ra_off(const struct unwind_row *r)
{
	return unwind_row_slot(r, 11);
}

/* An offset (0: not saved) as a slot's 8 bits, from base; false: it does not fit. */
static inline bool unwind_slot_bits(__s32 off, __s32 base, __u32 *bits)
{
	if (!off) {
		*bits = (__u8)UNWIND_SLOT_NONE;
		return true;
	}
	off += base;
	if (off % 8 || off < -UNWIND_FP_OFF_MAX || off > UNWIND_FP_OFF_MAX)
		return false;
	*bits = (__u8)(__s8)(off / 8);
	return true;
}

/*
 * The rule of a row, 0 when its offsets do not fit (UNWIND_NONE's):
 * the slots from the CFA where both fit so, else from the CFA's register.
 */
static inline __u32 unwind_rule(__u32 cfa, __s32 cfa_off, __s32 fp_off,
				__s32 ra_off)
{
	__u32 from = 0, fp, ra;

	if (cfa_off % UNWIND_CFA_SCALE || cfa_off > UNWIND_CFA_OFF_MAX ||
	    cfa_off < -UNWIND_CFA_OFF_MAX - UNWIND_CFA_SCALE)
		return 0;
	if (!unwind_slot_bits(fp_off, 0, &fp) ||
	    !unwind_slot_bits(ra_off, 0, &ra)) {
		from = UNWIND_FROM_BASE;
		if (!unwind_slot_bits(fp_off, cfa_off, &fp) ||
		    !unwind_slot_bits(ra_off, cfa_off, &ra))
			return 0;
	}
	return (cfa & 7) | fp << 3 | ra << 11 | from |
	       (__u32)(cfa_off / UNWIND_CFA_SCALE) << UNWIND_CFA_SHIFT;
}
#else
/*
 * x86-64's rows: bits 3-10 where fp was saved (eighths of its offset
 * from the CFA, signed; 0: not saved), the CFA's offset in bits 11-31
 * (signed bytes: within 1 MiB); the return address is at
 * UNWIND_RA_OFF.
 */
#define UNWIND_CFA_SHIFT 11
#define UNWIND_RA_DEFAULT UNWIND_RA_OFF
#define UNWIND_CFA_OFF_MAX ((1 << 20) - 1)

static inline __s32 unwind_row_cfa_off(const struct unwind_row *r)
{
	return (__s32)r->rule >> UNWIND_CFA_SHIFT;
}

static inline __s32 unwind_row_fp_off(const struct unwind_row *r)
{
	return (__s32)(__s8)(r->rule >> 3) * 8;
}

static inline __s32 unwind_row_ra_off(const struct unwind_row *r)
{
	return UNWIND_RA_OFF;
}

/*
 * The rule of a row, 0 when its offsets do not fit (UNWIND_NONE's):
 * fp_off a multiple of 8 within -1,024 to 1,016, the return address at
 * UNWIND_RA_OFF.
 */
static inline __u32 unwind_rule(__u32 cfa, __s32 cfa_off, __s32 fp_off,
				__s32 ra_off)
{
	if (cfa_off < -UNWIND_CFA_OFF_MAX - 1 || cfa_off > UNWIND_CFA_OFF_MAX ||
	    fp_off < -UNWIND_FP_OFF_MAX - 8 || fp_off > UNWIND_FP_OFF_MAX ||
	    fp_off % 8 || ra_off != UNWIND_RA_OFF)
		return 0;
	return (cfa & 7) | ((__u32)(__u8)(__s8)(fp_off / 8) << 3) |
	       ((__u32)cfa_off << UNWIND_CFA_SHIFT);
}
#endif

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
