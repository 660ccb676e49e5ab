// SPDX-License-Identifier: Apache-2.0
/*
 * service.c - one profiling session at a time, shared by the connection
 * threads of the HTTP server.
 *
 * A session goes idle -> starting -> running -> finishing -> idle.  The
 * mutex guards that state and the session pointer; the session is visible
 * to GET and DELETE (vm_session_status / vm_session_stop) only while
 * running, so no other thread touches it once the owner starts to finish
 * and free it.  The slot stays taken until the session is freed: a second
 * POST gets 409 until then, so two backends never run at once.
 */
#include "agent/serve/service.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/log.h"

enum phase { IDLE, STARTING, RUNNING, FINISHING };

enum stop_reason { NOT_STOPPED, BY_DELETE, BY_HANGUP, BY_SHUTDOWN };

struct vm_service {
	struct vm_service_config cfg;
	struct vm_metrics metrics;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	enum phase phase;
	bool shutting_down;
	enum stop_reason stop_reason;
	struct vm_session *session; /* only while RUNNING */
	/* What GET reports; the session's figures are merged in. */
	struct vm_profile_request req;
	uint64_t started_unix_ms;
	uint64_t started_mono_ms;
	struct vm_session_status last; /* as the session ended */
};

struct watch {
	struct vm_service *svc;
	int client_fd;
	int done_fd;
};

static uint64_t now_ms(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int vm_service_new(const struct vm_service_config *cfg, struct vm_service **out,
		   struct vm_error *err)
{
	struct vm_service *svc = calloc(1, sizeof(*svc));

	if (!svc)
		return vm_error_set(err, ENOMEM, "out of memory");
	svc->cfg = *cfg;
	vm_metrics_init(&svc->metrics);
	pthread_mutex_init(&svc->lock, NULL);
	pthread_cond_init(&svc->idle, NULL);
	*out = svc;
	return 0;
}

void vm_service_free(struct vm_service *svc)
{
	if (!svc)
		return;
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
	if (svc->phase == RUNNING && svc->session)
		vm_session_stop(svc->session);
}

/* The status of the session in the slot; called with the lock held. */
static void current_status(struct vm_service *svc, struct vm_session_status *st)
{
	if (svc->phase == RUNNING && svc->session) {
		vm_session_status(svc->session, st);
		return;
	}
	if (svc->phase == FINISHING) {
		*st = svc->last;
		st->stopping = true;
		return;
	}
	memset(st, 0, sizeof(*st));
	st->profiler = svc->req.profiler;
	st->frequency = svc->req.frequency;
	st->seconds = svc->req.seconds;
	st->started_unix_ms = svc->started_unix_ms;
	st->elapsed_ms = now_ms(CLOCK_MONOTONIC) - svc->started_mono_ms;
	st->stopping = svc->stop_reason != NOT_STOPPED;
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

static unsigned start_status(int r)
{
	switch (-r) {
	case ENODEV:
	case ENOENT:
	case EPERM:
	case EACCES:
	case EOPNOTSUPP:
		return 503;
	case EINVAL:
	case ERANGE:
	case ESRCH: /* a pid in targets is not running */
		return 422;
	case EBUSY:
		return 409;
	default:
		return 500;
	}
}

static void log_session(const struct vm_profile_request *req,
			const struct vm_service_result *res, uint64_t lost,
			uint64_t ms)
{
	vm_log("session profiler=%s frequency=%u seconds=%u outcome=%s status=%u samples=%llu lost=%llu duration_ms=%llu%s%s",
	       vm_profiler_name(req->profiler), req->frequency, req->seconds,
	       vm_outcome_name(res->outcome), res->status,
	       (unsigned long long)res->samples, (unsigned long long)lost,
	       (unsigned long long)ms,
	       res->status == 200 || res->client_gone ? "" : " error=",
	       res->status == 200 || res->client_gone ?
		       "" :
		       vm_error_str(&res->err));
}

/* Claim the slot, or say why not; called with the lock held. */
static bool claim(struct vm_service *svc, const struct vm_profile_request *req,
		  struct vm_service_result *res)
{
	struct vm_session_status st;

	if (svc->shutting_down) {
		res->status = 503;
		vm_error_set(
			&res->err, ESHUTDOWN,
			"the agent is shutting down; retry when it is back");
		return false;
	}
	if (svc->phase != IDLE) {
		current_status(svc, &st);
		res->status = 409;
		vm_error_set(
			&res->err, EBUSY,
			"another profile is running (%s at %u Hz for %u s, %.1f s elapsed); wait for it to end or stop it with DELETE /profile/cpu",
			vm_profiler_name(st.profiler), st.frequency, st.seconds,
			st.elapsed_ms / 1000.0);
		return false;
	}
	svc->phase = STARTING;
	svc->stop_reason = NOT_STOPPED;
	svc->req = *req;
	svc->started_unix_ms = now_ms(CLOCK_REALTIME);
	svc->started_mono_ms = now_ms(CLOCK_MONOTONIC);
	return true;
}

static void release(struct vm_service *svc)
{
	pthread_mutex_lock(&svc->lock);
	svc->phase = IDLE;
	svc->session = NULL;
	pthread_cond_broadcast(&svc->idle);
	pthread_mutex_unlock(&svc->lock);
	vm_metrics_running(&svc->metrics, false);
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

void vm_service_run(struct vm_service *svc,
		    const struct vm_profile_request *req, int client_fd,
		    struct vm_service_result *res)
{
	struct vm_session *s = NULL;
	struct watch w = { .svc = svc, .client_fd = client_fd, .done_fd = -1 };
	pthread_t watcher;
	bool watching = false;
	enum stop_reason why;
	uint64_t lost = 0, ms;
	int r;

	memset(res, 0, sizeof(*res));
	pthread_mutex_lock(&svc->lock);
	if (!claim(svc, req, res)) {
		pthread_mutex_unlock(&svc->lock);
		if (res->status == 409)
			vm_metrics_rejected(&svc->metrics);
		return;
	}
	pthread_mutex_unlock(&svc->lock);
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
		svc->phase = RUNNING;
		/* DELETE, hang-up or SIGTERM while the backend was starting. */
		if (svc->stop_reason != NOT_STOPPED)
			vm_session_stop(s);
	}
	pthread_mutex_unlock(&svc->lock);
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
	svc->phase = FINISHING;
	svc->session = NULL;
	why = svc->stop_reason;
	pthread_mutex_unlock(&svc->lock);

	res->outcome = outcome_of(why);
	if (why == BY_HANGUP) {
		res->client_gone = true;
		res->samples = s ? svc->last.samples : 0;
	} else if (r < 0) {
		res->status = s ? 500 : start_status(r);
		res->outcome = VM_OUTCOME_FAILED;
	} else {
		r = vm_session_finish(s, &res->out, &res->err);
		if (r < 0) {
			res->status = 500;
			res->outcome = VM_OUTCOME_FAILED;
		} else {
			res->status = 200;
			res->samples = res->out.samples;
			lost = res->out.lost;
		}
	}
	if (s)
		vm_session_free(s);
	ms = now_ms(CLOCK_MONOTONIC) - svc->started_mono_ms;
	/* A refused start is a bad request, not a session. */
	if (s || res->status >= 500)
		vm_metrics_session(&svc->metrics, res->outcome, res->samples,
				   lost, ms / 1000.0);
	log_session(req, res, lost, ms);
	release(svc);
}

static void iso_time(uint64_t unix_ms, char buf[32])
{
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Seconds with millisecond precision, printed as such. */
static struct json_object *seconds_json(uint64_t ms)
{
	char text[32];

	snprintf(text, sizeof(text), "%.3f", ms / 1000.0);
	return json_object_new_double_s(ms / 1000.0, text);
}

static struct json_object *status_json(struct vm_service *svc,
				       const struct vm_session_status *st)
{
	static const char *const phases[] = { "idle", "starting", "running",
					      "finishing" };
	struct json_object *o = json_object_new_object();
	char started[32];

	iso_time(st->started_unix_ms, started);
	json_object_object_add(o, "running", json_object_new_boolean(true));
	json_object_object_add(o, "state",
			       json_object_new_string(phases[svc->phase]));
	json_object_object_add(
		o, "profiler",
		json_object_new_string(vm_profiler_name(st->profiler)));
	json_object_object_add(o, "sampling_frequency",
			       json_object_new_int64(st->frequency));
	json_object_object_add(o, "timeout_seconds",
			       json_object_new_int64(st->seconds));
	json_object_object_add(o, "started", json_object_new_string(started));
	json_object_object_add(
		o, "started_unix_ms",
		json_object_new_int64((int64_t)st->started_unix_ms));
	json_object_object_add(o, "elapsed_seconds",
			       seconds_json(st->elapsed_ms));
	json_object_object_add(o, "samples",
			       json_object_new_int64((int64_t)st->samples));
	json_object_object_add(o, "stopping",
			       json_object_new_boolean(st->stopping));
	return o;
}

struct json_object *vm_service_status(struct vm_service *svc)
{
	struct vm_session_status st;
	struct json_object *o;

	pthread_mutex_lock(&svc->lock);
	if (svc->phase == IDLE) {
		pthread_mutex_unlock(&svc->lock);
		o = json_object_new_object();
		json_object_object_add(o, "running",
				       json_object_new_boolean(false));
		return o;
	}
	current_status(svc, &st);
	o = status_json(svc, &st);
	pthread_mutex_unlock(&svc->lock);
	return o;
}

unsigned vm_service_stop(struct vm_service *svc, struct json_object **body)
{
	struct vm_session_status st;

	pthread_mutex_lock(&svc->lock);
	if (svc->phase == IDLE) {
		pthread_mutex_unlock(&svc->lock);
		*body = json_object_new_object();
		json_object_object_add(
			*body, "error",
			json_object_new_string(
				"no profile is running, so there is nothing to stop; start one with POST /profile/cpu"));
		return 412;
	}
	request_stop(svc, BY_DELETE);
	current_status(svc, &st);
	st.stopping = true;
	*body = status_json(svc, &st);
	json_object_object_add(*body, "stopped", json_object_new_boolean(true));
	pthread_mutex_unlock(&svc->lock);
	return 200;
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
	if (svc->phase != IDLE)
		request_stop(svc, BY_SHUTDOWN);
	while (svc->phase != IDLE)
		if (pthread_cond_timedwait(&svc->idle, &svc->lock, &deadline) ==
		    ETIMEDOUT)
			break;
	idle = svc->phase == IDLE;
	pthread_mutex_unlock(&svc->lock);
	return idle;
}
