// SPDX-License-Identifier: Apache-2.0
/*
 * http_history.c - the continuous profile's history in the REST API
 * (docs/api.md, "Continuous profiling and history"):
 *
 *   GET /profile/cpu/history           the index of the windows kept
 *   GET /profile/cpu/history/profile   ?from=&until=[&format=][&archive=]
 *                                      the windows of a span, merged
 *
 * Times come as RFC 3339, Unix seconds or relative to now
 * (history_time.h); the merged profile is encoded by the engine's one
 * format dispatch (vm_encode_profile), so every format a POST may ask
 * for is also one here.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/history/history.h"
#include "agent/history/history_time.h"
#include "agent/continuous/continuous.h"
#include "agent/serve/http_int.h"
#include "common/clock.h"
#include "common/json.h"

static struct json_object *time_json(uint64_t ns)
{
	char buf[32];

	vm_history_format_rfc3339(ns, buf);
	return json_object_new_string(buf);
}

enum MHD_Result vm_http_get_history(struct vm_http_exchange *x)
{
	struct vm_continuous *c = x->srv->cfg.continuous;
	struct json_object *o = json_object_new_object(), *ws;
	const struct vm_continuous_config *cfg;
	struct vm_history_index idx;

	if (!c) {
		json_object_object_add(o, "continuous",
				       json_object_new_boolean(false));
		return vm_http_reply_json(x, 200, o);
	}
	if (vm_history_get_index(vm_continuous_history(c), &idx) < 0) {
		json_object_put(o);
		return vm_http_reply_error(x, 500, "out of memory");
	}
	cfg = vm_continuous_config(c);
	json_object_object_add(o, "continuous", json_object_new_boolean(true));
	json_object_object_add(o, "frequency",
			       json_object_new_int64(cfg->frequency));
	json_object_object_add(o, "interval_seconds",
			       json_object_new_int64(cfg->interval));
	json_object_object_add(o, "oldest",
			       idx.n ? time_json(idx.v[0].start_ns) : NULL);
	json_object_object_add(
		o, "newest", idx.n ? time_json(idx.v[idx.n - 1].end_ns) : NULL);
	json_object_object_add(o, "bytes",
			       json_object_new_int64((int64_t)idx.bytes));
	json_object_object_add(o, "dropped_windows",
			       json_object_new_int64((int64_t)idx.dropped));
	ws = json_object_new_array();
	for (size_t i = 0; i < idx.n; i++) {
		struct json_object *w = json_object_new_object();

		json_object_object_add(w, "start",
				       time_json(idx.v[i].start_ns));
		json_object_object_add(w, "end", time_json(idx.v[i].end_ns));
		json_object_object_add(
			w, "samples",
			json_object_new_int64((int64_t)idx.v[i].samples));
		json_object_object_add(
			w, "lost",
			json_object_new_int64((int64_t)idx.v[i].lost));
		json_object_array_add(ws, w);
	}
	json_object_object_add(o, "windows", ws);
	free(idx.v);
	return vm_http_reply_json(x, 200, o);
}

static const char *arg(struct vm_http_exchange *x, const char *name)
{
	return sym_MHD_lookup_connection_value(x->conn, MHD_GET_ARGUMENT_KIND,
					       name);
}

/* The query of a merged profile, checked. */
struct history_query {
	uint64_t from_ns, until_ns;
	enum vm_format format;
	bool gzip;
};

/* A time parameter; its name first in the error. */
static int parse_time_arg(const char *name, const char *value, uint64_t now,
			  uint64_t *out, struct vm_error *err)
{
	struct vm_error why = { 0 };

	if (vm_history_parse_time(value, now, out, &why) < 0)
		return vm_error_set(err, EINVAL, "%s: %s", name,
				    vm_error_str(&why));
	return 0;
}

static int parse_query(struct vm_http_exchange *x, uint32_t interval,
		       struct history_query *q, struct vm_error *err)
{
	uint64_t now = vm_clock_ns(CLOCK_REALTIME);
	const char *from = arg(x, "from"), *until = arg(x, "until");
	const char *format = arg(x, "format"), *archive = arg(x, "archive");
	int r;

	q->format = VM_FORMAT_PPROF;
	q->gzip = false;
	q->until_ns = now;
	if (until) {
		r = parse_time_arg("until", until, now, &q->until_ns, err);
		if (r < 0)
			return r;
	}
	q->from_ns = q->until_ns - (uint64_t)interval * 1000000000ULL;
	if (from) {
		r = parse_time_arg("from", from, now, &q->from_ns, err);
		if (r < 0)
			return r;
	}
	if (q->from_ns >= q->until_ns)
		return vm_error_set(err, EINVAL, "from must be before until");
	if (format && vm_format_from_name(format, &q->format) < 0)
		return vm_error_set(
			err, EINVAL,
			"format '%.32s' is not known: use pprof, folded or svg",
			format);
	if (archive && strcmp(archive, "true") && strcmp(archive, "false"))
		return vm_error_set(err, EINVAL,
				    "archive must be true or false");
	q->gzip = archive && !strcmp(archive, "true");
	return 0;
}

struct encode_ctx {
	const struct history_query *q;
	struct vm_encoded out;
};

static int encode_merged(const struct vm_symbolized *y,
			 const struct vm_history_window *span, void *arg,
			 struct vm_error *err)
{
	struct encode_ctx *ctx = arg;

	(void)span;
	return vm_encode_profile(y, ctx->q->format, ctx->q->gzip, &ctx->out,
				 err);
}

enum MHD_Result vm_http_get_history_profile(struct vm_http_exchange *x)
{
	struct vm_continuous *c = x->srv->cfg.continuous;
	struct history_query q;
	struct encode_ctx ctx = { .q = &q };
	struct vm_error err = { 0 };
	int r;

	if (!c)
		return vm_http_reply_error(
			x, 404,
			"continuous profiling is off: start the agent with serve --continuous");
	if (parse_query(x, vm_continuous_config(c)->interval, &q, &err) < 0)
		return vm_http_reply_error(x, 422, "%s", vm_error_str(&err));
	r = vm_history_merge(vm_continuous_history(c), q.from_ns, q.until_ns,
			     encode_merged, &ctx, &err);
	if (r == -ENOENT)
		return vm_http_reply_error(
			x, 404,
			"%s; GET /profile/cpu/history lists what is kept",
			vm_error_str(&err));
	if (r == -EBUSY)
		return vm_http_reply_error(x, 503, "%s", vm_error_str(&err));
	if (r < 0)
		return vm_http_reply_error(x, 500, "%s", vm_error_str(&err));
	return vm_http_reply_data(x, 200, ctx.out.data, ctx.out.len,
				  ctx.out.content_type, ctx.out.filename);
}

struct json_object *vm_http_continuous_health(struct vm_continuous *c)
{
	struct json_object *o = json_object_new_object(), *h;
	struct vm_continuous_stats st;

	vm_continuous_stats(c, &st);
	json_object_object_add(o, "sampling",
			       json_object_new_boolean(st.sampling));
	json_object_object_add(o, "windows",
			       json_object_new_int64((int64_t)st.windows));
	json_object_object_add(o, "error",
			       vm_json_string_or_null(st.last_error));
	json_object_object_add(
		o, "history_bytes",
		json_object_new_int64((int64_t)st.history_bytes));
	json_object_object_add(
		o, "dropped_windows",
		json_object_new_int64((int64_t)st.history_dropped));
	if (st.has_dir) {
		h = json_object_new_object();
		json_object_object_add(
			h, "files",
			json_object_new_int64((int64_t)st.dir.files));
		json_object_object_add(
			h, "bytes",
			json_object_new_int64((int64_t)st.dir.bytes));
		json_object_object_add(
			h, "dropped_windows",
			json_object_new_int64((int64_t)st.dir.dropped));
		json_object_object_add(
			h, "write_errors",
			json_object_new_int64((int64_t)st.dir.write_errors));
		json_object_object_add(
			h, "error", vm_json_string_or_null(st.dir.last_error));
		json_object_object_add(o, "history_dir", h);
	}
	if (st.has_push) {
		h = json_object_new_object();
		json_object_object_add(
			h, "queued",
			json_object_new_int64((int64_t)st.push.queued));
		for (int i = 0; i < VM_PUSH_OUTCOMES; i++)
			json_object_object_add(
				h, vm_push_outcome_name(i),
				json_object_new_int64(
					(int64_t)st.push.outcomes[i]));
		json_object_object_add(
			h, "error", vm_json_string_or_null(st.push.last_error));
		json_object_object_add(o, "push", h);
	}
	if (st.has_memory) {
		h = json_object_new_object();
		json_object_object_add(
			h, "snapshots",
			json_object_new_int64((int64_t)st.memory.snapshots));
		json_object_object_add(
			h, "history_bytes",
			json_object_new_int64(
				(int64_t)st.memory_history_bytes));
		json_object_object_add(
			h, "error",
			vm_json_string_or_null(st.memory.last_error));
		json_object_object_add(o, "memory", h);
	}
	return o;
}
