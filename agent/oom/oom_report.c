// SPDX-License-Identifier: Apache-2.0
/*
 * oom_report.c - one OOM report as JSON (oom_report.h).
 */
#include "agent/oom/oom_report.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/history/history_time.h"
#include "common/json.h"

void vm_oom_report_id(const struct vm_oom_victim *v, char *id, size_t size)
{
	snprintf(id, size, "%013" PRIu64 "-%u", v->unix_ms, v->pid);
}

static void add(struct json_object *o, const char *key, struct json_object *v)
{
	json_object_object_add(o, key, v);
}

static struct json_object *u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

static struct json_object *snapshot(const struct vm_oom_facts *f)
{
	const struct vm_memsnap *m = f->snap;
	struct json_object *o = json_object_new_object(), *a;

	add(o, "source", json_object_new_string(f->snapshot_source));
	add(o, "why_not_at_kill", vm_json_string_or_null(f->not_at_kill));
	if (!m)
		return o;
	add(o, "taken_unix_ms", u64(m->unix_ms));
	add(o, "age_ms",
	    json_object_new_int64((int64_t)f->victim->unix_ms -
				  (int64_t)m->unix_ms));
	if (!strcmp(f->snapshot_source, VM_OOM_SNAPSHOT_AT_KILL))
		add(o, "taken_after_ms", u64(f->snapshot_ms));
	add(o, "contexts_read", u64(m->n_contexts));
	add(o, "contexts_bytes", u64(m->contexts_bytes));
	add(o, "private_outside_contexts_bytes", u64(m->outside));
	add(o, "shared_bytes", u64(m->shared));
	add(o, "mapped_files_bytes", u64(m->files));
	a = json_object_new_array();
	for (size_t i = 0; i < m->n; i++) {
		struct json_object *c = json_object_new_object();

		add(c, "path", json_object_new_string(m->v[i].path));
		add(c, "bytes", u64(m->v[i].bytes));
		json_object_array_add(a, c);
	}
	add(o, "contexts", a);
	return o;
}

static struct json_object *cgroup(const struct vm_oom_cgroup *cg)
{
	struct json_object *o = json_object_new_object(), *ev;

	add(o, "version", vm_json_string_or_null(cg->version));
	if (!cg->version) {
		add(o, "why", json_object_new_string(cg->why));
		return o;
	}
	add(o, "path", json_object_new_string(cg->path));
	add(o, "found",
	    json_object_new_string(cg->from_kept ?
					   "as the snapshot kept saw it" :
					   "at the kill"));
	add(o, "limit_bytes", cg->limited ? u64(cg->limit) : NULL);
	add(o, "usage_bytes", u64(cg->usage));
	add(o, "peak_bytes", u64(cg->peak));
	ev = json_object_new_object();
	for (size_t i = 0; i < cg->n_events; i++)
		add(ev, cg->events[i].name, u64(cg->events[i].value));
	add(o, "events", ev);
	return o;
}

static struct json_object *kernel(const struct vm_oom_victim *v)
{
	struct json_object *o;

	if (!v->has_sizes)
		return NULL;
	o = json_object_new_object();
	add(o, "uid", u64(v->uid));
	add(o, "total_vm_bytes", u64(v->total_vm));
	add(o, "anon_rss_bytes", u64(v->anon_rss));
	add(o, "file_rss_bytes", u64(v->file_rss));
	add(o, "shmem_rss_bytes", u64(v->shmem_rss));
	return o;
}

char *vm_oom_report_json(const struct vm_oom_facts *f, size_t *len)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	const struct vm_memsnap *m = f->snap;
	char id[32], when[32];
	const char *text;
	char *out;

	if (!o) {
		json_object_put(f->cpu);
		return NULL;
	}
	vm_oom_report_id(f->victim, id, sizeof(id));
	vm_history_format_rfc3339(f->victim->unix_ms * 1000000, when);
	add(o, "id", json_object_new_string(id));
	add(o, "time", json_object_new_string(when));
	add(o, "unix_ms", u64(f->victim->unix_ms));
	add(o, "pid", u64(f->victim->pid));
	add(o, "comm", vm_json_string_or_null(f->comm));
	add(o, "title", vm_json_string_or_null(f->title));
	add(o, "backend_type", vm_json_string_or_null(f->backend_type));
	/* Signed, as pg_stat_activity shows it. */
	add(o, "query_id",
	    m && m->query_id ? json_object_new_int64((int64_t)m->query_id) :
			       NULL);
	add(o, "wait_event", vm_json_string_or_null(f->wait_event));
	add(o, "kernel", kernel(f->victim));
	add(o, "snapshot_source", json_object_new_string(f->snapshot_source));
	add(o, "heaviest_context",
	    m && m->n ? json_object_new_string(m->v[0].path) : NULL);
	add(o, "heaviest_bytes", m && m->n ? u64(m->v[0].bytes) : NULL);
	add(o, "snapshot", snapshot(f));
	add(o, "cpu", f->cpu);
	add(o, "cgroup", cgroup(f->cgroup));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	out = text ? strdup(text) : NULL;
	if (out)
		*len = strlen(out);
	return out;
}
