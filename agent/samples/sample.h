/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sample.h - the sample model both profiling backends produce and the
 * symbolizer and encoders consume (docs/architecture.md, "One request, step by step").
 *
 *   backend (bpf | perf) ──▶ struct vm_samples ──▶ symbolize ──▶ pprof/folded
 *
 * A backend fills one struct vm_samples: the counted stacks, and for every
 * pid seen, what is needed to symbolize its user frames later, captured
 * while the process was alive (its mappings; its title for the PostgreSQL
 * backend type).  Kernel frames need nothing per process.
 *
 * Both backends fill it through the helpers below: the eBPF backend from
 * its maps, the perf backend from perf.data.
 */
#ifndef VMTOOLS_AGENT_SAMPLE_H
#define VMTOOLS_AGENT_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VM_COMM_LEN 16

/*
 * What a profile measures (docs/profiler.md): CPU samples, the time
 * threads spend switched out, or both in one wall-clock profile; or where
 * the targets' memory is now, or which code faulted memory in over a
 * window (docs/memory.md).
 */
enum vm_profile_kind {
	VM_KIND_CPU,
	VM_KIND_OFFCPU,
	VM_KIND_WALL,
	VM_KIND_MEMORY,
	VM_KIND_FAULTS,
	VM_KINDS
};

/* What an off-CPU block waited for: a CPU, an event, uninterruptibly. */
enum vm_sched_state {
	VM_SCHED_UNKNOWN,
	VM_SCHED_RUNNABLE,
	VM_SCHED_SLEEPING,
	VM_SCHED_UNINTERRUPTIBLE,
};

/* A sample's thread state in a wall-clock profile. */
enum vm_thread_state {
	VM_STATE_RUNNING, /* an on-CPU sample */
	VM_STATE_BLOCKED, /* off-CPU blocks */
};
#define VM_BUILD_ID_MAX 20 /* GNU build ids are 20 bytes (SHA-1) */

/* One stack with how many times it was sampled.  Frames innermost first. */
struct vm_sample {
	uint32_t pid; /* thread group id */
	uint32_t tid;
	char comm[VM_COMM_LEN]; /* of the thread, at sampling time */
	uint64_t count;
	uint32_t n_user;
	uint32_t n_kernel;
	uint64_t *user_ips;
	uint64_t *kernel_ips;
	/* VM_SAMPLE_LOST_*: a stack that was there but could not be kept */
	uint8_t lost;
	uint8_t state; /* enum vm_thread_state */
	/*
	 * Off-CPU blocks: VM_SCHED_*, what the thread was doing when switched
	 * out; 0 when not known.
	 */
	uint8_t sched_state;
	/* Off-CPU blocks: 1 when the block began before the profile. */
	uint8_t before_start;
	/* Memory: a context's type (enum vm_memctx_type) + 1; 0: none. */
	uint8_t memctx_type;
	/*
	 * Faults: the kind of mapping the faulting address was in (enum
	 * vm_fault_mapping, agent/samples/fault_maps.h); 0: none.
	 */
	uint8_t fault_mapping;
	/*
	 * Nanoseconds the count is worth: off-CPU blocks' total time; 0 for
	 * CPU samples, each worth the sampling period.  Bytes in a memory
	 * profile, and in a faults profile (its count is then faults).
	 */
	uint64_t value;
	/* PostgreSQL's, read from the backend; 0 when none or unknown */
	uint32_t wait_event; /* wait_event_info: see vm_process.pg_major */
	/* Memory: a context's ident, an index into vm_samples.names + 1. */
	uint32_t memctx_ident;
	uint64_t query_id;
};

#define VM_SAMPLE_LOST_USER 1
#define VM_SAMPLE_LOST_KERNEL 2

/* One executable mapping of a process, as /proc/PID/maps or MMAP2 says. */
struct vm_mapping {
	uint64_t start;
	uint64_t end;
	uint64_t pgoff; /* file offset of start */
	/* The file's device as st_dev numbers it (from maps); 0: unknown. */
	uint64_t dev;
	uint64_t ino; /* the file's inode (from maps); 0: unknown */
	char *path; /* as the process sees it; NULL for anonymous */
	uint8_t build_id[VM_BUILD_ID_MAX];
	uint8_t build_id_len; /* 0 when unknown */
	/*
	 * Where the symbolizer can open the file from the agent's mount
	 * namespace (e.g. /proc/PID/root/PATH, or a copy held open); NULL
	 * means use path.
	 */
	char *open_path;
};

/* What is known of one process (thread group) seen in the samples. */
struct vm_process {
	uint32_t pid;
	char comm[VM_COMM_LEN];
	char *title; /* /proc/PID/cmdline as ps shows it, may be NULL */
	struct vm_mapping *maps;
	size_t n_maps;
	size_t cap_maps;
	bool exited; /* gone before the profile ended */
	/*
	 * PostgreSQL's major version when the process is PostgreSQL of a
	 * version whose layout is known (agent/symbolize/pgwait.h), else 0.
	 */
	unsigned pg_major;
	/* its minor release, VM_PG_MINOR_UNKNOWN when it could not be read */
	unsigned pg_minor;
};

/* Everything one profile collected. */
struct vm_samples {
	struct vm_sample *v;
	size_t n;
	size_t cap;
	struct vm_process *procs;
	size_t n_procs;
	size_t cap_procs;
	enum vm_profile_kind kind;
	uint32_t frequency; /* Hz the samples were taken at */
	/* Faults: one sample every fault_period faults of page_size bytes */
	uint32_t fault_period;
	uint32_t page_size;
	uint64_t time_nanos; /* start, CLOCK_REALTIME */
	uint64_t duration_nanos;
	uint64_t lost_stacks; /* -EEXIST/-ENOMEM from the stack map, etc. */
	uint64_t lost_samples; /* counts that could not be recorded at all */
	/*
	 * User stacks walked in user space with unwind tables (perf's
	 * --call-graph dwarf): the callers found from a table and those by
	 * frame pointer where no table covered the pc; both 0 when the
	 * kernel walked the frame pointers.
	 */
	uint64_t unwound_by_table, unwound_by_frame_pointer;
	/*
	 * Walks with unwind tables cut short (a read that failed, a frame
	 * that did not move up the stack), binaries left without tables
	 * or with functions cut short (past the BPF store's bound, or a
	 * bound of the table's build), and processes past the BPF maps'
	 * bounds (too many executable mappings, too many processes): their
	 * frames by frame pointer.
	 */
	uint64_t unwind_cut, unwind_binaries_skipped, unwind_processes_skipped;
	/*
	 * Why sampling ended before the time asked, by a bound of the
	 * backend's own ("" when it did not): said in the profile.
	 */
	char ended_early[192];
	/*
	 * A memory profile's frames are names, not addresses: user_ips[]
	 * index names[] (outermost last, as any stack).
	 */
	char **names;
	size_t n_names, cap_names;
	/*
	 * A difference of two memory snapshots (the history's growth view):
	 * each sample's count and value are int64_t stored as uint64_t, a
	 * negative one being memory given back.
	 */
	bool signed_values;
	/* More lines for the profile's comments, each ending in '\n'. */
	char *notes;
	size_t notes_len;
	/*
	 * Files held open so that processes which exit before the end can
	 * still be symbolized (open_path "/proc/self/fd/N" names them).
	 * Closed by vm_samples_free().
	 */
	int *held_fds;
	size_t n_held_fds;
	size_t cap_held_fds;
};

/*
 * Helpers for filling a struct vm_samples (sample.c).  The struct starts
 * zeroed; everything it points to is owned by it.
 */

/* Append a sample; copies the ips.  -ENOMEM on failure. */
int vm_samples_add(struct vm_samples *s, uint32_t pid, uint32_t tid,
		   const char *comm, uint64_t count, const uint64_t *user_ips,
		   uint32_t n_user, const uint64_t *kernel_ips,
		   uint32_t n_kernel);

/* The process entry for pid, NULL when none. */
struct vm_process *vm_samples_find_process(const struct vm_samples *s,
					   uint32_t pid);

/* The process entry for pid, created empty when missing; NULL on ENOMEM. */
struct vm_process *vm_samples_get_process(struct vm_samples *s, uint32_t pid);

/* Append a mapping to p (strings copied).  -ENOMEM on failure. */
int vm_process_add_mapping(struct vm_process *p, const struct vm_mapping *m);

/* Release the mappings and title of p, leaving it empty with its pid. */
void vm_process_clear(struct vm_process *p);

/* A copy of name kept in s->names, its index in *idx.  -ENOMEM. */
int vm_samples_add_name(struct vm_samples *s, const char *name, uint32_t *idx);

/* One more line for the profile's comments (printf).  -ENOMEM. */
int vm_samples_note(struct vm_samples *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Keep fd open until vm_samples_free(); takes ownership.  -ENOMEM. */
int vm_samples_hold_fd(struct vm_samples *s, int fd);
/* Close fd, held by s, and forget it. */
void vm_samples_release_fd(struct vm_samples *s, int fd);

void vm_samples_free(struct vm_samples *s);

#endif
