/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_calibrate.h - where the kernel keeps a task's user registers,
 * measured once per agent context (kept in the backend's state for the
 * agent's life, bpf_kept.h) with a thread of its own (bpf_calibrate.c,
 * bpf/calibrate.bpf.c), for the programs that unwind user stacks from a
 * sample taken in the kernel (bpf/unwind.bpf.h).
 */
#ifndef VMTOOLS_AGENT_BPF_CALIBRATE_H
#define VMTOOLS_AGENT_BPF_CALIBRATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vm_user_regs_where {
	bool found;
	uint32_t stack_off; /* offset of task_struct's kernel stack pointer */
	uint32_t thread_size; /* the kernel stack's size */
	char why[256]; /* not found: a sentence saying why */
};

/* The answer, found at the first question and remembered. */
struct vm_bpf_calibration {
	pthread_mutex_t lock; /* held while measuring: others wait */
	bool measured;
	struct vm_user_regs_where where;
};

void vm_bpf_calibration_init(struct vm_bpf_calibration *c);
void vm_bpf_calibration_destroy(struct vm_bpf_calibration *c);

/*
 * Where the user registers are, measured on c's first call (the agent
 * needs BPF for it, as for profiling) and remembered in c: when not
 * found, the profilers walk stacks taken in the kernel by frame pointer,
 * and /healthz says why.
 */
const struct vm_user_regs_where *vm_bpf_user_regs(struct vm_bpf_calibration *c);

/*
 * The offset among words (a task_struct's first n, read at a system call
 * entering with its registers at regs) of a pointer to a kernel stack of
 * one of the usual sizes with regs at its top: 0 and *off, *size, or
 * -ENOENT (none) or -EEXIST (more than one: no guess).
 */
int vm_bpf_find_stack_pointer(const uint64_t *words, size_t n, uint64_t regs,
			      uint32_t *off, uint32_t *size);

#endif
