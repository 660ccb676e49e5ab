// SPDX-License-Identifier: Apache-2.0
/*
 * http_oom.c - the OOM reports (agent/oom/oom.h): GET /oom lists them,
 * GET /oom/ID answers one, and /healthz's "oom" says whether victims are
 * followed and what is kept.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/oom/oom.h"
#include "agent/serve/http_int.h"
#include "common/json.h"

#define OOM_PREFIX "/oom/"

static enum MHD_Result not_running(struct vm_http_exchange *x)
{
	return vm_http_reply_error(x, 503,
				   "OOM reports are not kept by this agent");
}

enum MHD_Result vm_http_get_oom_list(struct vm_http_exchange *x)
{
	size_t len = 0;
	char *text;

	if (!x->srv->cfg.oom)
		return not_running(x);
	text = vm_oom_store_list(vm_oom_store(x->srv->cfg.oom), &len);
	if (!text)
		return vm_http_reply_error(x, 500, "out of memory");
	return vm_http_reply_text(x, 200, text, len, "application/json");
}

enum MHD_Result vm_http_get_oom_report(struct vm_http_exchange *x)
{
	const char *id = x->path + strlen(OOM_PREFIX);
	size_t len = 0;
	char *text = NULL;
	int r;

	if (!x->srv->cfg.oom)
		return not_running(x);
	if (!vm_oom_id_valid(id))
		return vm_http_reply_error(
			x, 404,
			"no such OOM report: an id is digits, a dash and digits, as GET /oom lists them");
	r = vm_oom_store_get(vm_oom_store(x->srv->cfg.oom), id, &text, &len);
	if (r == -ENOMEM)
		return vm_http_reply_error(x, 500, "out of memory");
	if (r < 0)
		return vm_http_reply_error(
			x, 404,
			"no OOM report %s is kept (GET /oom lists those that are)",
			id);
	return vm_http_reply_text(x, 200, text, len, "application/json");
}

bool vm_http_is_oom_report(const char *path)
{
	return !strncmp(path, OOM_PREFIX, strlen(OOM_PREFIX));
}

struct json_object *vm_http_oom_health(struct vm_oom *o)
{
	struct json_object *h = json_object_new_object();
	struct vm_oom_stats st;

	vm_oom_stats(o, &st);
	const struct {
		const char *name;
		uint64_t v;
	} counts[] = {
		{ "victims", st.victims },
		{ "lost", st.lost },
		{ "count", st.store.reports },
		{ "bytes", st.store.bytes },
		{ "dropped", st.store.dropped },
		{ "write_errors", st.store.write_errors },
	};

	json_object_object_add(h, "watching",
			       json_object_new_boolean(st.watching));
	json_object_object_add(h, "error", vm_json_string_or_null(st.why));
	json_object_object_add(h, "tracefs", vm_json_string_or_null(st.source));
	for (size_t i = 0; i < sizeof(counts) / sizeof(*counts); i++)
		json_object_object_add(h, counts[i].name,
				       json_object_new_uint64(counts[i].v));
	json_object_object_add(h, "write_error",
			       vm_json_string_or_null(st.store.last_error));
	json_object_object_add(h, "last",
			       vm_json_string_or_null(st.store.last_id));
	return h;
}
