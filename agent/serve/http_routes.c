// SPDX-License-Identifier: Apache-2.0
/*
 * http_routes.c - the REST API of DESIGN.md: which method and path is
 * answered by which handler, and the handlers themselves.
 *
 *   POST   /profile/cpu            take a profile (JSON body)
 *   GET    /profile/cpu            what is running
 *   DELETE /profile/cpu            stop it; its POST gets what was collected
 *   GET    /debug/pprof/profile    Go's net/http/pprof convention (?seconds=N)
 *   GET    /healthz                disk, kernel, backends
 *   GET    /metrics                Prometheus text
 *
 * A known path with another method is 405 (with Allow); anything else 404.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/serve/health.h"
#include "agent/serve/http_int.h"
#include "agent/serve/request.h"
#include "agent/serve/service.h"

static const char known_paths[] =
	"POST/GET/DELETE /profile/cpu, GET /debug/pprof/profile, GET /healthz, GET /metrics";

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

	x->profile = true;
	atomic_fetch_add(&srv->profiles_in_flight, 1);
	vm_service_run(srv->cfg.service, req, client_fd(x), &res);
	x->has_samples = res.status == 200 || res.client_gone;
	x->samples = res.samples;
	if (res.client_gone) {
		/* Nobody to answer: close the connection. */
		x->client_gone = true;
		free(res.out.data);
		return MHD_NO;
	}
	if (res.status != 200)
		return vm_http_reply_error(x, res.status, "%s",
					   vm_error_str(&res.err));
	if (go_convention)
		return vm_http_reply_data(x, 200, res.out.data, res.out.len,
					  "application/octet-stream",
					  "profile");
	return vm_http_reply_data(x, 200, res.out.data, res.out.len,
				  res.out.content_type, res.out.filename);
}

static enum MHD_Result post_profile(struct vm_http_exchange *x)
{
	struct vm_api_request r;
	struct vm_error err = { 0 };
	int rc;

	rc = vm_request_parse_json(x->body ? x->body : "", x->body_len,
				   vm_service_limits(x->srv->cfg.service), &r,
				   &err);
	if (rc == -EBADMSG)
		return vm_http_reply_error(x, 400, "%s", vm_error_str(&err));
	if (rc < 0)
		return vm_http_reply_error(x, 422, "%s", vm_error_str(&err));
	return take_profile(x, &r.req, false);
}

static enum MHD_Result pprof_profile(struct vm_http_exchange *x)
{
	struct vm_api_request r;
	struct vm_error err = { 0 };
	const char *seconds;

	seconds = sym_MHD_lookup_connection_value(
		x->conn, MHD_GET_ARGUMENT_KIND, "seconds");
	if (vm_request_from_pprof_query(seconds,
					vm_service_limits(x->srv->cfg.service),
					&r, &err) < 0)
		return vm_http_reply_error(x, 422, "%s", vm_error_str(&err));
	return take_profile(x, &r.req, true);
}

static enum MHD_Result get_status(struct vm_http_exchange *x)
{
	return vm_http_reply_json(x, 200,
				  vm_service_status(x->srv->cfg.service));
}

static enum MHD_Result delete_profile(struct vm_http_exchange *x)
{
	struct json_object *body = NULL;
	unsigned status;

	status = vm_service_stop(x->srv->cfg.service, &body);
	return vm_http_reply_json(x, status, body);
}

static enum MHD_Result get_health(struct vm_http_exchange *x)
{
	bool usable;
	struct json_object *o;

	o = vm_health_json(x->srv->cfg.health, x->srv->cfg.service, &usable);
	return vm_http_reply_json(x, usable ? 200 : 503, o);
}

static enum MHD_Result get_metrics(struct vm_http_exchange *x)
{
	struct vm_metrics_snapshot s;
	size_t len;
	char *text;

	vm_metrics_snapshot(vm_service_metrics(x->srv->cfg.service), &s);
	text = vm_metrics_render(&s, VMTOOLS_VERSION, &len);
	if (!text)
		return vm_http_reply_error(x, 500, "out of memory");
	return vm_http_reply_text(x, 200, text, len,
				  "text/plain; version=0.0.4; charset=utf-8");
}

static const struct route {
	const char *method;
	const char *path;
	enum MHD_Result (*handler)(struct vm_http_exchange *x);
} routes[] = {
	{ "POST", "/profile/cpu", post_profile },
	{ "GET", "/profile/cpu", get_status },
	{ "DELETE", "/profile/cpu", delete_profile },
	{ "GET", "/debug/pprof/profile", pprof_profile },
	{ "GET", "/healthz", get_health },
	{ "GET", "/metrics", get_metrics },
};

enum MHD_Result vm_http_route(struct vm_http_exchange *x)
{
	const char *method = x->method;
	bool path_known = false;

	/* libmicrohttpd leaves out the body of a HEAD answer. */
	if (!strcmp(method, "HEAD") && strcmp(x->path, "/debug/pprof/profile"))
		method = "GET";
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (strcmp(routes[i].path, x->path))
			continue;
		path_known = true;
		if (!strcmp(routes[i].method, method))
			return routes[i].handler(x);
	}
	if (path_known)
		return vm_http_reply_error(
			x, 405, "%s is not allowed on %s; see the Allow header",
			x->method, x->path);
	return vm_http_reply_error(x, 404,
				   "no such path %s; the agent serves %s",
				   x->path, known_paths);
}
