/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * unwind_walk.bpf.h - a user stack walked in the kernel over the tables
 * in the maps (bpf/unwind.h), one frame per call of unwind_frame(): the
 * mapping that holds the pc, the row that holds it (its page's entry in
 * the binary's index, which is the answer for most pcs, else halvings
 * among the few rows of the page), then the caller's registers by the
 * step both walks share (bpf/unwind_step.h); a return address in no
 * mapping cuts the walk there.  Where the walk starts,
 * for which process, and what it counts are bpf/unwind.bpf.h's.
 *
 * It uses no helper but bpf_map_lookup_elem and bpf_probe_read_user, so
 * that tests/unit/test_unwind_steps.c compiles it in user space with a
 * shim of both (the agent's packed tables, a captured stack) and holds
 * it equal to the agent's walk (agent/unwind/unwind.c).
 */
#ifndef VMTOOLS_BPF_UNWIND_WALK_BPF_H
#define VMTOOLS_BPF_UNWIND_WALK_BPF_H

#include <stdbool.h>

#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "bpf/stacks.h"
#include "bpf/unwind.h"

static __always_inline bool unwind_read_stack(void *ctx, void *dst, __u32 size,
					      __u64 addr)
{
	return bpf_probe_read_user(dst, size, (void *)addr) == 0;
}

#include "bpf/unwind_step.h"

/* Made by user space and shared by both objects (bpf_unwind.c). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct unwind_row);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
} unwind_rows SEC(".maps");

/*
 * A walk's registers and counts live in a per-CPU map, not on the stack:
 * the step is a global function, which the verifier checks once with
 * whatever such a struct may hold, and the loop that calls it keeps
 * nothing on the stack that differs from one round to the next.
 */
struct unwind_state {
	struct unwind_walk walk;
	__u32 n; /* frames taken */
	__u32 map; /* the mapping of the last frame found, in proc->m */
	__u32 map2; /* the one before it (a stack goes libc, postgres, libc) */
	__u8 unknown; /* a pc in no mapping given: a file mapped since */
};

/* A walk from these registers, with no frame taken. */
static __always_inline void unwind_begin(struct unwind_state *w, __u64 pc,
					 __u64 sp, __u64 fp, __u64 lr)
{
	unwind_walk_begin(&w->walk, pc, sp, fp, lr);
	w->n = w->map = 0;
	w->map2 = UNWIND_MAX_MAPS; /* none yet */
	w->unknown = 0;
}

/*
 * The row that holds pc, or NULL: none does, or no mapping holds pc
 * (*outside then set).
 */
static __always_inline const struct unwind_row *
unwind_find(struct unwind_state *w, const struct unwind_proc *proc, __u64 pc,
	    bool *outside)
{
	const struct unwind_map *m;
	const struct unwind_row *row;
	__u32 lo = 0, hi = proc->n, mid, first, k, at;
	__u64 rel;

	if (hi > UNWIND_MAX_MAPS)
		return NULL;
	/*
	 * Most callers are in the mapping of the frame before, or in the
	 * one before that: try them first.
	 */
	m = &proc->m[w->map & (UNWIND_MAX_MAPS - 1)];
	if (w->map < hi && pc >= m->start && pc < m->end)
		goto found;
	m = &proc->m[w->map2 & (UNWIND_MAX_MAPS - 1)];
	if (w->map2 < hi && pc >= m->start && pc < m->end) {
		mid = w->map2;
		w->map2 = w->map;
		w->map = mid;
	} else {
		for (int i = 0; i < 7 && lo < hi; i++) {
			mid = (lo + hi) / 2;
			if (pc < proc->m[mid & (UNWIND_MAX_MAPS - 1)].start)
				hi = mid;
			else
				lo = mid + 1;
		}
		if (!lo)
			goto unknown;
		mid = (lo - 1) & (UNWIND_MAX_MAPS - 1);
		m = &proc->m[mid];
		if (pc >= m->end)
			goto unknown;
		w->map2 = w->map;
		w->map = mid;
	}
found:
	rel = pc - m->bias;
	if (!m->count || rel >> 32)
		return NULL;
	/* The last row whose address is at most rel, within its page. */
	first = m->first;
	k = (__u32)rel >> (m->shift & 31);
	if (k >= m->pages) {
		lo = first + m->count;
		hi = lo;
	} else {
		const struct unwind_row *e, *next;

		at = m->index + k;
		e = bpf_map_lookup_elem(&unwind_rows, &at);
		at++;
		next = bpf_map_lookup_elem(&unwind_rows, &at);
		if (!e || !next)
			return NULL;
		lo = first + (e->addr & UNWIND_COUNT_MASK);
		hi = first + (next->addr & UNWIND_COUNT_MASK);
		/* Before the page's first row: the rule it starts with. */
		if (lo > first &&
		    (lo == hi || ((__u32)rel & ((1u << (m->shift & 31)) - 1)) <
					 e->addr >> UNWIND_COUNT_BITS))
			return e;
	}
	for (int i = 0; i < UNWIND_ROW_STEPS && lo < hi; i++) {
		mid = lo + (hi - lo) / 2;
		row = bpf_map_lookup_elem(&unwind_rows, &mid);
		if (!row)
			return NULL;
		if (row->addr <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == first)
		return NULL;
	lo--;
	return bpf_map_lookup_elem(&unwind_rows, &lo);
unknown:
	/*
	 * A file mapped since user space read the mappings, or no code (or
	 * one of the mappings past those the entry holds).
	 */
	w->unknown = 1;
	*outside = !proc->partial;
	return NULL;
}

/*
 * One frame of the walk w of the stack going into r, with the mappings of
 * proc: its pc kept, its caller's registers found.  1 ends the walk.
 * Global: checked once.
 */
__noinline int unwind_frame(struct unwind_state *w, struct stack_record *r,
			    const struct unwind_proc *proc)
{
	const struct unwind_row *row;
	bool outside = false;

	if (!w || !r || !proc || w->n >= STACK_MAX_DEPTH)
		return 1;
	if (!w->walk.r.pc) {
		unwind_walk_lost(&w->walk); /* cut, unless the first pc */
		return 1;
	}
	r->ips[w->n & STACK_MAX_DEPTH] = w->walk.r.pc;
	w->n++;
	row = unwind_find(w, proc, unwind_walk_pc(&w->walk), &outside);
	if (outside && unwind_walk_lost(&w->walk))
		return 1;
	return unwind_walk_step(&w->walk, row, NULL);
}

#endif
