/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_int.h - the eBPF backend's own header: the state of one session,
 * shared by its files, and what each offers those above it.  The files
 * are a stack; each calls only those below:
 *
 *   bpf_backend.c   loads, attaches, reads the ring buffer, ends (top)
 *   bpf_cpu.c       the CPU profiler's driver (bpf/profile.bpf.c)
 *   bpf_offcpu.c    the off-CPU profiler's driver (bpf/offcpu.bpf.c)
 *   bpf_faults.c    the faults profiler's records (bpf/profile.bpf.c)
 *   bpf_capture.c   the processes followed
 *   bpf_core.c      the state, the maps both programs have (bottom)
 *
 * beside the libraries they use: bpf_stack_counts.c (counting records),
 * bpf_blocks.c (joining blocks), bpf_preblocked.c, bpf_pg.c,
 * bpf_sizing.c, bpf_unwind.c (unwind tables) and bpf_calibrate.c, and
 * what the backend keeps for the agent's life (bpf_kept.c).
 */
#ifndef VMTOOLS_AGENT_BPF_INT_H
#define VMTOOLS_AGENT_BPF_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <linux/types.h>

#include "agent/profile/backend.h"
#include "agent/profile/bpf/bpf_blocks.h"
#include "agent/profile/bpf/bpf_calibrate.h"
#include "agent/profile/bpf/bpf_kept.h"
#include "agent/profile/bpf/bpf_pg.h"
#include "agent/profile/bpf/bpf_preblocked.h"
#include "agent/profile/bpf/bpf_stack_counts.h"
#include "agent/profile/bpf/bpf_sizing.h"
#include "agent/profile/bpf/bpf_unwind.h"
#include "agent/samples/fault_maps.h"
#include "agent/samples/proc.h"
#include "bpf/offcpu.skel.h"
#include "bpf/profile.h"
#include "bpf/profile.skel.h"

/* The BPF side's filter holds every command name a request may give. */
_Static_assert(PROFILE_MAX_COMMS >= VM_MAX_TARGETS,
	       "target_comms is smaller than VM_MAX_TARGETS");
_Static_assert(PROFILE_COMM_LEN == VM_COMM_LEN,
	       "the BPF side's command names are not VM_COMM_LEN long");
_Static_assert((int)PROFILE_SCHED_RUNNABLE == (int)VM_SCHED_RUNNABLE &&
		       (int)PROFILE_SCHED_SLEEPING == (int)VM_SCHED_SLEEPING &&
		       (int)PROFILE_SCHED_UNINTERRUPTIBLE ==
			       (int)VM_SCHED_UNINTERRUPTIBLE,
	       "the BPF side's scheduler states are not the sample model's");

struct fork_rec {
	uint32_t pid, ppid;
};

/* The objects a profile of any kind loads: at most both programs. */
#define MAX_OBJS 2

struct bpf_state {
	/* What the backend keeps for the agent's life (the engine's). */
	struct vm_bpf_kept *kept;
	struct profile_bpf *skel; /* the CPU profiler; NULL for offcpu */
	struct offcpu_bpf *off; /* the off-CPU profiler; NULL for cpu */
	struct bpf_object *objs[MAX_OBJS]; /* those loaded, either way */
	size_t n_objs;
	struct bpf_link **tp_links; /* their raw tracepoints */
	size_t n_tp_links;
	/* Each object's records, counted by the reader thread, then collect. */
	struct record_sink {
		struct bpf_state *st;
		struct vm_stack_counts counts;
	} sinks[MAX_OBJS];
	/* The off-CPU program's blocks, started and not yet ended. */
	struct vm_offcpu_join join;
	/* What is known per binary: PostgreSQL facts, unwind tables. */
	struct vm_binaries *binaries;
	struct vm_iopool *iopool; /* reads of the targets' files */
	/* The unwind tables the programs walk user stacks with. */
	struct vm_bpf_unwind unwind;
	bool unwinding; /* unwind has its maps: the programs use them */
	uint64_t cut_told; /* walks cut, as told to the store so far */
	uint64_t start_ns; /* CLOCK_MONOTONIC when everything was attached */
	uint32_t *running; /* the targets running as the profile starts */
	size_t n_running;
	/* off-CPU: the targets' threads as the profile started */
	struct vm_thread_switches *threads;
	size_t n_threads, cap_threads;
	/* off-CPU: the targets' threads blocked before the programs attached */
	struct vm_pre_blocked_set pre;
	int *perf_fds;
	struct bpf_link **links;
	size_t n_cpus;
	int possible_cpus;
	struct ring_buffer *rb; /* events and stack_records of each object */
	pthread_t thread;
	bool thread_started;
	pthread_t capturer; /* captures the targets already running */
	bool capturer_started;
	int stop_fd;
	pthread_mutex_t lock; /* samples.procs, files, forks */
	struct vm_samples samples;
	struct vm_proc_files files;
	/* faults: the targets' mappings, read by the reader thread only */
	struct vm_fault_maps fault_maps;
	struct fork_rec *forks;
	size_t n_forks, cap_forks;
	uint32_t *execed; /* pids to capture again: they ran execve() */
	size_t n_execed, cap_execed;
	bool detached;
	pthread_t releaser; /* detaches the tracepoints, see detach() */
	bool releaser_started;
	/*
	 * Continuous sessions (bpf_seal): the reader thread cuts a window
	 * when seal_fd is written, right after draining the ring buffer, and
	 * leaves it in `sealed` with seal_done raised (under lock).
	 */
	int seal_fd;
	pthread_cond_t sealed_cond;
	uint64_t seal_asked, seal_done;
	struct vm_stack_counts sealed;
	size_t counts_bytes; /* the bound of each window's counts */
	uint64_t stats_sealed[PROFILE_STAT_NR]; /* stats at the last seal */
	/* The session's request: it outlives this state (engine.c). */
	struct vm_profile_request req;
	vm_process_seen_fn *seen; /* the engine's, see backend.h */
	struct vm_symcache *symbols; /* what seen is given */
};

/* What the target filter of every program sees (targets.bpf.h). */
#define SET_FILTER(skel, req)                                     \
	do {                                                      \
		(skel)->rodata->filter_comm = (req)->n_comms > 0; \
		(skel)->rodata->filter_pid = (req)->n_pids > 0;   \
		(skel)->rodata->self_tgid = getpid();             \
	} while (0)

/*
 * Whether the programs walk user stacks with the session's unwind tables,
 * and where the user registers are (bpf/unwind.bpf.h).
 */
#define SET_UNWIND(skel, st)                                     \
	do {                                                     \
		const struct vm_user_regs_where *w_ =            \
			vm_bpf_user_regs(&(st)->kept->regs);     \
		(skel)->rodata->unwind_tables = (st)->unwinding; \
		(skel)->rodata->regs_stack_off = w_->stack_off;  \
		(skel)->rodata->regs_thread_size =               \
			w_->found ? w_->thread_size : 0;         \
	} while (0)

/* bpf_core.c */

/* The map name of obj's file descriptor. */
int vm_bpf_map_fd(struct bpf_object *obj, const char *name);
void vm_bpf_set_size(struct bpf_object *obj, const char *name, uint32_t n);
void vm_bpf_add_object(struct bpf_state *st, struct bpf_object *obj,
		       const struct vm_bpf_sizes *sz);
int vm_bpf_fill_targets(struct bpf_object *obj,
			const struct vm_profile_request *req,
			struct vm_error *err);
int vm_bpf_new_state(const struct vm_profile_request *req,
		     const struct vm_engine_config *cfg, void *kept,
		     vm_process_seen_fn *seen, void **state,
		     struct vm_error *err);
size_t vm_bpf_obj_index(const struct bpf_state *st, struct bpf_object *obj);
uint64_t vm_bpf_stat_sum(struct bpf_state *st, uint32_t idx);
/*
 * The walks cut since the last call told to the kept store, for
 * /healthz; the session's walks cut so far.
 */
uint64_t vm_bpf_tell_cut(struct bpf_state *st);

/* bpf_capture.c */

/* Reread a process's title (PostgreSQL sets it after the fork). */
void vm_bpf_refresh_title(struct vm_process *p);
/* The ring buffer's callback for the programs' `events`. */
int vm_bpf_on_event(void *ctx, void *data, size_t size);
/* The thread that captures the targets running as the profile starts. */
void *vm_bpf_capture_running(void *arg);
/* The targets running now, told to the programs before they attach. */
void vm_bpf_find_running(struct bpf_state *st);
/* Processes sampled but never captured: now, or from their parent. */
void vm_bpf_complete_processes(struct bpf_state *st);

/* bpf_cpu.c */

int vm_bpf_cpu_open(struct bpf_state *st, const struct vm_profile_request *req,
		    const struct vm_bpf_sizes *sz, struct vm_error *err);
int vm_bpf_cpu_attach(struct bpf_state *st, const int *cpus, size_t n_online,
		      struct vm_error *err);
/* Cut a continuous session's window (the reader thread, seal_fd). */
void vm_bpf_cut_window(struct bpf_state *st);
/* The backend's seal(): a continuous session's window. */
int vm_bpf_cpu_seal(void *state, struct vm_samples *out, struct vm_error *err);

/* bpf_faults.c */

/*
 * The ring buffer's callback for the faults program's records (ctx: the
 * object's struct record_sink): each counted with its mapping's kind.
 */
int vm_bpf_faults_on_record(void *ctx, void *data, size_t size);
/*
 * The faults counted into s (the profile's, or a window's): each sample's
 * faults and bytes, the period and page size, said in its notes.
 */
int vm_bpf_faults_finish(const struct bpf_state *st, struct vm_samples *s,
			 struct vm_error *err);

/* bpf_offcpu.c */

int vm_bpf_offcpu_open(struct bpf_state *st,
		       const struct vm_profile_request *req, size_t n_online,
		       struct vm_bpf_sizes *sz, struct vm_error *err);
/* The ring buffer's callback for the off-CPU program's records. */
int vm_bpf_offcpu_on_record(void *ctx, void *data, size_t size);
/* The blocks of the profile ending at end_ns, into st->samples. */
int vm_bpf_offcpu_collect(struct bpf_state *st, uint64_t end_ns,
			  struct vm_error *err);

#endif
