// SPDX-License-Identifier: Apache-2.0
/*
 * continuous_memory.c - the continuous memory snapshots (see
 * continuous_memory.h).
 *
 * On a schedule fixed from the start (a late snapshot does not shift the
 * next), one memory session of the engine: it reads each target's
 * /proc files and PostgreSQL's memory contexts through the agent's I/O
 * pool, each read with its deadline and each walk bounded in nodes,
 * depth, bytes and time (pg_memctx_read.h), so a snapshot costs a few
 * milliseconds of this thread per target and never blocks on a stuck
 * mount.  The snapshot goes into the history, then, encoded once as a
 * gzipped pprof, into the push queue (Pyroscope files it as a memory
 * profile by its sample types, inuse_space and inuse_objects), then to
 * continuous_memory_taken(), the one place a snapshot is handed on.
 * Snapshots are kept in memory only: --history-dir keeps CPU windows.
 */
#include "agent/continuous/continuous_memory.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/encode/encode.h"
#include "agent/samples/sample.h"
#include "agent/symbolize/symbolize.h"
#include "common/clock.h"
#include "common/log.h"

struct vm_continuous_memory {
	struct vm_continuous_memory_config cfg;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock; /* stopping, the stats */
	pthread_cond_t wake;
	bool stopping;
	uint64_t snapshots;
	char last_error[256];
};

/* A snapshot kept (error NULL), or why one was not. */
static void count(struct vm_continuous_memory *m, const char *error)
{
	pthread_mutex_lock(&m->lock);
	if (error) {
		snprintf(m->last_error, sizeof(m->last_error), "%s", error);
	} else {
		m->snapshots++;
		m->last_error[0] = '\0';
	}
	pthread_mutex_unlock(&m->lock);
}

/*
 * A snapshot was taken and kept: the one place it is handed on.
 *
 * HOOK (OOM reports): call vm_oom_keep_snapshot() here, once it exists,
 * with the snapshot (s: per-process samples, y: them symbolized, both
 * valid during this call only), so that an OOM report has the victim's
 * last snapshot and its age.  Nothing else is to be done here.
 */
static void continuous_memory_taken(struct vm_continuous_memory *m,
				    const struct vm_samples *s,
				    const struct vm_symbolized *y)
{
	(void)m;
	(void)s;
	(void)y;
}

/* The snapshot as the push sends it: a gzipped pprof. */
static void push_snapshot(struct vm_continuous_memory *m,
			  const struct vm_history_window *w,
			  const struct vm_symbolized *y)
{
	struct vm_error err = { 0 };
	struct vm_encoded gz = { 0 };

	if (vm_encode_profile(y, VM_FORMAT_PPROF, true, &gz, &err) < 0) {
		vm_log("continuous: cannot encode a memory snapshot: %s",
		       vm_error_str(&err));
		return;
	}
	vm_push_enqueue(m->cfg.push, w->start_ns, w->end_ns, gz.data, gz.len,
			false);
	free(gz.data);
}

static void take(struct vm_continuous_memory *m)
{
	struct vm_profile_request req = {
		.kind = VM_KIND_MEMORY,
		.profiler = VM_PROFILER_BPF,
		.frequency = VM_FREQUENCY_DEFAULT,
		.seconds = VM_SECONDS_MIN,
	};
	struct vm_session *s = NULL;
	struct vm_samples samples = { 0 };
	struct vm_symbolized y = { 0 };
	struct vm_history_window w = { 0 };
	struct vm_error err = { 0 };
	int r;

	for (size_t i = 0; i < m->cfg.n_comms; i++)
		req.comms[i] = m->cfg.comms[i];
	req.n_comms = m->cfg.n_comms;
	r = vm_session_start(&req, m->cfg.engine, &s, &err);
	if (r == 0)
		r = vm_session_collect(s, &samples, &y, &err);
	vm_session_free(s);
	if (r == 0) {
		w.start_ns = samples.time_nanos;
		w.end_ns = samples.time_nanos + samples.duration_nanos;
		for (size_t i = 0; i < samples.n; i++)
			w.samples += samples.v[i].count;
		r = vm_history_add(m->cfg.history, &w, &y, &err);
	}
	if (r < 0) {
		vm_log("continuous: memory snapshot: %s", vm_error_str(&err));
	} else {
		if (m->cfg.push)
			push_snapshot(m, &w, &y);
		continuous_memory_taken(m, &samples, &y);
	}
	count(m, r < 0 ? vm_error_str(&err) : NULL);
	vm_symbolized_free(&y);
	vm_samples_free(&samples);
}

static void *memory_thread(void *arg)
{
	struct vm_continuous_memory *m = arg;
	uint64_t every_ns = m->cfg.every * 1000000000ULL;
	/* As a CPU window, the first one a beat after the start. */
	uint64_t next = vm_clock_ns(CLOCK_MONOTONIC) + every_ns;

	vm_log("continuous memory snapshots every %u s", m->cfg.every);
	while (!vm_cond_sleep_until(&m->wake, &m->lock, &m->stopping, next)) {
		take(m);
		next += every_ns;
		/* Far behind (suspended, or a slow walk): start afresh. */
		if (vm_clock_ns(CLOCK_MONOTONIC) > next)
			next = vm_clock_ns(CLOCK_MONOTONIC) + every_ns;
	}
	return NULL;
}

int vm_continuous_memory_start(const struct vm_continuous_memory_config *cfg,
			       struct vm_continuous_memory **out,
			       struct vm_error *err)
{
	struct vm_continuous_memory *m = calloc(1, sizeof(*m));
	int r = m ? 0 : ENOMEM;

	*out = NULL;
	if (m) {
		m->cfg = *cfg;
		pthread_mutex_init(&m->lock, NULL);
		vm_cond_init_monotonic(&m->wake);
		r = pthread_create(&m->thread, NULL, memory_thread, m);
		m->thread_started = r == 0;
	}
	if (r) {
		vm_continuous_memory_stop(m);
		return vm_error_errno(
			err, r,
			"cannot start the thread of continuous memory snapshots");
	}
	*out = m;
	return 0;
}

/* Raise stop: a walk under way ends within its deadline, then the loop. */
void vm_continuous_memory_stop(struct vm_continuous_memory *m)
{
	if (!m)
		return;
	vm_cond_raise(&m->wake, &m->lock, &m->stopping);
	if (m->thread_started)
		pthread_join(m->thread, NULL);
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->wake);
	free(m);
}

void vm_continuous_memory_stats(struct vm_continuous_memory *m,
				struct vm_continuous_memory_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&m->lock);
	st->snapshots = m->snapshots;
	snprintf(st->last_error, sizeof(st->last_error), "%s", m->last_error);
	pthread_mutex_unlock(&m->lock);
}
