// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_calibrate.c - where the kernel keeps a task's user registers
 * (bpf_calibrate.h): the calibration program watches one system call of a
 * thread of the agent's own, and the pointer in its task_struct that puts
 * the registers the call entered with at the top of a kernel stack is the
 * one the profilers follow.  x86-64 and arm64 keep them there
 * (task_pt_regs(): the stack's base + THREAD_SIZE - sizeof(struct
 * pt_regs), whose size bpf/unwind_x86.h and bpf/unwind_arm64.h give);
 * THREAD_SIZE is 16 KiB, or 32 KiB with KASAN, and the struct's layout
 * may be randomized, so both are found, not assumed.  Exactly one answer, or
 * none: nothing is guessed.
 */
#include "agent/profile/bpf/bpf_calibrate.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/calibrate.skel.h"
#include "bpf/unwind.h"

int vm_bpf_find_stack_pointer(const uint64_t *words, size_t n, uint64_t regs,
			      uint32_t *off, uint32_t *size)
{
	static const uint32_t sizes[] = { 16384, 32768, 65536 };
	size_t found = 0;

	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			if (!words[i] ||
			    words[i] + sizes[k] - UNWIND_PT_REGS_SIZE != regs)
				continue;
			*off = (uint32_t)(i * sizeof(uint64_t));
			*size = sizes[k];
			found++;
		}
	return found == 1 ? 0 : found ? -EEXIST : -ENOENT;
}

static void calibrate(struct vm_user_regs_where *where)
{
	struct calibrate_bpf *skel = calibrate_bpf__open();
	struct calibrate_seen seen;
	uint32_t zero = 0;
	int r;

	if (!skel) {
		snprintf(where->why, sizeof(where->why),
			 "the calibration program cannot be opened (%s)",
			 strerror(errno));
		return;
	}
	skel->rodata->calibrate_tid_tgid = (uint64_t)getpid() << 32 |
					   (uint32_t)syscall(SYS_gettid);
	r = calibrate_bpf__load(skel);
	if (!r)
		r = calibrate_bpf__attach(skel);
	if (r) {
		snprintf(where->why, sizeof(where->why),
			 "the calibration program was refused (%s)",
			 strerror(r < 0 ? -r : r));
		calibrate_bpf__destroy(skel);
		return;
	}
	/* The system call it watches. */
	syscall(SYS_getppid);
	r = bpf_map_lookup_elem(bpf_map__fd(skel->maps.seen_regs), &zero,
				&seen);
	calibrate_bpf__destroy(skel);
	if (r || !seen.regs) {
		snprintf(
			where->why, sizeof(where->why),
			"the calibration program saw no system call of the agent's");
		return;
	}
	r = vm_bpf_find_stack_pointer(
		(const uint64_t *)seen.words,
		sizeof(seen.words) / sizeof(seen.words[0]), seen.regs,
		&where->stack_off, &where->thread_size);
	if (r == -EEXIST)
		snprintf(
			where->why, sizeof(where->why),
			"more than one pointer of the task_struct could be its kernel stack's");
	else if (r < 0)
		snprintf(
			where->why, sizeof(where->why),
			"no pointer in the first %d bytes of the task_struct puts the user registers at the top of a 16, 32 or 64 KiB kernel stack",
			CALIBRATE_TASK_BYTES);
	else
		where->found = true;
}

void vm_bpf_calibration_init(struct vm_bpf_calibration *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
}

void vm_bpf_calibration_destroy(struct vm_bpf_calibration *c)
{
	pthread_mutex_destroy(&c->lock);
}

const struct vm_user_regs_where *vm_bpf_user_regs(struct vm_bpf_calibration *c)
{
	pthread_mutex_lock(&c->lock);
	if (!c->measured)
		calibrate(&c->where);
	c->measured = true;
	pthread_mutex_unlock(&c->lock);
	return &c->where;
}
