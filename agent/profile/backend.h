/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backend.h - what a profiling backend provides to the engine (engine.c).
 *
 * The bpf backend (bpf/bpf_backend.c) and the perf backend
 * (perf/perf_backend.c) each export one struct vm_backend_ops.  Both end
 * in the same struct vm_samples (agent/samples/sample.h); the engine then
 * symbolizes and encodes once.
 */
#ifndef VMTOOLS_AGENT_BACKEND_H
#define VMTOOLS_AGENT_BACKEND_H

#include "agent/profile/engine.h"
#include "agent/samples/sample.h"

/*
 * Called by a backend, on any thread, when it has captured a target's
 * mappings while sampling: the engine starts reading the symbols of the
 * files p maps, so that the end of the profile finds them ready, into
 * symbols (the engine config's context's: a backend calls
 * seen(cfg->ctx->symbols, p), NULL without a context).
 * The backend holds its own lock over p for the call.
 */
typedef void vm_process_seen_fn(struct vm_symcache *symbols,
				const struct vm_process *p);

struct vm_backend_ops {
	const char *name;
	/*
	 * What the backend keeps for the agent's life (what one profile
	 * leaves for the next, what it learns of the kernel), instead of
	 * file-scope variables: one per agent context, made by the engine
	 * at the backend's first use in it and freed with the context
	 * (context.h); a session without a context has one of its own.
	 * kept_new: NULL when out of memory.  Both NULL: it keeps nothing,
	 * and the operations below are given NULL.
	 */
	void *(*kept_new)(void);
	void (*kept_free)(void *kept);
	/*
	 * Load/attach or spawn; *state is the session's own, kept what the
	 * backend keeps for the agent's life (kept_new).  kept, req (and
	 * the strings it points to) stay valid until destroy().  seen may
	 * be called from start() until destroy().
	 */
	int (*start)(const struct vm_profile_request *req,
		     const struct vm_engine_config *cfg, void *kept,
		     vm_process_seen_fn *seen, void **state,
		     struct vm_error *err);
	/*
	 * Samples so far, cheap, from any thread, also while collect() runs
	 * (never after destroy); 0 when unknown.
	 */
	uint64_t (*samples_so_far)(void *state);
	/*
	 * A descriptor that becomes readable when sampling has ended by
	 * itself before the time asked (a bound of the backend's reached),
	 * so that the wait ends then; NULL, or -1: it never does.
	 */
	int (*ended_fd)(void *state);
	/*
	 * Stop sampling (detach / signal perf), then read everything into
	 * out.  Called once, after the wait ended.  Fill out with the helpers
	 * of sample.h (vm_samples_add, vm_samples_get_process, ...); the
	 * engine sets frequency, time_nanos and duration_nanos when left 0.
	 */
	int (*collect)(void *state, struct vm_samples *out,
		       struct vm_error *err);
	/*
	 * Continuous sessions only (NULL when the backend has none): switch
	 * sampling to a fresh window without stopping it and read the one
	 * that ended into out, as collect() would.
	 */
	int (*seal)(void *state, struct vm_samples *out, struct vm_error *err);
	/* Release everything; must be safe after a failed start/collect. */
	void (*destroy)(void *state);
	/*
	 * What kept holds from one profile for the next let go, when no
	 * profile runs (NULL: it holds nothing such).
	 */
	void (*release)(void *kept);
	/*
	 * What the backend has learned in kept, into out (zeroed by the
	 * caller), from any thread, whether a profile runs or not (NULL:
	 * nothing to say).  engine.h says what each field means.
	 */
	void (*status)(void *kept, struct vm_backend_status *out);
	/*
	 * What can be learned of the kernel before any profile, learned
	 * into kept now, once (NULL: nothing): a long-running agent calls
	 * it at start, so that what the kernel refuses is in its status
	 * from then on, not found out by the first profile.
	 */
	void (*prepare)(void *kept);
};

extern const struct vm_backend_ops vm_bpf_backend;
extern const struct vm_backend_ops vm_perf_backend;
/* The memory snapshot (memory.c): the kind memory, whatever the profiler. */
extern const struct vm_backend_ops vm_memory_backend;

#endif
