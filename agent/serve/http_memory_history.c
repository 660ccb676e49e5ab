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

/* o.key = v: the numbers of the index. */
static void put(struct json_object *o, const char *key, int64_t v)
{
	json_object_object_add(o, key, json_object_new_int64(v));
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
	struct vm_history *h = c ? vm_continuous_memory_history(c) : NULL;
	struct json_object *o, *list;
	struct vm_history_index idx;

	if (!h)
		return vm_http_reply_json(
			x, 200, json_tokener_parse("{\"continuous\": false}"));
	if (vm_history_get_index(h, &idx) < 0)
		return vm_http_reply_error(x, 500, "out of memory");
	o = json_object_new_object();
	list = json_object_new_array();
	json_object_object_add(o, "continuous", json_object_new_boolean(true));
	put(o, "every_seconds", vm_continuous_config(c)->memory_every);
	/* A snapshot begins and ends within its second: its start. */
	for (int last = 0; last < 2; last++)
		json_object_object_add(
			o, last ? "newest" : "oldest",
			!idx.n ? NULL :
				 vm_http_time_json(
					 idx.v[last ? idx.n - 1 : 0].start_ns));
	put(o, "bytes", (int64_t)idx.bytes);
	put(o, "dropped_snapshots", (int64_t)idx.dropped);
	for (size_t i = 0; i < idx.n; i++) {
		const struct vm_history_window *w = &idx.v[i];
		struct json_object *one = json_object_new_object();

		json_object_object_add(one, "time",
				       vm_http_time_json(w->start_ns));
		put(one, "walk_ms",
		    (int64_t)((w->end_ns - w->start_ns) / 1000000));
		put(one, "samples", (int64_t)w->samples);
		json_object_array_add(list, one);
	}
	json_object_object_add(o, "snapshots", list);
	free(idx.v);
	return vm_http_reply_json(x, 200, o);
}

/*
 * The snapshot nearest at= (growth false), or the growth between the
 * snapshots nearest from= and until= (pprof only: its values are signed).
 */
static enum MHD_Result answer(struct vm_http_exchange *x, bool growth)
{
	uint64_t now = vm_clock_ns(CLOCK_REALTIME), from = now, until = now;
	const char *at = arg(x, growth ? "until" : "at");
	const char *since = growth ? arg(x, "from") : NULL;
	struct vm_http_history_answer a = { 0 };
	struct vm_error err = { 0 };
	enum MHD_Result refused;
	struct vm_history *h = memory_history(x, &refused);
	int r = 0;

	if (!h)
		return refused;
	if (growth && !since)
		r = vm_error_set(
			&err, EINVAL,
			"from is missing: give a time (RFC 3339, Unix seconds, or relative such as -1h)");
	if (r == 0 && at)
		r = vm_http_history_time(growth ? "until" : "at", at, now,
					 &until, &err);
	if (r == 0 && since)
		r = vm_http_history_time("from", since, now, &from, &err);
	if (r == 0)
		r = vm_http_history_format(x, &a, &err);
	if (r == 0 && growth && a.format != VM_FORMAT_PPROF)
		r = vm_error_set(
			&err, EINVAL,
			"the growth view is pprof only (its values may be negative): leave format out");
	if (r == 0 && growth && from >= until)
		r = vm_error_set(&err, EINVAL, "from must be before until");
	if (r < 0)
		return vm_http_reply_error(x, 422, "%s", vm_error_str(&err));
	if (growth)
		r = vm_history_growth(h, from, until, vm_http_history_encode,
				      &a, &err);
	else
		r = vm_history_nearest(h, until, vm_http_history_encode, &a,
				       &err);
	return vm_http_history_reply(x, r, &a, "/profile/memory/history", &err);
}

enum MHD_Result vm_http_get_memory_snapshot(struct vm_http_exchange *x)
{
	return answer(x, false);
}

enum MHD_Result vm_http_get_memory_growth(struct vm_http_exchange *x)
{
	return answer(x, true);
}
