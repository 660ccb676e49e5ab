// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_sizing.c - map sizing and CPU list parsing for the eBPF backend
 * (see bpf_sizing.h).
 *
 * A stack map hashes a stack into a slot and answers -EEXIST when the slot
 * holds another stack, so a fraction of about distinct/slots of the stacks
 * is lost: each of the two stack maps (user, kernel) gets eight slots per
 * expected sample, at least 8 Ki.  The kernel preallocates the maps
 * (perf_event programs require it) at ~1 KiB a stack, so they are capped
 * at 64 Ki slots (64 MiB each).
 *
 * The hash maps are preallocated too (a perf_event program needs that on
 * kernels before 6.1), which costs time at load in proportion to their
 * size, before sampling can start: each is sized for what it can hold.
 * `seen` gets an entry at a process's first sample, so never more than
 * the samples (it is an LRU: beyond, a process is only announced again).
 * `target_pids` is read only with --pid targets: one entry otherwise.
 * `children` holds the children of targets (threads included) from their
 * fork until they exit.  `blocked` holds every target thread switched
 * out at once, which is every thread of the targets at most.
 */
#include "agent/profile/bpf/bpf_sizing.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define STACKS_MIN 8192u
#define STACKS_MAX 65536u
#define COUNTS_MIN 2048u
#define COUNTS_MAX 262144u
#define SEEN_MIN 1024u
#define SEEN_MAX 16384u
#define PIDS_MAX 65536u /* --pid targets and every child they fork */
#define CHILDREN_MAX 16384u
#define BLOCKED_MAX 16384u /* threads of targets switched out at once */

static uint32_t pow2_clamp(uint64_t want, uint32_t lo, uint32_t hi)
{
	uint64_t v = lo;

	while (v < want && v < hi)
		v <<= 1;
	return (uint32_t)v;
}

void vm_bpf_map_sizes(uint32_t frequency, size_t cpus, uint32_t seconds,
		      bool by_pid, struct vm_bpf_sizes *out)
{
	uint64_t expected = (uint64_t)frequency * (cpus ? cpus : 1) * seconds;

	out->expected_samples = expected;
	out->stacks = pow2_clamp(expected * 8, STACKS_MIN, STACKS_MAX);
	out->counts = pow2_clamp(expected, COUNTS_MIN, COUNTS_MAX);
	out->seen = pow2_clamp(expected, SEEN_MIN, SEEN_MAX);
	out->pids = by_pid ? PIDS_MAX : 1;
	out->children = CHILDREN_MAX;
	out->blocked = BLOCKED_MAX;
}

int vm_parse_cpu_list(const char *s, int *cpus, size_t cap, size_t *n)
{
	size_t count = 0;
	char *end;

	*n = 0;
	while (*s && *s != '\n') {
		long a, b;

		a = strtol(s, &end, 10);
		if (end == s || a < 0)
			return -EINVAL;
		b = a;
		s = end;
		if (*s == '-') {
			s++;
			b = strtol(s, &end, 10);
			if (end == s || b < a || b - a > 1 << 20)
				return -EINVAL;
			s = end;
		}
		for (long c = a; c <= b; c++, count++)
			if (cpus && count < cap)
				cpus[count] = (int)c;
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -EINVAL;
	}
	if (count == 0)
		return -EINVAL;
	*n = count;
	return 0;
}
