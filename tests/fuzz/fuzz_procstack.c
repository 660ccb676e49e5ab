// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_procstack.c - libFuzzer target for what the off-CPU profiler reads
 * of a thread blocked when a profile starts (agent/profile/bpf/
 * bpf_preblocked.c): /proc/PID/task/TID/stat, whose command name the
 * process chooses, .../syscall and .../stack.  The same bytes go to each
 * parser; a stack keeps at most VM_PRE_KERNEL_MAX frames, each a
 * non-empty line's text after "] ".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/profile/bpf/bpf_preblocked.h"
#include "agent/samples/proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vm_pre_blocked_set set = { 0 };
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	(void)vm_parse_task_stat_state(text);
	(void)vm_parse_task_syscall_pc(text);
	set.v = calloc(1, sizeof(*set.v));
	if (set.v) {
		set.n = set.cap = 1;
		if (vm_parse_task_stack(text, &set.v[0]) == 0) {
			if (set.v[0].n_kernel > VM_PRE_KERNEL_MAX)
				abort();
			for (uint32_t i = 0; i < set.v[0].n_kernel; i++)
				if (!set.v[0].kernel[i][0] ||
				    strchr(set.v[0].kernel[i], '\n'))
					abort();
		}
		vm_pre_blocked_free(&set);
	}
	free(text);
	return 0;
}
