// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_sizing.c - map sizing and CPU list parsing for the eBPF backend
 * (see bpf_sizing.h).
 *
 * Samples reach user space with their stacks on a ring buffer
 * (bpf/stacks.bpf.h), drained whenever a quarter of it is used (and
 * every 100 ms for an on-demand profile, at each cut for a continuous
 * one): it holds one second of the deepest records at the profile's rate
 * (Hz x CPUs x ~2 KiB), from 256 KiB to 32 MiB, i.e. many seconds of
 * typical ones (a PostgreSQL sample is ~300 bytes).  The distinct records
 * user space counts (bpf_stack_counts.c) are bounded by 1 KiB per expected
 * sample, from 16 MiB to 256 MiB: at most one new record per sample, most
 * of them far smaller.  Those two bounds are the agent's memory for stacks; a
 * record past either is counted as a sample not recorded.
 *
 * The hash maps are preallocated too (a perf_event program needs that on
 * kernels before 6.1), which costs time at load in proportion to their
 * size, before sampling can start: each is sized for what it can hold.
 * `seen` gets an entry at a process's first sample, so never more than
 * the samples (it is an LRU: beyond, a process is only announced again).
 * `target_pids` is read only with --pid targets: one entry otherwise.
 * `children` holds the children of targets (threads included) from their
 * fork until they exit.  `blocked` holds every target thread that has
 * been switched out and not freed (16 bytes each), which is every thread
 * of the targets at most.
 */
#include "agent/profile/bpf/bpf_sizing.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "bpf/stacks.h"

#define RING_MIN (256u << 10)
#define RING_MAX (32u << 20)
#define COUNTS_BYTES_PER_SAMPLE 1024u
#define COUNTS_BYTES_MIN ((size_t)16 << 20)
#define COUNTS_BYTES_MAX ((size_t)256 << 20)
#define SEEN_MIN 1024u
#define SEEN_MAX 16384u
#define PIDS_MAX 65536u /* --pid targets and every child they fork */
#define CHILDREN_MAX 16384u
#define BLOCKED_MAX 16384u /* threads of targets, switched out or not */
/*
 * Context switches come at their own rate, not the sampling frequency:
 * the off-CPU ring holds half a second of 20,000 switches a second per
 * CPU (a saturated PostgreSQL) of typical 512-byte records (a block's
 * start and end, bpf/offcpu.h, are ~250 bytes).
 */
#define SWITCHES_PER_CPU 20000u
#define BLOCK_RECORD_TYPICAL 512u

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
	uint64_t rate = (uint64_t)frequency * (cpus ? cpus : 1);
	uint64_t expected = rate * seconds;
	uint64_t bytes = expected * COUNTS_BYTES_PER_SAMPLE;

	out->expected_samples = expected;

	out->records_ring = pow2_clamp(rate * sizeof(struct stack_record),
				       RING_MIN, RING_MAX);
	out->blocks_ring =
		pow2_clamp((uint64_t)(cpus ? cpus : 1) * SWITCHES_PER_CPU *
				   BLOCK_RECORD_TYPICAL / 2,
			   RING_MIN, RING_MAX);
	out->counts_bytes = bytes < COUNTS_BYTES_MIN ? COUNTS_BYTES_MIN :
			    bytes > COUNTS_BYTES_MAX ? COUNTS_BYTES_MAX :
						       (size_t)bytes;
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
