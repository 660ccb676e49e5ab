/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.h - one profiling session, whatever the backend: the interface the
 * REST service (agent/serve/service.c) and the one-shot CLI
 * (agent/cmd_profile.c) both drive.
 *
 *   vm_session_start()   validate, load/attach or spawn the backend
 *   vm_session_wait()    block until the time is up or vm_session_stop()
 *   vm_session_stop()    from any thread: end early (DELETE, SIGTERM,
 *                        client hung up); the profile so far is kept
 *   vm_session_status()  from any thread: elapsed, samples so far
 *   vm_session_finish()  detach, collect, symbolize, encode (+ gzip)
 *   vm_session_collect() or, instead of finish: collect and symbolize,
 *                        the model handed out unencoded (continuous
 *                        memory snapshots keep it in their history)
 *   vm_session_free()    release everything; safe on every path
 *   vm_session_seal()    continuous sessions: the window so far, while
 *                        sampling goes on into the next one
 *   vm_engine_release()  when no session runs (the agent stopping): what
 *                        backends keep in a context from one profile
 *                        for the next
 *   vm_engine_backend_status()  what a backend has learned in a context
 *                        since the agent started, for /healthz
 *
 * Errors come back as a negative errno plus a sentence in struct vm_error;
 * -ENODEV / -EPERM / -ENOENT from start mean the backend is unavailable,
 * -EINVAL / -ESRCH that a request field is wrong (frequency, seconds,
 * comm, pid); the REST service turns these into its statuses.
 *
 * Sessions are independent: several may run at once, and how many is the
 * caller's rule (the REST service takes one on-demand profile at a time).
 * stop() and status() may run on any thread (stop() also in a signal
 * handler) until free() is called; the caller keeps free() from racing
 * with them.
 */
#ifndef VMTOOLS_AGENT_ENGINE_H
#define VMTOOLS_AGENT_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/encode/encode.h"
#include "agent/profile/context.h"
#include "agent/profile/limits.h"
#include "agent/samples/sample.h"
#include "common/error.h"

enum vm_profiler {
	VM_PROFILER_BPF, /* "BccProfile" in the API */
	VM_PROFILER_PERF, /* "Perf" */
};

struct vm_profile_request {
	enum vm_profile_kind kind; /* cpu, offcpu, wall, memory or faults */
	enum vm_profiler profiler;
	uint32_t frequency; /* Hz; the rules are in limits.h */
	uint32_t seconds;
	const char *comms[VM_MAX_TARGETS]; /* command names to sample */
	size_t n_comms;
	pid_t pids[VM_MAX_TARGETS]; /* and/or these processes */
	size_t n_pids;
	enum vm_format format;
	bool gzip;
	/*
	 * A continuous session (bpf only; cpu or faults): it runs until
	 * stopped, and
	 * vm_session_seal() hands out one window at a time; seconds is then
	 * the length of a window, what the backend sizes its maps for.
	 */
	bool continuous;
	/* off-CPU blocks shorter than this are left out (offcpu only) */
	uint32_t min_block_us;
	/* faults: one sample every this many page faults */
	uint32_t period;
};

/* Fixed when the agent starts; never taken from a request. */
struct vm_engine_config {
	const char *perf_path; /* the perf to run for VM_PROFILER_PERF */
	/*
	 * The most perf.data a perf profile may write (perf/perf_bound.h):
	 * 0 for the bound of its frequency and seconds, never more than
	 * VM_PERF_DATA_MAX; tests lower it.
	 */
	uint64_t perf_data_max;
	/*
	 * What the agent keeps across sessions (context.h), made by its
	 * command, with what each backend keeps (backend.h); NULL: nothing
	 * kept, symbols read for each profile, user stacks walked with the
	 * vDSO's table or by frame pointer only, and what a backend learns
	 * (where the user registers are) learned again by each session.
	 */
	struct vm_agent_ctx *ctx;
};

#define VM_PERF_DEFAULT_MOUNTPOINT "/run/vm-tools"

/*
 * Which perf the perf backend runs (perf/perf_locate.c), for perf_path:
 * in order, override (the agent's own --perf PATH, fixed at start-up,
 * never taken from a request), the "perf" tool of the tools image
 * mounted at mountpoint (its launcher, as the image manifest names it;
 * NULL: VM_PERF_DEFAULT_MOUNTPOINT), then the first perf on PATH.
 *
 * *out gets a malloc'd absolute path to an executable.  -ENOENT when there
 * is none; err then names every place we looked.  An override that is not
 * an executable file, or a bare name such as "perf", falls through to the
 * manifest and PATH, in that order (the brief's order of preference; the
 * engine's callers pass a default path that may not exist).
 */
int vm_perf_locate(const char *override, const char *mountpoint, char **out,
		   struct vm_error *err);

struct vm_profile_output {
	void *data; /* malloc'd, owned by the caller after finish */
	size_t len;
	const char *content_type; /* static string */
	const char *filename; /* static: profile.pb, profile.pb.gz, ... */
	uint64_t samples; /* total sample count */
	uint64_t lost; /* lost or colliding stacks */
	/* user stacks' callers found by unwind tables, by frame pointer */
	uint64_t unwound_by_table, unwound_by_frame_pointer;
	/* processes walked by frame pointer: past the unwinder's bounds */
	uint64_t unwind_processes_skipped;
	/* walks cut short: a bad read, no progress, off the stack or code */
	uint64_t unwind_cut;
};

struct vm_session_status {
	enum vm_profile_kind kind;
	enum vm_profiler profiler;
	uint32_t frequency;
	uint32_t seconds; /* requested */
	uint64_t started_unix_ms;
	uint64_t elapsed_ms;
	uint64_t samples; /* so far */
	bool stopping;
};

struct vm_session;
struct vm_samples;
struct vm_symbolized;

int vm_session_start(const struct vm_profile_request *req,
		     const struct vm_engine_config *cfg,
		     struct vm_session **out, struct vm_error *err);
int vm_session_wait(struct vm_session *s, struct vm_error *err);
void vm_session_stop(struct vm_session *s);
void vm_session_status(struct vm_session *s, struct vm_session_status *st);
int vm_session_finish(struct vm_session *s, struct vm_profile_output *out,
		      struct vm_error *err);
/*
 * vm_session_finish() without encoding: the samples into *samples,
 * symbolized into *y (which points into *samples); the caller frees both
 * (vm_symbolized_free, then vm_samples_free), also on failure.
 */
int vm_session_collect(struct vm_session *s, struct vm_samples *samples,
		       struct vm_symbolized *y, struct vm_error *err);
void vm_session_free(struct vm_session *s);
/* What the backends keep in ctx from one profile for the next let go. */
void vm_engine_release(struct vm_agent_ctx *ctx);

/*
 * A continuous session's window: the samples since the previous seal (or
 * the start) into *samples, symbolized into *y (which points into
 * *samples); sampling goes on into the next window from the same instant,
 * so windows neither overlap nor leave a gap.  samples->time_nanos and
 * duration_nanos say when the window was.  The caller frees both
 * (vm_symbolized_free, then vm_samples_free).  Not concurrently with
 * another seal or finish of the same session.
 */
int vm_session_seal(struct vm_session *s, struct vm_samples *samples,
		    struct vm_symbolized *y, struct vm_error *err);

const char *vm_profiler_name(enum vm_profiler p); /* "BccProfile", "Perf" */

/*
 * What a backend has learned since the agent started, for /healthz: each
 * backend fills what it knows, the rest stays zero (the perf backend
 * knows none of it).
 */
struct vm_backend_status {
	/*
	 * Where the kernel keeps a task's user registers, measured on the
	 * first call (bpf): the programs unwind user stacks from samples
	 * taken in the kernel with them.  Not found: a sentence saying why,
	 * and such stacks are walked by frame pointer.
	 */
	bool user_regs_found;
	uint32_t user_regs_stack_offset; /* task_struct's stack pointer */
	uint32_t user_regs_thread_size; /* the kernel stack's size */
	char user_regs_error[256];
	/*
	 * Binaries the profiles left without unwind tables for the programs
	 * (past the store, code spanning 4 GiB), and the last one's path and
	 * why ("" if none).
	 */
	/*
	 * The BPF programs' store of rows: runs of rows (one per table,
	 * shared by files with equal tables) and the rows they take.
	 */
	uint64_t unwind_store_runs, unwind_store_rows;
	/*
	 * Walks of user stacks the BPF programs cut short since start: a
	 * read that failed, no progress, off the stack or the code.
	 */
	uint64_t unwind_walks_cut;
	uint64_t unwind_store_skipped;
	char unwind_store_last_skipped[256];
	/*
	 * Processes the profiles walked by frame pointer because they were
	 * past the programs' bounds (more executable mappings than one
	 * process's entry holds, more processes than their map), and the
	 * last one's pid, name and why ("" if none).
	 */
	uint64_t unwind_procs_skipped;
	char unwind_procs_last_skipped[256];
	/*
	 * The kernel refused the programs with the unwinder (its verifier's
	 * last words; "" if never): stacks are walked by frame pointer.
	 */
	char unwind_refused[256];
	/*
	 * Why the last profile that saw a PostgreSQL of a version without a
	 * table left its wait event and query id labels out ("" if none).
	 */
	char pg_labels_note[256];
};

/*
 * What backend p has learned so far in ctx (its status operation,
 * backend.h); measured now for this call alone without a context.
 */
void vm_engine_backend_status(struct vm_agent_ctx *ctx, enum vm_profiler p,
			      struct vm_backend_status *out);

#endif
