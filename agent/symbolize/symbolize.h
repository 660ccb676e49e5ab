/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolize.h - turning the raw stacks of a struct vm_samples into named
 * frames with their mappings (symbolize.c), the input of both encoders
 * (pprof.c, folded.c).  Written once for every backend.
 *
 * User frames are looked up in the process's captured mappings and the
 * symbols of the mapped file (symcache.h); kernel frames in kallsyms.
 * Frames that cannot be named keep their address and mapping.
 */
#ifndef VMTOOLS_AGENT_SYMBOLIZE_H
#define VMTOOLS_AGENT_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/samples/sample.h"
#include "common/error.h"

#define VM_KERNEL_MAPPING "[kernel.kallsyms]"

struct vm_sym_mapping {
	uint64_t start, end, pgoff;
	const char *file; /* interned */
	char build_id[2 * VM_BUILD_ID_MAX + 1]; /* hex, "" when unknown */
	bool kernel;
	bool has_functions; /* at least one of its frames was named */
};

struct vm_sym_frame {
	uint64_t addr; /* as sampled: a process or kernel address */
	uint32_t mapping; /* index + 1 in vm_symbolized.mappings, 0: none */
	const char *function; /* interned, NULL when unknown */
};

struct vm_sym_stack {
	const struct vm_sample *sample;
	const struct vm_process *proc; /* NULL when never captured */
	const char *backend_type; /* PostgreSQL's, or NULL */
	const char *wait_event; /* "Class:Name" (pgwait.h), or NULL */
	struct vm_sym_frame *frames; /* leaf first: kernel, then user */
	size_t n_frames;
};

struct vm_symbolized {
	const struct vm_samples *samples;
	struct vm_sym_mapping *mappings;
	size_t n_mappings;
	struct vm_sym_stack *stacks; /* one per sample, same order */
	size_t n_stacks;
	uint64_t frames_total, frames_named; /* for tests and logs */
	void *strings; /* tsearch tree of interned strings */
};

/*
 * Symbolize every sample of s (which must outlive out).  Fails only when
 * out of memory: what cannot be named stays an address.
 */
int vm_symbolize(const struct vm_samples *s, struct vm_symbolized *out,
		 struct vm_error *err);

void vm_symbolized_free(struct vm_symbolized *y);

/*
 * Warm the caches while a profile runs, so that symbolizing at its end is
 * quick: the kernel's symbols, and those of every file p maps.
 */
void vm_symbolize_prefetch_kernel(void);
void vm_symbolize_prefetch_process(const struct vm_process *p);

#endif
