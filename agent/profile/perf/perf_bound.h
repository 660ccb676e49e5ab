/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perf_bound.h - how much perf.data one profile of the perf backend may
 * write (perf_bound.c): room for every sample the request's frequency and
 * seconds can take on every CPU, and for what perf records besides (the
 * processes and mappings it finds at its start, those made since), never
 * more than VM_PERF_DATA_MAX.  perf_backend.c gives it to `perf record
 * --max-size`, which stops recording there: the profile then ends early
 * and its comment says so.  Pure arithmetic, unit-tested.
 */
#ifndef VMTOOLS_AGENT_PERF_BOUND_H
#define VMTOOLS_AGENT_PERF_BOUND_H

#include <stdbool.h>
#include <stdint.h>

/* The most perf.data one profile may write, whatever it asks for. */
#define VM_PERF_DATA_MAX (256ull << 20)
/*
 * Room for what perf writes before and beside the samples: the header,
 * a record per process and mapping alive at its start, and per second
 * those of processes started, exec'd or mapping files since.
 */
#define VM_PERF_DATA_BASE (16ull << 20)
#define VM_PERF_DATA_PER_SECOND (1ull << 20)
/* The user stack each --call-graph dwarf sample copies, bytes. */
#define VM_PERF_DWARF_STACK 16384
/*
 * A sample's bytes besides that copy: its header and fields, a call
 * chain of at most 127 frames and the context marks, the user registers.
 */
#define VM_PERF_SAMPLE_BYTES 2048

/*
 * The bound for a profile of seconds at frequency Hz on cpus CPUs, with
 * --call-graph dwarf (dwarf) or frame-pointer chains, never more than
 * max (0: VM_PERF_DATA_MAX, and never more than it either).
 */
uint64_t vm_perf_data_bound(uint32_t seconds, uint32_t frequency, unsigned cpus,
			    bool dwarf, uint64_t max);

#endif
