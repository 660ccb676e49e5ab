// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_faults.c - the user side of the faults profiler (bpf_int.h): the
 * CPU profiler's object with its page-fault program (bpf/profile.bpf.c,
 * attached by bpf_cpu.c), whose records carry the faulting address.  The
 * reader thread tells each address's mapping as it reads the record
 * (agent/samples/fault_maps.h), while the mapping most likely still
 * exists, and counts the record with that kind in place of the address,
 * so faults of one stack into one kind of mapping are one sample.  At the
 * end of a profile, or of a continuous session's window, each sample's
 * records become faults (times the period) and bytes (times the page
 * size).
 */
#include "agent/profile/bpf/bpf_int.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/satmath.h"

int vm_bpf_faults_on_record(void *ctx, void *data, size_t size)
{
	struct record_sink *sink = ctx;
	struct stack_record rec;

	/* A malformed record is counted as such, address or not. */
	if (size < STACK_RECORD_HEAD || size > sizeof(rec)) {
		vm_stack_counts_add(&sink->counts, data, size);
		return 0;
	}
	memcpy(&rec, data, size);
	rec.fault_addr = vm_fault_maps_classify(&sink->st->fault_maps, rec.pid,
						rec.fault_addr,
						vm_clock_ns(CLOCK_MONOTONIC));
	vm_stack_counts_add(&sink->counts, &rec, size);
	return 0;
}

int vm_bpf_faults_finish(const struct bpf_state *st, struct vm_samples *s,
			 struct vm_error *err)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t unmapped = 0;

	s->fault_period = st->req.period;
	s->page_size = page > 0 ? (uint32_t)page : 4096;
	for (size_t i = 0; i < s->n; i++) {
		struct vm_sample *x = &s->v[i];

		if (x->fault_mapping == VM_FAULT_UNMAPPED)
			unmapped += x->count;
		x->count = vm_sat_mul_u64(x->count, s->fault_period);
		x->value = vm_sat_mul_u64(x->count, s->page_size);
	}
	if (vm_samples_note(
		    s,
		    "vmtools: one sample every %u page faults; bytes are faults x %u-byte pages (a fault that maps a huge page counts one page)\n",
		    s->fault_period, s->page_size) < 0 ||
	    (unmapped &&
	     vm_samples_note(
		     s,
		     "vmtools: %llu samples faulted in a mapping gone before it was looked up (fault_mapping=unmapped)\n",
		     (unsigned long long)unmapped) < 0))
		return vm_error_set(err, ENOMEM, "out of memory");
	return 0;
}
