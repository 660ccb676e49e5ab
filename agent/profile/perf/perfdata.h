/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perfdata.h - reads a perf.data file (the format `perf record` writes,
 * tools/perf/Documentation/perf.data-file-format.txt) into the sample model
 * of sample.h, keeping only the target processes.
 *
 * Pure logic over a byte buffer: no file, process or /proc access, so it is
 * unit-tested with hand-built files and fuzzed.  The perf backend
 * (perf_backend.c) maps the file perf wrote and adds what needs I/O
 * (open_path, process titles) afterwards.
 *
 *   perfdata.c          file header, attributes, feature sections, the
 *                       record index sorted by time, then the replay
 *   perfdata_record.c   decoding one record: SAMPLE (laid out by the
 *                       attribute's sample_type), MMAP/MMAP2, COMM, FORK,
 *                       EXIT, LOST
 *   perfdata_model.c    threads, processes, mappings and the target filter
 *                       replayed from those records; stacks aggregated into
 *                       struct vm_samples
 */
#ifndef VMTOOLS_AGENT_PERFDATA_H
#define VMTOOLS_AGENT_PERFDATA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/binaries/binaries.h"
#include "agent/samples/sample.h"
#include "common/error.h"

/*
 * Which samples to keep: those of a thread whose command name (at sampling
 * time) is one of comms, or of a process in pids or forked from one of them
 * while recording.  The same selection as the eBPF backend.  Both empty means
 * comm "postgres".  Never kept: the idle task (pid 0) and the processes in
 * exclude (the agent itself and its perf).
 */
struct vm_perfdata_filter {
	const char *const *comms;
	size_t n_comms;
	const pid_t *pids;
	size_t n_pids;
	const pid_t *exclude;
	size_t n_exclude;
	/* Where unwind tables are kept; NULL: --call-graph dwarf unused. */
	struct vm_binaries *binaries;
	struct vm_iopool *iopool; /* what reads the targets' files */
};

/* What the file held besides the kept samples; for errors and tests. */
struct vm_perfdata_stats {
	uint64_t records; /* records in the data section */
	uint64_t samples; /* PERF_RECORD_SAMPLE, of every process */
	uint64_t kept; /* samples of target processes */
	uint64_t build_ids; /* entries of the HEADER_BUILD_ID feature */
};

/*
 * Parse buf (a whole perf.data file) and add the samples of the target
 * processes to out, with the mappings and exit state of those processes.
 * out must be zeroed; release it with vm_samples_free() (sample.c), on
 * failure too.  Returns 0, or -EBADMSG (with
 * a sentence in err naming what is wrong and where) for a file that is not
 * perf.data, is truncated or inconsistent, or -ENOMEM.  stats may be NULL.
 */
int vm_perfdata_read(const uint8_t *buf, size_t len,
		     const struct vm_perfdata_filter *filter,
		     struct vm_samples *out, struct vm_perfdata_stats *stats,
		     struct vm_error *err);

/*
 * Counting the kept samples of a perf.data while perf still writes it (for
 * "samples so far"): feed the file's bytes in order, in pieces of any size,
 * as they appear.  Records are taken in file order, so the count may differ
 * from vm_perfdata_read()'s near forks; it is a progress figure.  Once the
 * bytes stop making sense the count stays where it was.
 */
struct vm_perfdata_counter;

int vm_perfdata_counter_new(const struct vm_perfdata_filter *filter,
			    struct vm_perfdata_counter **out);
/* Returns the samples of target processes seen so far. */
uint64_t vm_perfdata_counter_feed(struct vm_perfdata_counter *c,
				  const uint8_t *data, size_t len);
void vm_perfdata_counter_free(struct vm_perfdata_counter *c);

#endif
