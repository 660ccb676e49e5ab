// SPDX-License-Identifier: Apache-2.0
/*
 * oom.c - OOM reports (oom.h): each victim of the OOM killer that is a
 * target, described the moment the kernel names it.
 */
#include "agent/oom/oom.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/oom/oom_cgroup.h"
#include "agent/oom/oom_report.h"
#include "agent/profile/limits.h"
#include "agent/profile/memory.h"
#include "agent/profile/memsnap.h"
#include "agent/profile/oomwatch.h"
#include "agent/samples/proc.h"
#include "agent/symbolize/pgtitle.h"
#include "agent/symbolize/pgwait.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"

/* Bytes of one CPU stack's frames in a report. */
#define STACK_TEXT_MAX 2048

struct vm_oom {
	struct vm_oom_config cfg;
	struct vm_oom_store *store;
	struct vm_oom_watch *watch;
	char why[320];
	atomic_uint_fast64_t victims, targets, at_kill, kept, none;
};

static bool is_target(const struct vm_oom *o, const char *comm)
{
	if (!o->cfg.n_comms)
		return !strcmp(comm, VM_DEFAULT_COMM);
	for (size_t i = 0; i < o->cfg.n_comms; i++)
		if (!strncmp(comm, o->cfg.comms[i], VM_COMM_LEN - 1))
			return true;
	return false;
}

/* The snapshot's note about pid, for why, or that it had exited. */
static void first_note(const struct vm_samples *s, uint32_t pid, char *why,
		       size_t size)
{
	const char *n = s->notes ? s->notes : "";
	char prefix[32];
	size_t len;

	snprintf(prefix, sizeof(prefix), "pid %u: ", pid);
	n = strstr(n, prefix);
	if (!n) {
		snprintf(why, size,
			 "its memory could no longer be read: it had exited");
		return;
	}
	len = strcspn(n, "\n");
	snprintf(why, size, "%.*s", (int)len, n);
}

struct cpu_pick {
	uint32_t pid;
	struct json_object *stacks;
};

static int more_samples(const void *a, const void *b)
{
	const struct vm_sym_stack *x = *(const struct vm_sym_stack *const *)a;
	const struct vm_sym_stack *y = *(const struct vm_sym_stack *const *)b;

	return (x->sample->count < y->sample->count) -
	       (x->sample->count > y->sample->count);
}

/* pid's most sampled stacks of the merged windows, root first. */
static int pick_stacks(const struct vm_symbolized *y,
		       const struct vm_history_window *span, void *arg,
		       struct vm_error *err)
{
	struct cpu_pick *c = arg;
	const struct vm_sym_stack **v = calloc(y->n_stacks + 1, sizeof(*v));
	size_t n = 0;
	char *text = malloc(STACK_TEXT_MAX);

	if (!v || !text) {
		free(v);
		free(text);
		return -ENOMEM;
	}
	for (size_t i = 0; i < y->n_stacks; i++)
		if (y->stacks[i].sample && y->stacks[i].sample->pid == c->pid)
			v[n++] = &y->stacks[i];
	qsort(v, n, sizeof(*v), more_samples);
	for (size_t i = 0; i < n && i < VM_OOM_CPU_STACKS; i++) {
		struct json_object *s = json_object_new_object();
		size_t len = 0;

		text[0] = '\0';
		for (size_t k = v[i]->n_frames; k-- > 0;) {
			const char *f = v[i]->frames[k].function;
			size_t fl = strlen(f ? f : "?");

			if (len + fl + 2 > STACK_TEXT_MAX)
				break;
			len += (size_t)sprintf(text + len, "%s%s",
					       len ? ";" : "", f ? f : "?");
		}
		json_object_object_add(s, "frames",
				       json_object_new_string(text));
		json_object_object_add(
			s, "samples",
			json_object_new_uint64(v[i]->sample->count));
		json_object_array_add(c->stacks, s);
	}
	free(v);
	free(text);
	return 0;
}

/* {"source", "why" | "from", "until", "stacks"} */
static struct json_object *cpu_stacks(struct vm_oom *o, uint32_t pid,
				      uint64_t kill_ms)
{
	struct json_object *cpu = json_object_new_object();
	struct cpu_pick c = { .pid = pid };
	struct vm_error err = { 0 };
	uint64_t until = (kill_ms + 1) * 1000000;
	uint64_t from = until - (uint64_t)o->cfg.history_seconds * 1000000000;
	int r;

	if (!o->cfg.history) {
		json_object_object_add(cpu, "source",
				       json_object_new_string("none"));
		json_object_object_add(
			cpu, "why",
			json_object_new_string(
				"no continuous profile runs (serve --continuous)"));
		return cpu;
	}
	json_object_object_add(cpu, "source",
			       json_object_new_string("continuous"));
	c.stacks = json_object_new_array();
	r = vm_history_merge(o->cfg.history, from, until, pick_stacks, &c,
			     &err);
	if (r < 0)
		json_object_object_add(
			cpu, "why",
			json_object_new_string(
				r == -ENOENT ?
					"no window of the continuous profile was sealed before the kill" :
					vm_error_str(&err)));
	else if (!json_object_array_length(c.stacks))
		json_object_object_add(
			cpu, "why",
			json_object_new_string(
				"the continuous profile's last windows have no sample of this process (the window under way at the kill is not sealed yet)"));
	json_object_object_add(cpu, "seconds_before",
			       json_object_new_uint64(o->cfg.history_seconds));
	json_object_object_add(cpu, "stacks", c.stacks);
	return cpu;
}

/* cg from the /proc/PID/cgroup of pid's kept snapshot (snap, or another). */
static void cgroup_from_kept(struct vm_oom *o, uint32_t pid,
			     const struct vm_memsnap *snap,
			     struct vm_oom_cgroup *cg)
{
	struct vm_memsnap kept = { 0 };
	const char *text = snap->cgroup;

	if (!text &&
	    vm_memkept_get(o->cfg.engine.ctx ? o->cfg.engine.ctx->memkept :
					       NULL,
			   pid, &kept) == 0)
		text = kept.cgroup;
	if (text) {
		vm_oom_cgroup_find_text(text, cg);
		cg->from_kept = true;
	}
	vm_memsnap_free(&kept);
}

static void on_victim(const struct vm_oom_victim *v, void *arg)
{
	struct vm_oom *o = arg;
	struct vm_samples s = { 0 };
	struct vm_memsnap snap = { 0 };
	struct vm_oom_cgroup cg;
	struct vm_oom_facts f = { .victim = v };
	struct vm_error err = { 0 };
	char comm[VM_COMM_LEN], why[256] = "", wait[96] = "";
	char *title = NULL, *json;
	size_t len = 0;
	int r;

	atomic_fetch_add(&o->victims, 1);
	snprintf(comm, sizeof(comm), "%s", v->comm);
	if (!comm[0] && vm_proc_read_comm("/proc", v->pid, comm) < 0)
		comm[0] = '\0';
	if (!is_target(o, comm)) {
		vm_log("oom: the kernel's OOM killer chose pid %u (%s), not a target",
		       v->pid, comm[0] ? comm : "gone");
		return;
	}
	atomic_fetch_add(&o->targets, 1);
	/*
	 * Its cgroup and title while it lives: neither holds its memory
	 * (the title only for the copy of a page); its cgroup's files once
	 * the kernel has counted the kill.
	 */
	vm_oom_cgroup_find(v->pid, &cg);
	if (vm_proc_read_title("/proc", v->pid, &title) < 0)
		title = NULL;
	/*
	 * Then its contexts alone, while its memory may still be read: a
	 * read of /proc/PID/smaps_rollup, say, holds the dying process's
	 * memory long enough that the kernel, finding no victim on its way
	 * out, takes another (the postmaster, in the tests).
	 */
	r = vm_memory_snapshot(&o->cfg.engine, &v->pid, 1, true, &s, &err);
	f.snapshot_ms = (vm_clock_ns(CLOCK_MONOTONIC) - v->time_ns) / 1000000;
	if (r == 0)
		r = vm_memsnap_from_samples(&s, v->pid,
					    VM_MEMSNAP_REPORT_CONTEXTS, &snap);
	if (r == 0) {
		f.snapshot_source = VM_OOM_SNAPSHOT_AT_KILL;
		atomic_fetch_add(&o->at_kill, 1);
	} else {
		first_note(&s, v->pid, why, sizeof(why));
		f.not_at_kill = why;
		if (vm_memkept_get(o->cfg.engine.ctx ?
					   o->cfg.engine.ctx->memkept :
					   NULL,
				   v->pid, &snap) == 0) {
			f.snapshot_source = VM_OOM_SNAPSHOT_KEPT;
			atomic_fetch_add(&o->kept, 1);
		} else {
			f.snapshot_source = VM_OOM_SNAPSHOT_NONE;
			atomic_fetch_add(&o->none, 1);
		}
	}
	/* It had exited: the cgroup it ran in, as the last snapshot saw it. */
	if (!vm_oom_cgroup_found(&cg))
		cgroup_from_kept(o, v->pid, &snap, &cg);
	f.snap = snap.pid ? &snap : NULL;
	if (!title && snap.title)
		title = strdup(snap.title);
	f.comm = comm;
	f.title = title;
	f.backend_type = vm_pg_backend_type(comm, title);
	if (snap.wait_event &&
	    vm_pg_wait_event_name(vm_pg_layout(snap.pg_major), snap.pg_minor,
				  snap.wait_event, wait, sizeof(wait)))
		f.wait_event = wait;
	vm_oom_cgroup_read(&cg);
	f.cgroup = &cg;
	f.cpu = cpu_stacks(o, v->pid, v->unix_ms);
	json = vm_oom_report_json(&f, &len);
	if (!json || vm_oom_store_add(o->store, json, len, &err) < 0)
		vm_log("oom: the report of pid %u could not be kept: %s",
		       v->pid, json ? vm_error_str(&err) : "out of memory");
	else
		vm_log("oom: the kernel's OOM killer chose pid %u (%s%s%s); reported, its memory snapshot %s",
		       v->pid, comm, f.backend_type ? ", " : "",
		       f.backend_type ? f.backend_type : "", f.snapshot_source);
	free(json);
	free(title);
	vm_memsnap_free(&snap);
	vm_samples_free(&s);
}

int vm_oom_start(const struct vm_oom_config *cfg, struct vm_oom **out,
		 struct vm_error *err)
{
	struct vm_oom_store_config sc = { .dir = cfg->dir,
					  .max_reports = cfg->max_reports,
					  .max_bytes = cfg->max_bytes,
					  .log = vm_log };
	struct vm_oom *o = calloc(1, sizeof(*o));
	struct vm_error werr = { 0 };
	int r;

	*out = NULL;
	if (!o)
		return vm_error_set(err, ENOMEM, "out of memory");
	o->cfg = *cfg;
	r = vm_oom_store_open(&sc, &o->store, err);
	if (r < 0) {
		free(o);
		return r;
	}
	if (vm_oom_watch_start(on_victim, o, &o->watch, &werr) < 0) {
		snprintf(o->why, sizeof(o->why), "%s", vm_error_str(&werr));
		vm_log("warning: %s", o->why);
	}
	*out = o;
	return 0;
}

void vm_oom_stop(struct vm_oom *o)
{
	if (!o)
		return;
	vm_oom_watch_stop(o->watch);
	vm_oom_store_close(o->store);
	free(o);
}

void vm_oom_stats(struct vm_oom *o, struct vm_oom_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->watching = o->watch != NULL;
	snprintf(st->why, sizeof(st->why), "%s", o->why);
	snprintf(st->source, sizeof(st->source), "%s",
		 vm_oom_watch_source(o->watch));
	st->victims = atomic_load(&o->victims);
	st->targets = atomic_load(&o->targets);
	st->at_kill = atomic_load(&o->at_kill);
	st->kept = atomic_load(&o->kept);
	st->none = atomic_load(&o->none);
	st->lost = vm_oom_watch_lost(o->watch);
	vm_oom_store_stats(o->store, &st->store);
}

struct vm_oom_store *vm_oom_store(struct vm_oom *o)
{
	return o->store;
}
