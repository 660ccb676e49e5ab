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

struct json_object *vm_http_time_json(uint64_t ns)
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
			       idx.n ? vm_http_time_json(idx.v[0].start_ns) :
				       NULL);
	json_object_object_add(
		o, "newest",
		idx.n ? vm_http_time_json(idx.v[idx.n - 1].end_ns) : NULL);
	json_object_object_add(o, "bytes",
			       json_object_new_int64((int64_t)idx.bytes));
	json_object_object_add(o, "dropped_windows",
			       json_object_new_int64((int64_t)idx.dropped));
	ws = json_object_new_array();
	for (size_t i = 0; i < idx.n; i++) {
		struct json_object *w = json_object_new_object();

		json_object_object_add(w, "start",
				       vm_http_time_json(idx.v[i].start_ns));
		json_object_object_add(w, "end",
				       vm_http_time_json(idx.v[i].end_ns));
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
};

int vm_http_history_time(const char *name, const char *value, uint64_t now,
			 uint64_t *out, struct vm_error *err)
{
	struct vm_error why = { 0 };

	if (vm_history_parse_time(value, now, out, &why) < 0)
		return vm_error_set(err, EINVAL, "%s: %s", name,
				    vm_error_str(&why));
	return 0;
}

int vm_http_history_format(struct vm_http_exchange *x,
			   struct vm_http_history_answer *a,
			   struct vm_error *err)
{
	const char *format = arg(x, "format"), *archive = arg(x, "archive");

	a->format = VM_FORMAT_PPROF;
	if (format && vm_format_from_name(format, &a->format) < 0)
		return vm_error_set(
			err, EINVAL,
			"format '%.32s' is not known: use " VM_FORMAT_NAMES,
			format);
	if (archive && strcmp(archive, "true") && strcmp(archive, "false"))
		return vm_error_set(err, EINVAL,
				    "archive must be true or false");
	a->gzip = archive && !strcmp(archive, "true");
	return 0;
}

static int parse_query(struct vm_http_exchange *x, uint32_t interval,
		       struct history_query *q, struct vm_error *err)
{
	uint64_t now = vm_clock_ns(CLOCK_REALTIME);
	const char *from = arg(x, "from"), *until = arg(x, "until");
	int r;

	q->until_ns = now;
	if (until) {
		r = vm_http_history_time("until", until, now, &q->until_ns,
					 err);
		if (r < 0)
			return r;
	}
	q->from_ns = q->until_ns - (uint64_t)interval * 1000000000ULL;
	if (from) {
		r = vm_http_history_time("from", from, now, &q->from_ns, err);
		if (r < 0)
			return r;
	}
	if (q->from_ns >= q->until_ns)
		return vm_error_set(err, EINVAL, "from must be before until");
	return 0;
}

int vm_http_history_encode(const struct vm_symbolized *y,
			   const struct vm_history_window *span, void *arg,
			   struct vm_error *err)
{
	struct vm_http_history_answer *a = arg;

	(void)span;
	return vm_encode_profile(y, a->format, a->gzip, &a->out, err);
}

enum MHD_Result vm_http_history_reply(struct vm_http_exchange *x, int r,
				      struct vm_http_history_answer *a,
				      const char *index, struct vm_error *err)
{
	if (r == -ENOENT)
		return vm_http_reply_error(x, 404,
					   "%s; GET %s lists what is kept",
					   vm_error_str(err), index);
	if (r == -EBUSY)
		return vm_http_reply_error(x, 503, "%s", vm_error_str(err));
	if (r < 0)
		return vm_http_reply_error(x, 500, "%s", vm_error_str(err));
	return vm_http_reply_data(x, 200, a->out.data, a->out.len,
				  a->out.content_type, a->out.filename);
}

enum MHD_Result vm_http_get_history_profile(struct vm_http_exchange *x)
{
	struct vm_continuous *c = x->srv->cfg.continuous;
	struct history_query q;
	struct vm_http_history_answer a = { 0 };
	struct vm_error err = { 0 };
	int r;

	if (!c)
		return vm_http_reply_error(
			x, 404,
			"continuous profiling is off: start the agent with serve --continuous");
	if (parse_query(x, vm_continuous_config(c)->interval, &q, &err) < 0 ||
	    vm_http_history_format(x, &a, &err) < 0)
		return vm_http_reply_error(x, 422, "%s", vm_error_str(&err));
	r = vm_history_merge(vm_continuous_history(c), q.from_ns, q.until_ns,
			     vm_http_history_encode, &a, &err);
	return vm_http_history_reply(x, r, &a, "/profile/cpu/history", &err);
}

/* The memory snapshots' part of the continuous profile's health. */
static struct json_object *memory_health(const struct vm_continuous_stats *st)
{
	struct json_object *o = json_object_new_object();
	const int64_t counts[] = { (int64_t)st->memory.snapshots,
				   (int64_t)st->memory_history_bytes };
	const char *const names[] = { "snapshots", "history_bytes" };

	for (size_t i = 0; i < 2; i++)
		json_object_object_add(o, names[i],
				       json_object_new_int64(counts[i]));
	json_object_object_add(o, "error",
			       vm_json_string_or_null(st->memory.last_error));
	return o;
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
	if (st.has_memory)
		json_object_object_add(o, "memory", memory_health(&st));
	return o;
}
