/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flame.h - the layout of a flame graph, computed from a symbolized
 * profile (flame.c) and drawn as SVG by svg.c.  Kept apart from the
 * drawing so that the geometry is unit-tested on its own: every frame's
 * weight is the sum of its children's and its own, children lie within
 * their parent, and siblings do not overlap.
 *
 * A stack reads, from the root up: "all", the thread's command name, the
 * user frames outermost first, then the kernel frames (as the folded
 * format writes them).  Siblings are ordered by name, so the same profile
 * always gives the same picture.  A frame weighs what its stacks weigh
 * (vm_sample_weight, encode.h: samples, or nanoseconds for a profile kind
 * that measures time).
 */
#ifndef VMTOOLS_AGENT_FLAME_H
#define VMTOOLS_AGENT_FLAME_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbolize/symbolize.h"

enum vm_flame_kind {
	VM_FLAME_ROOT, /* "all" */
	VM_FLAME_PROCESS, /* the command name a stack starts with */
	VM_FLAME_USER,
	VM_FLAME_KERNEL,
	VM_FLAME_LOST, /* a stack that could not be kept, or none */
};

struct vm_flame_frame {
	const char *name; /* any bytes: not yet made fit for XML */
	enum vm_flame_kind kind;
	uint32_t depth; /* 0: the root */
	size_t parent; /* index in vm_flame.frames; the root's is 0 */
	uint64_t offset; /* weight left of it: where it starts */
	uint64_t weight;
};

struct vm_flame {
	struct vm_flame_frame
		*frames; /* pre-order: a parent before its children */
	size_t n;
	uint64_t total; /* the root's weight */
	uint32_t max_depth;
	char **names; /* names made here (addresses), freed with it */
	size_t n_names, cap_names;
};

/* -ENOMEM or 0; f is empty (n == 0) only when y is. */
int vm_flame_build(const struct vm_symbolized *y, struct vm_flame *f);
void vm_flame_free(struct vm_flame *f);

#endif
