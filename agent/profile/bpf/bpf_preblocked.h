/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_preblocked.h - the threads of the targets already blocked when an
 * off-CPU or wall-clock profile starts (bpf_preblocked.c).  The program
 * cannot see their block begin; user space lists them before attaching,
 * with the best stack /proc gives (the kernel stack and the user pc of
 * the system call they wait in) and their wait event, and the program
 * says when each is first switched in (bpf/offcpu.bpf.c, `pre_blocked`):
 * the time from the start of the profile to then is theirs, blocked.
 */
#ifndef VMTOOLS_AGENT_BPF_PREBLOCKED_H
#define VMTOOLS_AGENT_BPF_PREBLOCKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "bpf/pg.h"

/* Kernel frames kept from /proc/PID/task/TID/stack. */
#define VM_PRE_KERNEL_MAX 32

/* One thread blocked as the profile starts. */
struct vm_pre_blocked {
	uint32_t pid, tid;
	char state; /* 'S' or 'D', from /proc/PID/task/TID/stat */
	uint32_t wait_event; /* PostgreSQL's then; 0 when none or unknown */
	uint64_t query_id; /* PostgreSQL's then; 0 when none or unknown */
	uint64_t user_pc; /* from /proc/PID/task/TID/syscall; 0 unknown */
	uint32_t n_kernel;
	char *kernel[VM_PRE_KERNEL_MAX]; /* "function+0xoff", innermost first */
	uint64_t kernel_ips[VM_PRE_KERNEL_MAX]; /* once resolved */
};

struct vm_pre_blocked_set {
	struct vm_pre_blocked *v;
	size_t n, cap;
};

/*
 * The frames of /proc/PID/task/TID/stack's text ("[<0>] func+0x1/0x2"
 * lines) into p->kernel[], innermost first.  -ENOMEM.
 */
int vm_parse_task_stack(const char *text, struct vm_pre_blocked *p);

/*
 * The threads of process pid under proc_root blocked now ('S' or 'D'),
 * appended to set with their stacks and, when pg is not NULL, their wait
 * event and query id (bpf/pg.h) * (bpf/pg.h), their wait event.  0, or -ENOMEM.
 */
int vm_pre_blocked_scan(struct vm_pre_blocked_set *set, const char *proc_root,
			uint32_t pid, const struct pg_proc *pg);

/*
 * Kernel function names (sorted, each once) to addresses, 0 for a name
 * not known, with the caller's arg; 0 or -errno.
 * vm_symbolize_kernel_addrs() in the agent.
 */
typedef int (*vm_kernel_addrs_fn)(void *arg, const char *const *names, size_t n,
				  uint64_t *addrs);

/*
 * The kernel frames of every thread of set resolved to addresses by
 * addrs_of, all names in one call: a frame whose function is not found
 * ends that thread's kernel stack.
 */
void vm_pre_blocked_resolve(struct vm_pre_blocked_set *set,
			    vm_kernel_addrs_fn addrs_of, void *arg);

/*
 * Sort set by thread id, once every process is scanned, for
 * vm_pre_blocked_find: tens of thousands of threads are looked up at the
 * end of a profile, so each must cost a binary search, not a scan.
 */
void vm_pre_blocked_sort(struct vm_pre_blocked_set *set);

/* The thread tid of a sorted set, or NULL. */
const struct vm_pre_blocked *
vm_pre_blocked_find(const struct vm_pre_blocked_set *set, uint32_t tid);

void vm_pre_blocked_free(struct vm_pre_blocked_set *set);

#endif
