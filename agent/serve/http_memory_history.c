// SPDX-License-Identifier: Apache-2.0
/*
 * http_memory_history.c - the continuous memory snapshots in the REST API
 * (docs/api.md, "Continuous memory snapshots"):
 *
 *   GET /profile/memory/history          the index of the snapshots kept
 *   GET /profile/memory/history/profile  ?at=[&format=][&archive=]
 *                                        the snapshot nearest a time
 *   GET /profile/memory/history/growth   ?from=&until=[&archive=]
 *                                        the snapshot nearest until minus
 *                                        the one nearest from, per pid and
 *                                        context path, as pprof
 *
 * Times are read as the CPU history's are (history_time.h).  The growth
 * view is pprof only: its values are signed (memory given back is
 * negative, as in `go tool pprof -diff_base`), which folded stacks and
 * flame graphs cannot draw.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/continuous/continuous.h"
#include "agent/history/history.h"
#include "agent/history/history_time.h"
#include "agent/serve/http_int.h"
#include "common/clock.h"

static const char *arg(struct vm_http_exchange *x, const char *name)
{
	return sym_MHD_lookup_connection_value(x->conn, MHD_GET_ARGUMENT_KIND,
					       name);
}

static struct json_object *time_json(uint64_t ns)
{
	char buf[32];

	vm_history_format_rfc3339(ns, buf);
	return json_object_new_string(buf);
}

/*
 * The memory history, or NULL with the answer given: 404 when continuous
 * profiling or its memory snapshots are off.
 */
static struct vm_history *memory_history(struct vm_http_exchange *x,
					 enum MHD_Result *answer)
{
	struct vm_continuous *c = x->srv->cfg.continuous;
	struct vm_history *h = c ? vm_continuous_memory_history(c) : NULL;

	if (!c)
		*answer = vm_http_reply_error(
			x, 404,
			"continuous profiling is off: start the agent with serve --continuous");
	else if (!h)
		*answer = vm_http_reply_error(
			x, 404,
			"continuous memory snapshots are off (--memory-every 0): start the agent with --memory-every SECONDS");
	return h;
}

enum MHD_Result vm_http_get_memory_history(struct vm_http_exchange *x)
{
	struct vm_continuous *c = x->srv->cfg.continuous;
	struct json_object *o, *ws;
	struct vm_history_index idx;
	struct vm_history *h;

	if (!c || !vm_continuous_memory_history(c)) {
		o = json_object_new_object();
		json_object_object_add(o, "continuous",
				       json_object_new_boolean(false));
		return vm_http_reply_json(x, 200, o);
	}
	h = vm_continuous_memory_history(c);
	if (vm_history_get_index(h, &idx) < 0)
		return vm_http_reply_error(x, 500, "out of memory");
	o = json_object_new_object();
	json_object_object_add(o, "continuous", json_object_new_boolean(true));
	json_object_object_add(
		o, "every_seconds",
		json_object_new_int64(vm_continuous_config(c)->memory_every));
	json_object_object_add(o, "oldest",
			       idx.n ? time_json(idx.v[0].start_ns) : NULL);
	json_object_object_add(o, "newest",
			       idx.n ? time_json(idx.v[idx.n - 1].start_ns) :
				       NULL);
	json_object_object_add(o, "bytes",
			       json_object_new_int64((int64_t)idx.bytes));
	json_object_object_add(o, "dropped_snapshots",
			       json_object_new_int64((int64_t)idx.dropped));
	ws = json_object_new_array();
	for (size_t i = 0; i < idx.n; i++) {
		struct json_object *w = json_object_new_object();

		json_object_object_add(w, "time", time_json(idx.v[i].start_ns));
		json_object_object_add(
			w, "walk_ms",
			json_object_new_int64((
				int64_t)((idx.v[i].end_ns - idx.v[i].start_ns) /
					 1000000)));
		json_object_object_add(
			w, "samples",
			json_object_new_int64((int64_t)idx.v[i].samples));
		json_object_array_add(ws, w);
	}
	json_object_object_add(o, "snapshots", ws);
	free(idx.v);
	return vm_http_reply_json(x, 200, o);
}

/* A time parameter, now when absent; its name first in the error. */
static int time_arg(struct vm_http_exchange *x, const char *name, uint64_t now,
		    bool required, uint64_t *out, struct vm_error *err)
{
	const char *v = arg(x, name);
	struct vm_error why = { 0 };

	*out = now;
	if (!v && required)
		return vm_error_set(
			err, EINVAL,
			"%s is missing: give a time (RFC 3339, Unix seconds, or relative such as -5m)",
			name);
	if (v && vm_history_parse_time(v, now, out, &why) < 0)
		return vm_error_set(err, EINVAL, "%s: %s", name,
				    vm_error_str(&why));
	return 0;
}

/* format= and archive=; growth takes pprof only. */
static int format_args(struct vm_http_exchange *x, bool pprof_only,
		       enum vm_format *format, bool *gzip, struct vm_error *err)
{
	const char *f = arg(x, "format"), *archive = arg(x, "archive");

	*format = VM_FORMAT_PPROF;
	if (f && vm_format_from_name(f, format) < 0)
		return vm_error_set(
			err, EINVAL,
			"format '%.32s' is not known: use " VM_FORMAT_NAMES, f);
	if (pprof_only && *format != VM_FORMAT_PPROF)
		return vm_error_set(
			err, EINVAL,
			"the growth view is pprof only (its values may be negative): leave format out");
	if (archive && strcmp(archive, "true") && strcmp(archive, "false"))
		return vm_error_set(err, EINVAL,
				    "archive must be true or false");
	*gzip = archive && !strcmp(archive, "true");
	return 0;
}

struct encode_ctx {
	enum vm_format format;
	bool gzip;
	struct vm_encoded out;
};

static int encode(const struct vm_symbolized *y,
		  const struct vm_history_window *span, void *arg,
		  struct vm_error *err)
{
	struct encode_ctx *ctx = arg;

	(void)span;
	return vm_encode_profile(y, ctx->format, ctx->gzip, &ctx->out, err);
}

static enum MHD_Result reply(struct vm_http_exchange *x, int r,
			     struct encode_ctx *ctx, struct vm_error *err)
{
	if (r == -ENOENT)
		return vm_http_reply_error(
			x, 404,
			"%s; GET /profile/memory/history lists what is kept",
			vm_error_str(err));
	if (r == -EBUSY)
		return vm_http_reply_error(x, 503, "%s", vm_error_str(err));
	if (r < 0)
		return vm_http_reply_error(x, 500, "%s", vm_error_str(err));
	return vm_http_reply_data(x, 200, ctx->out.data, ctx->out.len,
				  ctx->out.content_type, ctx->out.filename);
}

enum MHD_Result vm_http_get_memory_snapshot(struct vm_http_exchange *x)
{
	uint64_t now = vm_clock_ns(CLOCK_REALTIME), at;
	struct encode_ctx ctx = { 0 };
	struct vm_error err = { 0 };
	enum MHD_Result answer;
	struct vm_history *h = memory_history(x, &answer);
	int r;

	if (!h)
		return answer;
	if (time_arg(x, "at", now, false, &at, &err) < 0 ||
	    format_args(x, false, &ctx.format, &ctx.gzip, &err) < 0)
		return vm_http_reply_error(x, 422, "%s", vm_error_str(&err));
	r = vm_history_nearest(h, at, encode, &ctx, &err);
	return reply(x, r, &ctx, &err);
}

enum MHD_Result vm_http_get_memory_growth(struct vm_http_exchange *x)
{
	uint64_t now = vm_clock_ns(CLOCK_REALTIME), from, until;
	struct encode_ctx ctx = { 0 };
	struct vm_error err = { 0 };
	enum MHD_Result answer;
	struct vm_history *h = memory_history(x, &answer);
	int r;

	if (!h)
		return answer;
	if (time_arg(x, "from", now, true, &from, &err) < 0 ||
	    time_arg(x, "until", now, false, &until, &err) < 0 ||
	    format_args(x, true, &ctx.format, &ctx.gzip, &err) < 0)
		return vm_http_reply_error(x, 422, "%s", vm_error_str(&err));
	if (from >= until)
		return vm_http_reply_error(x, 422, "from must be before until");
	r = vm_history_growth(h, from, until, encode, &ctx, &err);
	return reply(x, r, &ctx, &err);
}
