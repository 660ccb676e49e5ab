// SPDX-License-Identifier: Apache-2.0
/*
 * perf_bound.c - the bound on the perf.data of one perf profile
 * (perf_bound.h).
 */
#include "agent/profile/perf/perf_bound.h"

uint64_t vm_perf_data_bound(uint32_t seconds, uint32_t frequency, unsigned cpus,
			    bool dwarf, uint64_t max)
{
	uint64_t cap = max && max < VM_PERF_DATA_MAX ? max : VM_PERF_DATA_MAX;
	uint64_t sample =
		VM_PERF_SAMPLE_BYTES + (dwarf ? VM_PERF_DWARF_STACK : 0);
	/* Two 32-bit numbers: their product cannot wrap. */
	uint64_t samples = (uint64_t)frequency * (cpus ? cpus : 1);
	uint64_t per_second, bound;

	if (samples > cap / sample)
		return cap;
	per_second = samples * sample + VM_PERF_DATA_PER_SECOND;
	if (seconds && per_second > cap / seconds)
		return cap;
	bound = per_second * seconds + VM_PERF_DATA_BASE;
	return bound < cap ? bound : cap;
}
