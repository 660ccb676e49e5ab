// SPDX-License-Identifier: Apache-2.0
/*
 * http_profile.c - the profiling part of the REST API (docs/api.md, "REST
 * API") on top of the session manager (service.h):
 *
 *   POST   /profile/KIND           take a profile (JSON body); KIND is
 *                                  cpu, offcpu, wall, memory or faults
 *   GET    /profile/KIND           what is running (of any kind)
 *   DELETE /profile/KIND           stop it; its POST gets what was collected
 *   GET    /debug/pprof/profile    Go's net/http/pprof convention
 *   GET    /debug/pprof/heap       the same for a memory snapshot
 *                                  (?format=svg|folded: that format instead)
 *
 * One on-demand profile at a time, whatever its kind (the service's rule).
 *
 * The service answers in errnos, outcomes and plain structs; this file
 * turns them into the statuses and JSON bodies of the contract, and logs
 * one line per session with the status its client got.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/serve/http_int.h"
#include "agent/serve/request.h"
#include "agent/serve/service.h"
#include "common/log.h"

/*
 * How an error of the profiling path is answered: the one place where the
 * errnos of request.h, engine.h and service.h become statuses, with what
 * to do next through the API when the sentence alone does not say it.
 */
struct answer {
	int err;
	unsigned status;
	const char *then;
};

static const struct answer answers[] = {
	{ EBADMSG, 400, NULL }, /* the body is not JSON */
	{ EFBIG, 413, NULL }, /* the body is over the limit */
	{ EINVAL, 422, NULL }, /* a field is wrong */
	{ ESRCH, 422, NULL }, /* a pid in targets is not running */
	{ EBUSY, 409,
	  "wait for it to end or stop it with DELETE on its path (/profile/cpu, /profile/offcpu, /profile/wall, /profile/memory or /profile/faults)" },
	{ ENXIO, 412,
	  "start one with POST /profile/cpu, /profile/offcpu, /profile/wall, /profile/memory or /profile/faults" },
	/* The backend is unavailable: no perf, BPF refused, ... */
	{ ENODEV, 503, NULL },
	{ ENOENT, 503, NULL },
	{ EPERM, 503, NULL },
	{ EACCES, 503, NULL },
	{ EOPNOTSUPP, 503, NULL },
	{ ESHUTDOWN, 503, NULL }, /* the agent is stopping */
};

/* Anything else, and any failure once the backend runs, is our own. */
static const struct answer agent_failed = { 0, 500, NULL };

static const struct answer *answer_of(int r)
{
	for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++)
		if (answers[i].err == -r)
			return &answers[i];
	return &agent_failed;
}

static enum MHD_Result reply_failure(struct vm_http_exchange *x,
				     const struct answer *a,
				     const struct vm_error *err)
{
	return vm_http_reply_error(x, a->status, "%s%s%s", vm_error_str(err),
				   a->then ? "; " : "", a->then ? a->then : "");
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

static struct json_object *status_json(const struct vm_service_status *st)
{
	static const char *const phases[] = {
		[VM_SERVICE_IDLE] = "idle",
		[VM_SERVICE_STARTING] = "starting",
		[VM_SERVICE_RUNNING] = "running",
		[VM_SERVICE_FINISHING] = "finishing",
	};
	const struct vm_session_status *s = &st->session;
	struct json_object *o = json_object_new_object();
	char started[32];

	if (st->phase == VM_SERVICE_IDLE) {
		json_object_object_add(o, "running",
				       json_object_new_boolean(false));
		return o;
	}
	iso_time(s->started_unix_ms, started);
	json_object_object_add(o, "running", json_object_new_boolean(true));
	json_object_object_add(o, "state",
			       json_object_new_string(phases[st->phase]));
	json_object_object_add(o, "kind",
			       json_object_new_string(vm_kind_name(s->kind)));
	json_object_object_add(
		o, "profiler",
		json_object_new_string(vm_profiler_name(s->profiler)));
	json_object_object_add(o, "sampling_frequency",
			       json_object_new_int64(s->frequency));
	json_object_object_add(o, "timeout_seconds",
			       json_object_new_int64(s->seconds));
	json_object_object_add(o, "started", json_object_new_string(started));
	json_object_object_add(
		o, "started_unix_ms",
		json_object_new_int64((int64_t)s->started_unix_ms));
	json_object_object_add(o, "elapsed_seconds",
			       seconds_json(s->elapsed_ms));
	json_object_object_add(o, "samples",
			       json_object_new_int64((int64_t)s->samples));
	json_object_object_add(o, "stopping",
			       json_object_new_boolean(s->stopping));
	return o;
}

struct json_object *vm_http_profile_status(struct vm_service *svc)
{
	struct vm_service_status st;

	vm_service_status(svc, &st);
	return status_json(&st);
}

/*
 * One line per session, written here because it carries the status the
 * client got (0 when nobody was left to answer).
 */
static void log_session(const struct vm_profile_request *req, int r,
			const struct vm_service_result *res, unsigned status)
{
	vm_log("session profiler=%s frequency=%u seconds=%u outcome=%s status=%u samples=%" PRIu64
	       " lost=%" PRIu64 " duration_ms=%" PRIu64 " kind=%s%s%s",
	       vm_profiler_name(req->profiler), req->frequency, req->seconds,
	       vm_outcome_name(res->outcome), status, res->samples, res->lost,
	       res->duration_ms, vm_kind_name(req->kind),
	       r < 0 ? " error=" : "", r < 0 ? vm_error_str(&res->err) : "");
}

static int client_fd(struct vm_http_exchange *x)
{
	const union MHD_ConnectionInfo *ci;

	ci = sym_MHD_get_connection_info(x->conn,
					 MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

/* Run a validated request to its end and answer with the profile. */
static enum MHD_Result take_profile(struct vm_http_exchange *x,
				    const struct vm_profile_request *req,
				    bool go_convention)
{
	struct vm_http_server *srv = x->srv;
	struct vm_service_result res;
	const struct answer *a = NULL;
	int r;

	x->profile = true;
	atomic_fetch_add(&srv->profiles_in_flight, 1);
	r = vm_service_run(srv->cfg.service, req, client_fd(x), &res);
	if (r < 0)
		a = res.started ? &agent_failed : answer_of(r);
	if (res.claimed)
		log_session(req, r, &res,
			    a		    ? a->status :
			    res.client_gone ? 0 :
					      200);
	x->has_samples = r == 0;
	x->samples = res.samples;
	if (res.client_gone) {
		/* Nobody to answer: close the connection. */
		x->client_gone = true;
		free(res.out.data);
		return MHD_NO;
	}
	if (r < 0)
		return reply_failure(x, a, &res.err);
	if (go_convention)
		return vm_http_reply_data(x, 200, res.out.data, res.out.len,
					  "application/octet-stream",
					  "profile");
	return vm_http_reply_data(x, 200, res.out.data, res.out.len,
				  res.out.content_type, res.out.filename);
}

/* The kind a /profile/KIND path names (the routes name no other). */
static enum vm_profile_kind path_kind(const char *path)
{
	enum vm_profile_kind kind = VM_KIND_CPU;
	const char *slash = strrchr(path, '/');

	if (slash)
		vm_kind_parse(slash + 1, &kind);
	return kind;
}

enum MHD_Result vm_http_post_profile(struct vm_http_exchange *x)
{
	struct vm_api_request r;
	struct vm_error err = { 0 };
	int rc;

	rc = vm_request_parse_json(x->body ? x->body : "", x->body_len,
				   path_kind(x->path),
				   vm_service_limits(x->srv->cfg.service), &r,
				   &err);
	if (rc < 0)
		return reply_failure(x, answer_of(rc), &err);
	return take_profile(x, &r.req, false);
}

/*
 * Go's net/http/pprof convention, for a profile of kind: ?seconds=N (not
 * read for a snapshot) and ?format=; gzipped pprof unless another format
 * is asked, which is sent as a POST would.
 */
static enum MHD_Result pprof_convention(struct vm_http_exchange *x,
					enum vm_profile_kind kind)
{
	struct vm_api_request r;
	struct vm_error err = { 0 };
	const char *seconds = NULL;
	int rc;

	if (kind != VM_KIND_MEMORY)
		seconds = sym_MHD_lookup_connection_value(
			x->conn, MHD_GET_ARGUMENT_KIND, "seconds");
	rc = vm_request_from_pprof_query(
		seconds, vm_service_limits(x->srv->cfg.service), &r, &err);
	r.req.kind = kind;
	if (rc == 0)
		rc = vm_request_pprof_format(
			sym_MHD_lookup_connection_value(
				x->conn, MHD_GET_ARGUMENT_KIND, "format"),
			&r, &err);
	if (rc < 0)
		return reply_failure(x, answer_of(rc), &err);
	return take_profile(x, &r.req, r.req.format == VM_FORMAT_PPROF);
}

enum MHD_Result vm_http_pprof_profile(struct vm_http_exchange *x)
{
	return pprof_convention(x, VM_KIND_CPU);
}

enum MHD_Result vm_http_pprof_heap(struct vm_http_exchange *x)
{
	return pprof_convention(x, VM_KIND_MEMORY);
}

enum MHD_Result vm_http_get_profile(struct vm_http_exchange *x)
{
	return vm_http_reply_json(x, 200,
				  vm_http_profile_status(x->srv->cfg.service));
}

enum MHD_Result vm_http_delete_profile(struct vm_http_exchange *x)
{
	enum vm_profile_kind kind = path_kind(x->path);
	struct vm_service_status st;
	struct vm_error err = { 0 };
	struct json_object *body;
	int r;

	/* DELETE /profile/wall does not stop an off-CPU profile. */
	vm_service_status(x->srv->cfg.service, &st);
	if (st.phase != VM_SERVICE_IDLE && st.session.kind != kind)
		return vm_http_reply_error(
			x, 412,
			"no %s profile is running (a %s profile is: stop it with DELETE /profile/%s)",
			vm_kind_name(kind), vm_kind_name(st.session.kind),
			vm_kind_name(st.session.kind));
	r = vm_service_stop(x->srv->cfg.service, &st, &err);
	if (r < 0)
		return reply_failure(x, answer_of(r), &err);
	body = status_json(&st);
	json_object_object_add(body, "stopped", json_object_new_boolean(true));
	return vm_http_reply_json(x, 200, body);
}
