// SPDX-License-Identifier: Apache-2.0
/*
 * http_routes.c - the REST API of docs/api.md: which method and path is
 * answered by which handler, and the small handlers themselves.
 *
 *   POST   /profile/cpu            take a profile (JSON body)
 *   GET    /profile/cpu            what is running
 *   DELETE /profile/cpu            stop it; its POST gets what was collected
 *   ...    /profile/offcpu, /profile/wall, /profile/memory,
 *          /profile/faults: the same for off-CPU and wall-clock profiles,
 *          memory snapshots and page faults
 *   GET    /debug/pprof/profile    Go's net/http/pprof convention (?seconds=N)
 *   GET    /debug/pprof/heap       a memory snapshot, by the same convention
 *   GET    /profile/cpu/history    the continuous profile's windows
 *   GET    /profile/cpu/history/profile  windows merged (http_history.c)
 *   GET    /profile/memory/history  the continuous memory snapshots, and
 *          .../profile?at= one of them, .../growth?from=&until= two
 *          compared
 *   GET    /healthz                disk, kernel, backends, what is running
 *   GET    /metrics                Prometheus text
 *   GET    /ui/...                 the web UI (http_ui.c)
 *
 * The profiling routes are http_profile.c's.
 *
 * A known path with another method is 405 (with Allow); anything else 404.
 */
#include <string.h>

#include <stdlib.h>

#include "agent/continuous/continuous.h"
#include "agent/serve/health.h"
#include "agent/serve/http_int.h"
#include "agent/serve/service.h"

static const char known_paths[] =
	"POST/GET/DELETE /profile/cpu, /profile/offcpu, /profile/wall, /profile/memory and /profile/faults, GET /profile/cpu/history, GET /profile/cpu/history/profile, GET /profile/memory/history, GET /profile/memory/history/profile, GET /profile/memory/history/growth, GET /debug/pprof/profile, GET /debug/pprof/heap, GET /healthz, GET /metrics, GET /ui/";

/*
 * The kinds of profile there are (limits.c's one list), for the web UI's
 * choice of kind: [{"name", "title", "snapshot"}].
 */
static struct json_object *kinds_json(void)
{
	struct json_object *a = json_object_new_array();

	for (int k = 0; k < VM_KINDS; k++) {
		struct json_object *o;

		if (!vm_kind_name(k))
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "name",
				       json_object_new_string(vm_kind_name(k)));
		json_object_object_add(
			o, "title", json_object_new_string(vm_kind_title(k)));
		json_object_object_add(
			o, "snapshot",
			json_object_new_boolean(vm_kind_is_snapshot(k)));
		json_object_array_add(a, o);
	}
	return a;
}

static enum MHD_Result get_health(struct vm_http_exchange *x)
{
	bool usable;
	struct json_object *o;

	o = vm_health_json(x->srv->cfg.health, &usable);
	json_object_object_add(o, "kinds", kinds_json());
	json_object_object_add(o, "profile",
			       vm_http_profile_status(x->srv->cfg.service));
	if (x->srv->cfg.continuous)
		json_object_object_add(
			o, "continuous",
			vm_http_continuous_health(x->srv->cfg.continuous));
	return vm_http_reply_json(x, usable ? 200 : 503, o);
}

static enum MHD_Result get_metrics(struct vm_http_exchange *x)
{
	struct vm_metrics_snapshot s;
	size_t len;
	char *text;

	vm_metrics_snapshot(vm_service_metrics(x->srv->cfg.service), &s);
	text = vm_metrics_render(&s, VMTOOLS_VERSION, &len);
	if (text && x->srv->cfg.continuous) {
		struct vm_continuous_stats cs;
		size_t more_len;
		char *more, *both;

		vm_continuous_stats(x->srv->cfg.continuous, &cs);
		more = vm_continuous_render_metrics(&cs, &more_len);
		both = more ? realloc(text, len + more_len + 1) : NULL;
		if (both) {
			memcpy(both + len, more, more_len + 1);
			len += more_len;
			text = both;
		}
		free(more);
		if (!both) {
			free(text);
			text = NULL;
		}
	}
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
	{ "POST", "/profile/cpu", vm_http_post_profile },
	{ "GET", "/profile/cpu", vm_http_get_profile },
	{ "DELETE", "/profile/cpu", vm_http_delete_profile },
	{ "POST", "/profile/offcpu", vm_http_post_profile },
	{ "GET", "/profile/offcpu", vm_http_get_profile },
	{ "DELETE", "/profile/offcpu", vm_http_delete_profile },
	{ "POST", "/profile/wall", vm_http_post_profile },
	{ "GET", "/profile/wall", vm_http_get_profile },
	{ "DELETE", "/profile/wall", vm_http_delete_profile },
	{ "POST", "/profile/memory", vm_http_post_profile },
	{ "GET", "/profile/memory", vm_http_get_profile },
	{ "DELETE", "/profile/memory", vm_http_delete_profile },
	{ "POST", "/profile/faults", vm_http_post_profile },
	{ "GET", "/profile/faults", vm_http_get_profile },
	{ "DELETE", "/profile/faults", vm_http_delete_profile },
	{ "GET", "/debug/pprof/profile", vm_http_pprof_profile },
	{ "GET", "/debug/pprof/heap", vm_http_pprof_heap },
	{ "GET", "/profile/cpu/history", vm_http_get_history },
	{ "GET", "/profile/cpu/history/profile", vm_http_get_history_profile },
	{ "GET", "/profile/memory/history", vm_http_get_memory_history },
	{ "GET", "/profile/memory/history/profile",
	  vm_http_get_memory_snapshot },
	{ "GET", "/profile/memory/history/growth", vm_http_get_memory_growth },
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
	/* The web UI: a tree of files under /ui/ (and /ui itself). */
	if (!strncmp(x->path, "/ui", 3) &&
	    (x->path[3] == '\0' || x->path[3] == '/')) {
		if (!strcmp(method, "GET"))
			return vm_http_ui(x);
		return vm_http_reply_error(
			x, 405, "%s is not allowed on %s; see the Allow header",
			x->method, x->path);
	}
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
