// SPDX-License-Identifier: Apache-2.0
/*
 * engine.c - one profiling session (engine.h): validates the request,
 * drives a backend (backend.h) through start / wait / collect, then
 * symbolizes (symbolize.c) and encodes (pprof.c, folded.c, gzip.c).
 *
 * Sessions are independent of each other: each has its own backend
 * state, and what they share (the symbol cache and the kernel's symbols)
 * is behind the symbol cache's lock.  How many may run at once is the
 * caller's rule.  vm_session_stop() and vm_session_status() may be called
 * from any thread while another waits or finishes; stop only sets a flag
 * and writes an eventfd, so it is also safe from a signal handler.
 */
#include "agent/profile/engine.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "agent/profile/backend.h"
#include "agent/encode/encode.h"
#include "agent/symbolize/symbolize.h"
#include "agent/symbolize/symcache.h"
#include "agent/samples/sample.h"
#include "common/clock.h"

struct vm_session {
	const struct vm_backend_ops *ops;
	void *state;
	void *kept; /* what the backend keeps (backend.h), or NULL */
	bool own_kept; /* no context: kept is the session's, to free */
	struct vm_profile_request req;
	struct vm_engine_config cfg; /* the caller's, copied */
	char comms[VM_MAX_TARGETS][VM_COMM_LEN];
	uint64_t start_mono_ns;
	uint64_t start_real_ns;
	int stop_fd;
	atomic_bool stopping;
	atomic_bool collected;
	_Atomic uint64_t final_samples;
	bool finished;
	pthread_t prefetch;
	bool prefetch_started;
	/* Continuous sessions: where the current window started. */
	uint64_t window_mono_ns;
	uint64_t window_real_ns;
};

static void *prefetch_kernel(void *arg)
{
	vm_symbolize_prefetch_kernel(arg);
	return NULL;
}

const char *vm_profiler_name(enum vm_profiler p)
{
	return p == VM_PROFILER_PERF ? "Perf" : "BccProfile";
}

/*
 * A rule of limits.h the request breaks, in the engine's own words: the
 * front ends check first and name the field as their users write it, so
 * only a caller that did not gets these.
 */
static int refuse(const struct vm_profile_request *req,
		  const struct vm_rule_break *b, struct vm_error *err)
{
	struct vm_range r = vm_rule_range(b->rule, VM_SECONDS_CEILING);

	switch (b->rule) {
	case VM_RULE_FREQUENCY:
	case VM_RULE_SECONDS:
		return vm_error_set(
			err, EINVAL,
			"%s %" PRId64 " %s is out of range: use %" PRId64
			" to %" PRId64,
			b->rule == VM_RULE_SECONDS ? "duration" :
						     "sampling frequency",
			b->value, b->rule == VM_RULE_SECONDS ? "s" : "Hz",
			r.min, r.max);
	case VM_RULE_N_COMMS:
	case VM_RULE_N_PIDS:
		return vm_error_set(err, EINVAL,
				    "too many targets: at most %" PRId64
				    " command names and %" PRId64 " pids",
				    r.max, r.max);
	case VM_RULE_COMM:
		return vm_error_set(
			err, EINVAL,
			"command name '%s' is not valid: give " VM_COMM_RULE
			", e.g. " VM_DEFAULT_COMM,
			req->comms[b->index] ? req->comms[b->index] : "");
	case VM_RULE_PID:
		/* Above the kernel's pid_max, no process can have it. */
		if (b->value > r.max)
			return vm_error_set(err, ESRCH,
					    "no process with pid %" PRId64
					    " is running",
					    b->value);
		return vm_error_set(err, EINVAL,
				    "pid %" PRId64
				    " is not valid: give a positive process id",
				    b->value);
	case VM_RULE_KIND:
		return vm_error_set(
			err, EINVAL,
			"profile kind is not valid: use cpu, offcpu, wall, memory or faults");
	case VM_RULE_KIND_PROFILER:
		return vm_error_set(err, EINVAL, "%s %s",
				    vm_kind_name(req->kind),
				    vm_kind_profiler_rule(req->kind));
	case VM_RULE_MIN_BLOCK_US:
		return vm_error_set(err, EINVAL,
				    "minimum block time %" PRId64
				    " µs is out of range: use %" PRId64
				    " to %" PRId64,
				    b->value, r.min, r.max);
	case VM_RULE_PERIOD:
		return vm_error_set(
			err, EINVAL,
			"faults period %" PRId64
			" is out of range: sample one fault in %" PRId64
			" to %" PRId64,
			b->value, r.min, r.max);
	default:
		return vm_error_set(
			err, EINVAL,
			"output format is not valid: use " VM_FORMAT_NAMES);
	}
}

/*
 * The rules, with profiles as long as VM_SECONDS_CEILING (a front end that
 * allows less has refused more already), then whether the pids run.
 */
static int validate(const struct vm_profile_request *req, struct vm_error *err)
{
	struct vm_rule_break b;

	if (vm_request_check(req, VM_SECONDS_CEILING, &b) < 0)
		return refuse(req, &b, err);
	for (size_t i = 0; i < req->n_pids; i++) {
		char path[32];

		snprintf(path, sizeof(path), "/proc/%d", (int)req->pids[i]);
		if (access(path, F_OK))
			return vm_error_set(err, ESRCH,
					    "no process with pid %d is running",
					    (int)req->pids[i]);
	}
	return 0;
}

static const struct vm_backend_ops *backend_of(enum vm_profiler p)
{
	return p == VM_PROFILER_PERF ? &vm_perf_backend : &vm_bpf_backend;
}

_Static_assert(VM_PROFILER_BPF < VM_AGENT_CTX_BACKENDS &&
		       VM_PROFILER_PERF < VM_AGENT_CTX_BACKENDS,
	       "the context keeps a state for every backend");

/*
 * What backend p keeps for the agent's life (backend.h) into *kept: ctx's,
 * made at the first call; without a context, a new one that the caller
 * frees (*own).  NULL when the backend keeps nothing.  0, or -ENOMEM.
 */
static int kept_of(struct vm_agent_ctx *ctx, enum vm_profiler p, void **kept,
		   bool *own)
{
	const struct vm_backend_ops *ops = backend_of(p);
	struct vm_agent_ctx_kept *k;

	*kept = NULL;
	*own = false;
	if (!ops->kept_new)
		return 0;
	if (!ctx) {
		*kept = ops->kept_new();
		*own = *kept != NULL;
		return *kept ? 0 : -ENOMEM;
	}
	k = &ctx->backends[p];
	pthread_mutex_lock(&ctx->backends_lock);
	if (!k->kept) {
		k->kept = ops->kept_new();
		k->free = ops->kept_free;
	}
	*kept = k->kept;
	pthread_mutex_unlock(&ctx->backends_lock);
	return *kept ? 0 : -ENOMEM;
}

int vm_session_start(const struct vm_profile_request *req,
		     const struct vm_engine_config *cfg,
		     struct vm_session **out, struct vm_error *err)
{
	static const struct vm_engine_config no_cfg = { 0 };
	struct vm_session *s;
	int r;

	*out = NULL;
	r = validate(req, err);
	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s)
		return vm_error_set(err, ENOMEM, "out of memory");
	s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->req = *req;
	s->cfg = cfg ? *cfg : no_cfg;
	/* Our own copies: the caller's strings may go away. */
	for (size_t i = 0; i < req->n_comms; i++) {
		snprintf(s->comms[i], sizeof(s->comms[i]), "%s", req->comms[i]);
		s->req.comms[i] = s->comms[i];
	}
	if (req->n_comms == 0 && req->n_pids == 0) {
		snprintf(s->comms[0], sizeof(s->comms[0]), VM_DEFAULT_COMM);
		s->req.comms[0] = s->comms[0];
		s->req.n_comms = 1;
	}
	if (s->stop_fd < 0) {
		r = vm_error_errno(err, errno, "cannot create an eventfd");
		vm_session_free(s);
		return r;
	}

	s->ops = req->kind == VM_KIND_MEMORY ? &vm_memory_backend :
					       backend_of(req->profiler);
	if (req->continuous && req->kind != VM_KIND_CPU &&
	    req->kind != VM_KIND_FAULTS) {
		vm_session_free(s);
		return vm_error_set(
			err, EINVAL,
			"only CPU and faults profiles run continuously, not %s ones",
			vm_kind_name(req->kind));
	}
	if (req->continuous && !s->ops->seal) {
		vm_session_free(s);
		return vm_error_set(
			err, EINVAL,
			"the %s profiler cannot profile continuously: use the eBPF profiler (BccProfile)",
			vm_profiler_name(req->profiler));
	}

	if (req->kind != VM_KIND_MEMORY &&
	    kept_of(s->cfg.ctx, req->profiler, &s->kept, &s->own_kept) < 0) {
		vm_session_free(s);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	s->start_mono_ns = vm_clock_ns(CLOCK_MONOTONIC);
	s->start_real_ns = vm_clock_ns(CLOCK_REALTIME);
	r = s->ops->start(&s->req, &s->cfg, s->kept,
			  vm_symbolize_prefetch_process, &s->state, err);
	if (r < 0) {
		vm_session_free(s);
		return r;
	}
	/* The profile's clock starts once sampling runs. */
	s->start_mono_ns = vm_clock_ns(CLOCK_MONOTONIC);
	s->start_real_ns = vm_clock_ns(CLOCK_REALTIME);
	s->window_mono_ns = s->start_mono_ns;
	s->window_real_ns = s->start_real_ns;
	/*
	 * Parse kallsyms while sampling, not after: reading all of
	 * /proc/kallsyms is slow, and after the window the caller would wait.
	 */
	s->prefetch_started =
		req->kind != VM_KIND_MEMORY &&
		pthread_create(&s->prefetch, NULL, prefetch_kernel,
			       s->cfg.ctx ? s->cfg.ctx->symbols : NULL) == 0;
	*out = s;
	return 0;
}

int vm_session_wait(struct vm_session *s, struct vm_error *err)
{
	uint64_t deadline = s->start_mono_ns + s->req.seconds * 1000000000ULL;
	/* A negative descriptor is one poll passes over. */
	struct pollfd pfd[2] = {
		{ .fd = s->stop_fd, .events = POLLIN },
		{ .fd = s->ops->ended_fd ? s->ops->ended_fd(s->state) : -1,
		  .events = POLLIN },
	};

	while (!atomic_load(&s->stopping) && !(pfd[1].revents & POLLIN)) {
		uint64_t now = vm_clock_ns(CLOCK_MONOTONIC), left;
		struct timespec ts;

		if (now >= deadline)
			break;
		/* To the nanosecond: poll()'s milliseconds round up. */
		left = deadline - now;
		ts.tv_sec = left / 1000000000ULL;
		ts.tv_nsec = left % 1000000000ULL;
		if (ppoll(pfd, 2, &ts, NULL) < 0 && errno != EINTR)
			return vm_error_errno(err, errno,
					      "waiting for the profile failed");
	}
	return 0;
}

void vm_session_stop(struct vm_session *s)
{
	uint64_t one = 1;
	ssize_t r;

	if (!s)
		return;
	atomic_store(&s->stopping, true);
	r = write(s->stop_fd, &one, sizeof(one));
	(void)r; /* the flag alone also ends the wait at its next wake-up */
}

void vm_session_status(struct vm_session *s, struct vm_session_status *st)
{
	uint64_t now = vm_clock_ns(CLOCK_MONOTONIC);

	memset(st, 0, sizeof(*st));
	st->kind = s->req.kind;
	st->profiler = s->req.profiler;
	st->frequency = s->req.frequency;
	st->seconds = s->req.seconds;
	st->started_unix_ms = s->start_real_ns / 1000000;
	st->elapsed_ms = (now - s->start_mono_ns) / 1000000;
	st->stopping = atomic_load(&s->stopping);
	if (atomic_load(&s->collected))
		st->samples = atomic_load(&s->final_samples);
	else if (s->ops->samples_so_far)
		st->samples = s->ops->samples_so_far(s->state);
}

int vm_session_collect(struct vm_session *s, struct vm_samples *samples,
		       struct vm_symbolized *y, struct vm_error *err)
{
	uint64_t total = 0, end_ns;
	int r;

	memset(samples, 0, sizeof(*samples));
	memset(y, 0, sizeof(*y));
	if (s->finished)
		return vm_error_set(err, EINVAL,
				    "this profile was already finished");
	s->finished = true;
	r = s->ops->collect(s->state, samples, err);
	end_ns = vm_clock_ns(CLOCK_MONOTONIC);
	if (r < 0) {
		vm_samples_free(samples);
		return r;
	}
	/* A faults sample's count is the period's faults: samples, here. */
	for (size_t i = 0; i < samples->n; i++)
		total += s->req.kind == VM_KIND_FAULTS &&
					 samples->fault_period ?
				 samples->v[i].count / samples->fault_period :
				 samples->v[i].count;
	atomic_store(&s->final_samples, total);
	atomic_store(&s->collected, true);
	samples->frequency = s->req.frequency;
	samples->kind = s->req.kind;
	if (!samples->time_nanos)
		samples->time_nanos = s->start_real_ns;
	if (!samples->duration_nanos)
		samples->duration_nanos = end_ns - s->start_mono_ns;
	r = vm_symbolize(s->cfg.ctx ? s->cfg.ctx->symbols : NULL, samples, y,
			 err);
	if (r < 0)
		memset(y, 0, sizeof(*y));
	return r;
}

int vm_session_finish(struct vm_session *s, struct vm_profile_output *out,
		      struct vm_error *err)
{
	struct vm_samples samples;
	struct vm_symbolized y;
	uint64_t total;
	int r;

	memset(out, 0, sizeof(*out));
	if (s->finished)
		return vm_error_set(err, EINVAL,
				    "this profile was already finished");
	r = vm_session_collect(s, &samples, &y, err);
	if (r == 0) {
		struct vm_encoded enc;

		r = vm_encode_profile(&y, s->req.format, s->req.gzip, &enc,
				      err);
		vm_symbolized_free(&y);
		if (r == 0) {
			out->data = enc.data;
			out->len = enc.len;
			out->content_type = enc.content_type;
			out->filename = enc.filename;
		}
	} else if (!atomic_load(&s->collected)) {
		return r;
	}
	total = atomic_load(&s->final_samples);
	out->samples = total;
	out->lost = samples.lost_stacks + samples.lost_samples;
	out->unwound_by_table = samples.unwound_by_table;
	out->unwound_by_frame_pointer = samples.unwound_by_frame_pointer;
	out->unwind_processes_skipped = samples.unwind_processes_skipped;
	out->unwind_cut = samples.unwind_cut;
	vm_samples_free(&samples);
	return r;
}

int vm_session_seal(struct vm_session *s, struct vm_samples *samples,
		    struct vm_symbolized *y, struct vm_error *err)
{
	uint64_t end_mono;
	int r;

	memset(samples, 0, sizeof(*samples));
	memset(y, 0, sizeof(*y));
	if (!s->req.continuous || s->finished)
		return vm_error_set(
			err, EINVAL,
			"only a running continuous profile has windows");
	/* The next window starts where this one ends, at the switch. */
	end_mono = vm_clock_ns(CLOCK_MONOTONIC);
	r = s->ops->seal(s->state, samples, err);
	if (r < 0) {
		vm_samples_free(samples);
		return r;
	}
	samples->frequency = s->req.frequency;
	samples->kind = s->req.kind;
	samples->time_nanos = s->window_real_ns;
	samples->duration_nanos = end_mono - s->window_mono_ns;
	s->window_mono_ns = end_mono;
	/* Wall clock from the monotonic one: the windows stay contiguous. */
	s->window_real_ns += samples->duration_nanos;
	r = vm_symbolize(s->cfg.ctx ? s->cfg.ctx->symbols : NULL, samples, y,
			 err);
	if (r < 0) {
		vm_samples_free(samples);
		memset(y, 0, sizeof(*y));
	}
	return r;
}

void vm_engine_release(struct vm_agent_ctx *ctx)
{
	for (size_t i = 0; ctx && i < VM_AGENT_CTX_BACKENDS; i++) {
		const struct vm_backend_ops *ops = backend_of(i);
		void *kept;

		pthread_mutex_lock(&ctx->backends_lock);
		kept = ctx->backends[i].kept;
		pthread_mutex_unlock(&ctx->backends_lock);
		if (kept && ops->release)
			ops->release(kept);
	}
}

void vm_engine_backend_status(struct vm_agent_ctx *ctx, enum vm_profiler p,
			      struct vm_backend_status *out)
{
	const struct vm_backend_ops *ops = backend_of(p);
	void *kept;
	bool own;

	memset(out, 0, sizeof(*out));
	if (kept_of(ctx, p, &kept, &own) < 0)
		return;
	if (ops->status)
		ops->status(kept, out);
	if (own)
		ops->kept_free(kept);
}

void vm_session_free(struct vm_session *s)
{
	if (!s)
		return;
	if (s->prefetch_started)
		pthread_join(s->prefetch, NULL);
	if (s->ops && s->ops->destroy)
		s->ops->destroy(s->state);
	if (s->own_kept)
		s->ops->kept_free(s->kept);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	free(s);
}
