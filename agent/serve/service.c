// SPDX-License-Identifier: Apache-2.0
/*
 * service.c - one on-demand profiling session at a time, shared by the
 * connection threads of the HTTP server (service.h).
 *
 * A session goes idle -> starting -> running -> finishing -> idle.  The
 * mutex guards that state and the session pointer; the session is visible
 * to vm_service_status() and vm_service_stop() only while running, so no
 * other thread touches it once the owner starts to finish and free it.
 * The slot stays taken until the session is freed: a second run gets
 * -EBUSY until then, so two on-demand backends never run at once.
 *
 * Nothing here is HTTP: results are plain structs, errors a negative errno
 * and a sentence; the HTTP layer answers and logs them.
 */
#include "agent/serve/service.h"
#include "agent/symbolize/symbolize.h"
#include "common/clock.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

enum stop_reason { NOT_STOPPED, BY_DELETE, BY_HANGUP, BY_SHUTDOWN };

struct vm_service {
	struct vm_service_config cfg;
	struct vm_metrics metrics;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	enum vm_service_phase phase;
	bool shutting_down;
	enum stop_reason stop_reason;
	struct vm_session *session; /* only while running */
	/* What the status reports before the session runs. */
	struct vm_profile_request req;
	uint64_t started_unix_ms;
	uint64_t started_mono_ms;
	struct vm_session_status last; /* as the session ended */
	pthread_t warm; /* reads kallsyms at start, see warm_up() */
	bool warm_started;
};

struct watch {
	struct vm_service *svc;
	int client_fd;
	int done_fd;
};

/* Milliseconds on the clock that never jumps: how long a session has run. */
static uint64_t now_ms(void)
{
	return vm_clock_ns(CLOCK_MONOTONIC) / 1000000;
}

static void *warm_up(void *arg)
{
	vm_symbolize_prefetch_kernel(arg);
	return NULL;
}

int vm_service_new(const struct vm_service_config *cfg, struct vm_service **out,
		   struct vm_error *err)
{
	struct vm_service *svc = calloc(1, sizeof(*svc));

	if (!svc)
		return vm_error_set(err, ENOMEM, "out of memory");
	svc->cfg = *cfg;
	vm_metrics_init(&svc->metrics);
	if (cfg->engine.ctx) {
		svc->metrics.binaries = cfg->engine.ctx->binaries;
		svc->metrics.debuginfod = cfg->engine.ctx->debuginfod;
	}
	pthread_mutex_init(&svc->lock, NULL);
	pthread_cond_init(&svc->idle, NULL);
	/*
	 * The kernel formats /proc/kallsyms line by line (a hundred
	 * thousand and more symbols), slower than anything else a profile
	 * does: read it now, beside the HTTP start, so the first profile
	 * costs what the others do (the cache keeps it until /proc/modules changes).
	 */
	svc->warm_started = pthread_create(&svc->warm, NULL, warm_up,
					   cfg->engine.ctx ?
						   cfg->engine.ctx->symbols :
						   NULL) == 0;
	*out = svc;
	return 0;
}

void vm_service_free(struct vm_service *svc)
{
	if (!svc)
		return;
	if (svc->warm_started)
		pthread_join(svc->warm, NULL);
	pthread_mutex_destroy(&svc->lock);
	pthread_cond_destroy(&svc->idle);
	pthread_mutex_destroy(&svc->metrics.lock);
	free(svc);
}

const struct vm_request_limits *vm_service_limits(struct vm_service *svc)
{
	return &svc->cfg.limits;
}

struct vm_metrics *vm_service_metrics(struct vm_service *svc)
{
	return &svc->metrics;
}

/* Called with the lock held. */
static void request_stop(struct vm_service *svc, enum stop_reason why)
{
	if (svc->stop_reason == NOT_STOPPED)
		svc->stop_reason = why;
	if (svc->phase == VM_SERVICE_RUNNING && svc->session)
		vm_session_stop(svc->session);
}

/* The slot as it is now; called with the lock held. */
static void current_status(struct vm_service *svc, struct vm_service_status *st)
{
	struct vm_session_status *s = &st->session;

	memset(st, 0, sizeof(*st));
	st->phase = svc->phase;
	switch (svc->phase) {
	case VM_SERVICE_IDLE:
		return;
	case VM_SERVICE_RUNNING:
		if (svc->session) {
			vm_session_status(svc->session, s);
			return;
		}
		break;
	case VM_SERVICE_FINISHING:
		*s = svc->last;
		s->stopping = true;
		return;
	case VM_SERVICE_STARTING:
		break;
	}
	/* Starting: the backend is not sampling yet. */
	s->kind = svc->req.kind;
	s->profiler = svc->req.profiler;
	s->frequency = svc->req.frequency;
	s->seconds = svc->req.seconds;
	s->started_unix_ms = svc->started_unix_ms;
	s->elapsed_ms = now_ms() - svc->started_mono_ms;
	s->stopping = svc->stop_reason != NOT_STOPPED;
}

static void *watch_client(void *arg)
{
	struct watch *w = arg;
	struct pollfd p[2] = {
		{ .fd = w->client_fd, .events = POLLRDHUP },
		{ .fd = w->done_fd, .events = POLLIN },
	};

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		if (p[0].revents & POLLNVAL)
			break;
		if (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
			pthread_mutex_lock(&w->svc->lock);
			request_stop(w->svc, BY_HANGUP);
			pthread_mutex_unlock(&w->svc->lock);
			break;
		}
	}
	return NULL;
}

/*
 * Whether the client has already hung up: a request that waited for a
 * connection slot may be read only after its client gave up, and nobody
 * would receive its profile.
 */
static bool client_has_gone(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };

	return fd >= 0 && poll(&p, 1, 0) > 0 &&
	       (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Claim the slot, or say why not; called with the lock held. */
static int claim(struct vm_service *svc, const struct vm_profile_request *req,
		 struct vm_error *err)
{
	struct vm_service_status st;

	if (svc->shutting_down)
		return vm_error_set(
			err, ESHUTDOWN,
			"the agent is shutting down; retry when it is back");
	if (svc->phase != VM_SERVICE_IDLE) {
		current_status(svc, &st);
		return vm_error_set(
			err, EBUSY,
			"another profile is running (%s, %s at %u Hz for %u s, %.1f s elapsed)",
			vm_kind_name(st.session.kind),
			vm_profiler_name(st.session.profiler),
			st.session.frequency, st.session.seconds,
			st.session.elapsed_ms / 1000.0);
	}
	svc->phase = VM_SERVICE_STARTING;
	svc->stop_reason = NOT_STOPPED;
	svc->req = *req;
	svc->started_unix_ms = vm_clock_ns(CLOCK_REALTIME) / 1000000;
	svc->started_mono_ms = now_ms();
	return 0;
}

/*
 * The last touch of svc by a run: once the slot is idle, shutdown may
 * return and the service be freed.
 */
static void release(struct vm_service *svc)
{
	vm_metrics_running(&svc->metrics, false);
	pthread_mutex_lock(&svc->lock);
	svc->phase = VM_SERVICE_IDLE;
	svc->session = NULL;
	pthread_cond_broadcast(&svc->idle);
	pthread_mutex_unlock(&svc->lock);
}

static enum vm_outcome outcome_of(enum stop_reason why)
{
	switch (why) {
	case BY_DELETE:
		return VM_OUTCOME_STOPPED;
	case BY_HANGUP:
		return VM_OUTCOME_CLIENT_GONE;
	case BY_SHUTDOWN:
		return VM_OUTCOME_SHUTDOWN;
	default:
		return VM_OUTCOME_COMPLETED;
	}
}

/*
 * Whether a claimed run counts as a session in the metrics.  One whose
 * backend never started counts only as the agent's failure: a start
 * refused for the request's own fields (engine.h: -EINVAL, -ESRCH) is a
 * bad request, and a client that hung up meanwhile lost nothing.
 */
static bool is_session(const struct vm_service_result *res, int r)
{
	if (res->started)
		return true;
	return !res->client_gone && r != -EINVAL && r != -ESRCH;
}

int vm_service_run(struct vm_service *svc, const struct vm_profile_request *req,
		   int client_fd, struct vm_service_result *res)
{
	struct vm_session *s = NULL;
	struct watch w = { .svc = svc, .client_fd = client_fd, .done_fd = -1 };
	pthread_t watcher;
	bool watching = false;
	enum stop_reason why;
	int r;

	memset(res, 0, sizeof(*res));
	res->outcome = VM_OUTCOME_FAILED;
	if (client_has_gone(client_fd)) {
		/* Not a session: nothing started, nobody lost anything. */
		res->outcome = VM_OUTCOME_CLIENT_GONE;
		res->client_gone = true;
		return 0;
	}
	pthread_mutex_lock(&svc->lock);
	r = claim(svc, req, &res->err);
	pthread_mutex_unlock(&svc->lock);
	if (r < 0) {
		if (r == -EBUSY)
			vm_metrics_rejected(&svc->metrics);
		return r;
	}
	res->claimed = true;
	vm_metrics_running(&svc->metrics, true);

	if (client_fd >= 0) {
		w.done_fd = eventfd(0, EFD_CLOEXEC);
		if (w.done_fd >= 0 &&
		    pthread_create(&watcher, NULL, watch_client, &w) == 0)
			watching = true;
	}

	r = vm_session_start(req, &svc->cfg.engine, &s, &res->err);
	pthread_mutex_lock(&svc->lock);
	if (r >= 0) {
		svc->session = s;
		svc->phase = VM_SERVICE_RUNNING;
		/* DELETE, hang-up or SIGTERM while the backend was starting. */
		if (svc->stop_reason != NOT_STOPPED)
			vm_session_stop(s);
	}
	pthread_mutex_unlock(&svc->lock);
	res->started = s != NULL;
	if (r >= 0)
		r = vm_session_wait(s, &res->err);

	if (watching) {
		uint64_t one = 1;

		if (write(w.done_fd, &one, sizeof(one)) < 0) {
			/* An eventfd write only fails on overflow. */
		}
		pthread_join(watcher, NULL);
	}
	if (w.done_fd >= 0)
		close(w.done_fd);

	pthread_mutex_lock(&svc->lock);
	if (s)
		vm_session_status(s, &svc->last);
	svc->phase = VM_SERVICE_FINISHING;
	svc->session = NULL;
	why = svc->stop_reason;
	pthread_mutex_unlock(&svc->lock);

	if (why == BY_HANGUP) {
		/* Nobody to send it to: not even collected. */
		res->outcome = VM_OUTCOME_CLIENT_GONE;
		res->client_gone = true;
		res->samples = s ? svc->last.samples : 0;
		r = 0;
	} else if (r >= 0) {
		r = vm_session_finish(s, &res->out, &res->err);
		if (r >= 0) {
			res->outcome = outcome_of(why);
			res->samples = res->out.samples;
			res->lost = res->out.lost;
		} else {
			free(res->out.data);
			memset(&res->out, 0, sizeof(res->out));
		}
	}
	vm_session_free(s);
	res->duration_ms = now_ms() - svc->started_mono_ms;
	if (is_session(res, r)) {
		vm_metrics_session(&svc->metrics, res->outcome, res->samples,
				   res->lost, res->duration_ms / 1000.0);
		vm_metrics_kind(&svc->metrics, req->kind);
		vm_metrics_unwound(&svc->metrics, res->out.unwound_by_table,
				   res->out.unwound_by_frame_pointer,
				   res->out.unwind_cut,
				   res->out.unwind_processes_skipped);
	}
	release(svc);
	return r < 0 ? r : 0;
}

void vm_service_status(struct vm_service *svc, struct vm_service_status *st)
{
	pthread_mutex_lock(&svc->lock);
	current_status(svc, st);
	pthread_mutex_unlock(&svc->lock);
}

int vm_service_stop(struct vm_service *svc, struct vm_service_status *st,
		    struct vm_error *err)
{
	pthread_mutex_lock(&svc->lock);
	if (svc->phase == VM_SERVICE_IDLE) {
		pthread_mutex_unlock(&svc->lock);
		memset(st, 0, sizeof(*st));
		return vm_error_set(
			err, ENXIO,
			"no profile is running, so there is nothing to stop");
	}
	request_stop(svc, BY_DELETE);
	current_status(svc, st);
	st->session.stopping = true;
	pthread_mutex_unlock(&svc->lock);
	return 0;
}

bool vm_service_shutdown(struct vm_service *svc, unsigned timeout_ms)
{
	struct timespec deadline;
	bool idle;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&svc->lock);
	svc->shutting_down = true;
	if (svc->phase != VM_SERVICE_IDLE)
		request_stop(svc, BY_SHUTDOWN);
	while (svc->phase != VM_SERVICE_IDLE)
		if (pthread_cond_timedwait(&svc->idle, &svc->lock, &deadline) ==
		    ETIMEDOUT)
			break;
	idle = svc->phase == VM_SERVICE_IDLE;
	pthread_mutex_unlock(&svc->lock);
	return idle;
}
