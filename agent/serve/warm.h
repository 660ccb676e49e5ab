/* SPDX-License-Identifier: Apache-2.0 */
/*
 * warm.h - the target binaries' unwind tables and symbols made before a
 * profile asks for them (warm.c), so that the first profile of a `serve`
 * costs what the hundredth does.
 *
 * One thread looks at the targets `serve` profiles by default (its
 * --comm names) when it starts and again every interval: a target it has
 * not seen before (a new backend, a process that exec'd a target's
 * binary) has its mappings read, and each file none of them mapped
 * before gets its unwind table (agent/unwind/unwind_cache.h) and its
 * symbols (agent/symbolize/symcache.h) kept in the agent's home of
 * binaries, one file at a time.  The files are opened the way a profile
 * opens them (through /proc/PID/map_files, or /proc/PID/root, by the I/O
 * pool).  The tables, the bulk of the work and read under no lock, are
 * built on workers of a pool of the warmer's own at nice 19, the lowest
 * priority a thread may give itself: a request never waits behind them.
 * The symbols are read as a profile reads them, on the context's pool at
 * the agent's priority, because a profile waits for the symbol cache's
 * lock while they are: one file's read at nice 19 on a busy machine
 * would hold it for seconds.  While an on-demand profile runs, the
 * warmer waits for it to end before the next file, and what that profile
 * built is not built again.
 */
#ifndef VMTOOLS_AGENT_WARM_H
#define VMTOOLS_AGENT_WARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/profile/context.h"
#include "common/error.h"

/* How often the targets are looked at again for new ones. */
#define VM_WARM_INTERVAL_MS 5000
/* Files remembered as warmed; past it the list starts again. */
#define VM_WARM_FILES_MAX 4096

struct vm_warm_config {
	struct vm_agent_ctx *ctx; /* where the tables and symbols are kept */
	const char *const *comms; /* the targets; none: VM_DEFAULT_COMM */
	size_t n_comms;
	unsigned interval_ms; /* 0: VM_WARM_INTERVAL_MS */
	const char *proc_root; /* NULL: /proc */
	/* Whether a request runs now, to wait for (NULL: never). */
	bool (*busy)(void *arg);
	void *busy_arg;
};

struct vm_warm_stats {
	uint64_t passes; /* looks at the targets */
	uint64_t processes; /* new targets whose mappings were read */
	uint64_t binaries; /* files warmed: table and symbols asked for */
	uint64_t tables; /* of those, with an unwind table kept */
	uint64_t last_pass_ms; /* when the last pass ended, ms since epoch */
	uint64_t last_pass_took_ms; /* how long it took */
	char error[160]; /* why the last pass failed, "" if it did not */
};

struct vm_warm;

/*
 * Start the warmer's thread: 0, or a negative errno with err set.  The
 * config's comms must outlive it.
 */
int vm_warm_start(const struct vm_warm_config *cfg, struct vm_warm **out,
		  struct vm_error *err);

/*
 * Stop it, waiting for the file being read (bounded by the I/O pool's
 * timeouts), and free it.  NULL is nothing.
 */
void vm_warm_stop(struct vm_warm *w);

void vm_warm_stats(struct vm_warm *w, struct vm_warm_stats *out);

#endif
