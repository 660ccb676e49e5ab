// SPDX-License-Identifier: Apache-2.0
/*
 * continuous.c - the continuous profile's thread (see continuous.h).
 *
 * One engine session with req.continuous: sampling never stops while the
 * agent runs; at every interval, on a schedule fixed from the session's
 * start (a late seal does not shift the next), the engine seals the
 * window and this file keeps it: in the history, then encoded once as a
 * gzipped pprof (vm_encode_profile, the one way every profile is encoded)
 * for the history directory and the push queue.  A window's file is this
 * file's alone: it writes and spools it (history_dir.h), removes it when
 * the push queue says it is done with it (forget_spooled), and queues
 * again what a restart left (load_spool).  A failure to write or push is
 * counted and said, never stops sampling.
 */
#include "agent/continuous/continuous.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/encode/encode.h"
#include "agent/history/history_time.h"
#include "agent/samples/sample.h"
#include "agent/symbolize/symbolize.h"
#include "common/clock.h"
#include "common/log.h"

struct vm_continuous {
	struct vm_continuous_config cfg;
	struct vm_history *history;
	struct vm_history_dir *dir;
	struct vm_push *push;
	struct vm_history *memory_history; /* NULL: no memory snapshots */
	struct vm_continuous_memory *memory;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock; /* stop, wake, the stats below */
	pthread_cond_t wake;
	bool stopping;
	atomic_bool loading_stop; /* raised with stopping, read unlocked */
	bool sampling;
	uint64_t windows;
	char last_error[256];
};

static void set_error(struct vm_continuous *c, const char *msg)
{
	pthread_mutex_lock(&c->lock);
	snprintf(c->last_error, sizeof(c->last_error), "%s", msg);
	pthread_mutex_unlock(&c->lock);
}

/* Sleep until deadline (CLOCK_MONOTONIC ns) or stop; whether stopping. */
static bool wait_until(struct vm_continuous *c, uint64_t deadline_ns)
{
	return vm_cond_sleep_until(&c->wake, &c->lock, &c->stopping,
				   deadline_ns);
}

/* The window as a file in --history-dir and in the push queue. */
static void store_window(struct vm_continuous *c,
			 const struct vm_history_window *w,
			 const struct vm_symbolized *y)
{
	struct vm_error err = { 0 };
	struct vm_encoded gz = { 0 };
	bool spooled = false;

	/* A gzipped pprof, for the directory and the push. */
	if (vm_encode_profile(y, VM_FORMAT_PPROF, true, &gz, &err) < 0) {
		vm_log("continuous: cannot encode a window: %s",
		       vm_error_str(&err));
		return;
	}
	if (c->dir) {
		if (vm_history_dir_write(c->dir, w->start_ns, w->end_ns,
					 gz.data, gz.len, &err) < 0)
			vm_log("continuous: %s", vm_error_str(&err));
		else if (c->push)
			spooled = vm_history_dir_spool_add(c->dir, w->start_ns,
							   w->end_ns) == 0;
	}
	if (c->push)
		vm_push_enqueue(c->push, w->start_ns, w->end_ns, gz.data,
				gz.len, spooled);
	free(gz.data);
}

static void keep_window(struct vm_continuous *c, const struct vm_samples *s,
			const struct vm_symbolized *y)
{
	struct vm_history_window w = {
		.start_ns = s->time_nanos,
		.end_ns = s->time_nanos + s->duration_nanos,
		.lost = s->lost_stacks + s->lost_samples,
		.frequency = s->frequency,
	};
	struct vm_error err = { 0 };

	for (size_t i = 0; i < s->n; i++)
		w.samples += s->v[i].count;
	if (vm_history_add(c->history, &w, y, &err) < 0)
		vm_log("continuous: %s", vm_error_str(&err));
	if (c->dir || c->push)
		store_window(c, &w, y);
	/*
	 * Counted once it is everywhere it goes: a window counted is in
	 * the history, on disk and in the push queue (or failed there).
	 */
	pthread_mutex_lock(&c->lock);
	c->windows++;
	pthread_mutex_unlock(&c->lock);
}

static void seal(struct vm_continuous *c, struct vm_session *s)
{
	struct vm_samples samples;
	struct vm_symbolized y;
	struct vm_error err = { 0 };

	if (vm_session_seal(s, &samples, &y, &err) < 0) {
		vm_log("continuous: cannot seal a window: %s",
		       vm_error_str(&err));
		return;
	}
	keep_window(c, &samples, &y);
	vm_symbolized_free(&y);
	vm_samples_free(&samples);
}

static int start_session(struct vm_continuous *c, struct vm_session **s)
{
	struct vm_profile_request req = {
		.profiler = VM_PROFILER_BPF,
		.frequency = c->cfg.frequency,
		.seconds = c->cfg.interval,
		.continuous = true,
	};
	struct vm_error err = { 0 };
	int r;

	for (size_t i = 0; i < c->cfg.n_comms; i++)
		req.comms[i] = c->cfg.comms[i];
	req.n_comms = c->cfg.n_comms;
	r = vm_session_start(&req, &c->cfg.engine, s, &err);
	if (r < 0) {
		set_error(c, vm_error_str(&err));
		return r;
	}
	vm_log("continuous profiling at %u Hz, a window every %u s",
	       c->cfg.frequency, c->cfg.interval);
	return 0;
}

static void log_line(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	vm_log("%s", buf);
}

/*
 * The windows --history-dir kept, read back by the continuous thread
 * before it samples: the agent listens at once, and the history fills
 * while it does (300 windows took 14 s when read before listening).
 */
static void load_storage(struct vm_continuous *c)
{
	size_t loaded;

	if (!c->dir)
		return;
	loaded = vm_history_dir_load(c->dir, c->history, &c->loading_stop,
				     log_line);
	vm_log("history: %zu window(s) read back from %s", loaded,
	       c->cfg.history_dir);
}

static void *continuous_thread(void *arg)
{
	struct vm_continuous *c = arg;
	uint64_t interval_ns = c->cfg.interval * 1000000000ULL, next;
	struct vm_session *s = NULL;
	bool told = false;

	load_storage(c);
	for (;;) {
		if (start_session(c, &s) == 0)
			break;
		if (!told)
			vm_log("continuous: not sampling: %s; trying again every %u s",
			       c->last_error, c->cfg.interval);
		told = true;
		if (wait_until(c, vm_clock_ns(CLOCK_MONOTONIC) + interval_ns))
			return NULL;
	}
	pthread_mutex_lock(&c->lock);
	c->sampling = true;
	c->last_error[0] = '\0';
	pthread_mutex_unlock(&c->lock);

	next = vm_clock_ns(CLOCK_MONOTONIC) + interval_ns;
	while (!wait_until(c, next)) {
		seal(c, s);
		next += interval_ns;
		/* Far behind (the machine was suspended): start afresh. */
		if (vm_clock_ns(CLOCK_MONOTONIC) > next)
			next = vm_clock_ns(CLOCK_MONOTONIC) + interval_ns;
	}
	/* What was sampled since the last window is kept too. */
	seal(c, s);
	vm_session_stop(s);
	vm_session_free(s);
	pthread_mutex_lock(&c->lock);
	c->sampling = false;
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static int open_storage(struct vm_continuous *c, struct vm_error *err)
{
	int r;

	r = vm_history_new(&c->cfg.history, &c->history, err);
	if (r == 0 && c->cfg.memory_every) {
		struct vm_history_config mc = c->cfg.history;

		mc.kind = VM_KIND_MEMORY;
		mc.max_bytes /= VM_CONTINUOUS_MEMORY_BYTES_SHARE;
		r = vm_history_new(&mc, &c->memory_history, err);
	}
	if (r < 0 || !c->cfg.history_dir)
		return r;
	r = vm_history_dir_open(c->cfg.history_dir, c->cfg.history.max_seconds,
				c->cfg.history.max_bytes, &c->dir, err);
	if (r < 0)
		return r;
	return 0;
}

/* The push queue is done with a spooled window: its file goes. */
static void forget_spooled(void *arg, uint64_t start_ns, uint64_t end_ns)
{
	struct vm_continuous *c = arg;

	vm_history_dir_spool_remove(c->dir, start_ns, end_ns);
}

/* What a restart left in the spool, queued first. */
static void load_spool(struct vm_continuous *c)
{
	char **names;
	size_t n;

	if (!c->dir || vm_history_dir_spool_list(c->dir, &names, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		uint64_t start, end;
		void *data;
		size_t len;

		if (vm_history_parse_file_name(names[i], &start, &end) < 0 ||
		    vm_history_dir_spool_read(c->dir, names[i], &data, &len) <
			    0)
			continue;
		vm_push_enqueue(c->push, start, end, data, len, true);
		free(data);
	}
	if (n)
		vm_log("push: %zu window(s) left from before are queued", n);
	vm_history_dir_names_free(names, n);
}

/* The memory snapshots, on the targets of the windows. */
static int start_memory(struct vm_continuous *c, struct vm_error *err)
{
	struct vm_continuous_memory_config mc = { 0 };

	mc.every = c->cfg.memory_every;
	mc.comms = c->cfg.comms;
	mc.n_comms = c->cfg.n_comms;
	mc.history = c->memory_history;
	mc.push = c->push;
	mc.engine = &c->cfg.engine;
	return vm_continuous_memory_start(&mc, &c->memory, err);
}

int vm_continuous_start(const struct vm_continuous_config *cfg,
			struct vm_continuous **out, struct vm_error *err)
{
	struct vm_continuous *c = calloc(1, sizeof(*c));
	int r;

	*out = NULL;
	if (!c)
		return vm_error_set(err, ENOMEM, "out of memory");
	c->cfg = *cfg;
	pthread_mutex_init(&c->lock, NULL);
	vm_cond_init_monotonic(&c->wake);
	r = open_storage(c, err);
	if (r == 0 && cfg->push) {
		struct vm_push_config pc = *cfg->push;

		if (c->dir) {
			pc.forget = forget_spooled;
			pc.forget_arg = c;
		}
		r = vm_push_start(&pc, &c->push, err);
		if (r == 0)
			load_spool(c);
	}
	if (r == 0 && c->memory_history)
		r = start_memory(c, err);
	if (r == 0) {
		r = pthread_create(&c->thread, NULL, continuous_thread, c);
		if (r)
			r = vm_error_errno(
				err, r,
				"cannot start the continuous profiler's thread");
		else
			c->thread_started = true;
	}
	if (r < 0) {
		vm_continuous_stop(c);
		return r;
	}
	*out = c;
	return 0;
}

void vm_continuous_stop(struct vm_continuous *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	atomic_store(&c->loading_stop, true);
	pthread_cond_broadcast(&c->wake);
	pthread_mutex_unlock(&c->lock);
	if (c->thread_started)
		pthread_join(c->thread, NULL);
	/* Before the push it queues to and the history it keeps in. */
	vm_continuous_memory_stop(c->memory);
	vm_push_stop(c->push);
	vm_history_dir_close(c->dir);
	vm_history_free(c->history);
	vm_history_free(c->memory_history);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->wake);
	free(c);
}

struct vm_history *vm_continuous_history(struct vm_continuous *c)
{
	return c->history;
}

struct vm_history *vm_continuous_memory_history(struct vm_continuous *c)
{
	return c->memory_history;
}

const struct vm_continuous_config *vm_continuous_config(struct vm_continuous *c)
{
	return &c->cfg;
}

void vm_continuous_stats(struct vm_continuous *c,
			 struct vm_continuous_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&c->lock);
	st->sampling = c->sampling;
	st->windows = c->windows;
	snprintf(st->last_error, sizeof(st->last_error), "%s", c->last_error);
	pthread_mutex_unlock(&c->lock);
	vm_history_usage(c->history, &st->history_bytes, &st->history_dropped);
	if (c->dir) {
		st->has_dir = true;
		vm_history_dir_status(c->dir, &st->dir);
	}
	if (c->push) {
		st->has_push = true;
		vm_push_stats(c->push, &st->push);
	}
	if (c->memory) {
		uint64_t dropped;

		st->has_memory = true;
		vm_continuous_memory_stats(c->memory, &st->memory);
		vm_history_usage(c->memory_history, &st->memory_history_bytes,
				 &dropped);
	}
}
