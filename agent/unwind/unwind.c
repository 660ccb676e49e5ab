// SPDX-License-Identifier: Apache-2.0
/*
 * unwind.c - walking a user stack with unwind tables (unwind.h).
 *
 * The step from a frame to its caller is the one the BPF programs take,
 * written once (bpf/unwind_step.h) and compiled here with the walk's read
 * callback as its read of the stack; it steps by a row's rule as the
 * programs have it (unwind_pack.h), so that both walks find the same
 * callers (tests/unit/test_unwind_steps.c holds them equal).  This file
 * finds the row for each pc through the caller's find callback and keeps
 * the frames.
 */
#include "agent/unwind/unwind.h"

#include <stddef.h>

#include "agent/unwind/unwind_pack.h"

/* How the step reads the stack: through the walk's callback. */
struct reader {
	vm_unwind_read_fn read;
	void *arg;
};

static inline bool unwind_read_stack(void *ctx, void *dst, __u32 size,
				     __u64 addr)
{
	const struct reader *r = ctx;
	uint64_t *words = dst;

	for (__u32 i = 0; i < size / 8; i++)
		if (!r->read(r->arg, addr + 8 * i, &words[i]))
			return false;
	return true;
}

#include "bpf/unwind_step.h"

size_t vm_unwind_stack(const struct vm_unwind_regs *regs,
		       vm_unwind_find_fn find, vm_unwind_read_fn read,
		       void *arg, uint64_t *ips, uint64_t *sps, size_t max,
		       struct vm_unwind_counts *counts)
{
	struct reader reader = { read, arg };
	struct unwind_walk w;
	size_t n = 0;

	unwind_walk_begin(&w, regs->pc, regs->sp, regs->fp, regs->lr);
	while (n < max) {
		const struct vm_unwind_table *t;
		const struct vm_unwind_row *row = NULL;
		struct unwind_row packed;
		bool outside = false;
		uint64_t link;

		if (!w.r.pc) {
			unwind_walk_lost(&w); /* cut, unless the first pc */
			break;
		}
		if (sps)
			sps[n] = w.r.sp;
		ips[n++] = w.r.pc;
		t = find(arg, unwind_walk_pc(&w), &link, &outside);
		if (outside && unwind_walk_lost(&w))
			break;
		if (t)
			row = vm_unwind_lookup(t, link);
		if (row)
			packed.rule = vm_unwind_rule(row);
		if (unwind_walk_step(&w, row ? &packed : NULL, &reader))
			break;
	}
	counts->by_table += w.by_table;
	counts->by_frame_pointer += w.by_fp;
	counts->outermost += w.outermost;
	counts->cut += w.cut;
	return n;
}
