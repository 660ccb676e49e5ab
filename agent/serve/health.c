// SPDX-License-Identifier: Apache-2.0
/*
 * health.c - GET /healthz: the state of the tools disk as setup left it,
 * and cheap probes of what each backend needs: loading a perf_event BPF
 * program (libbpf's own feature probe) and opening a sampling CPU-clock
 * event, for bpf; an executable perf, for perf.  And which PostgreSQL
 * versions get wait event and query id labels, and what the bpf backend
 * has learned since the agent started (its status, engine.h).
 */
#include "agent/serve/health.h"

#include <errno.h>
#include <stdio.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "agent/iopool/iopool.h"
#include "agent/profile/engine.h"
#include "agent/profile/limits.h"
#include "agent/symbolize/pgwait.h"
#include "agent/symbolize/debuginfod.h"
#include "agent/unwind/unwind_cache.h"
#include "common/json.h"

int vm_health_probe_bpf(struct vm_error *err)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = VM_FREQUENCY_DEFAULT,
		.freq = 1,
		.disabled = 1,
	};
	int r, fd;

	r = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, NULL);
	if (r == 0)
		return vm_error_set(
			err, ENODEV,
			"this kernel cannot run perf_event BPF programs (CONFIG_BPF_SYSCALL, CONFIG_BPF_EVENTS); use the perf profiler");
	if (r < 0)
		return vm_error_errno(
			err, -r,
			"the kernel refused to load a BPF program; run the agent as root or with CAP_BPF and CAP_PERFMON");
	fd = (int)syscall(__NR_perf_event_open, &attr, -1, 0, -1,
			  PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return vm_error_errno(
			err, errno,
			"the kernel refused a CPU-clock sampling event on CPU 0; run the agent as root or lower kernel.perf_event_paranoid");
	close(fd);
	return 0;
}

/* Whether perf_path is there to be run. */
static int vm_health_probe_perf(const char *perf_path, struct vm_error *err)
{
	if (!perf_path || !perf_path[0])
		return vm_error_set(
			err, ENOENT,
			"no perf binary: attach the tools disk (vmtools-image) or install perf");
	if (access(perf_path, X_OK) < 0)
		return vm_error_errno(
			err, errno,
			"perf is not runnable at %s; attach the tools disk (vmtools-image) or install perf",
			perf_path);
	return 0;
}

static struct json_object *probe_json(int r, const struct vm_error *err)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "usable", json_object_new_boolean(r == 0));
	if (r < 0)
		json_object_object_add(
			o, "error", json_object_new_string(vm_error_str(err)));
	return o;
}

/*
 * The probe's answer, and whether the programs were loaded at start and
 * what the kernel said of them then (bpf's status).
 */
static struct json_object *bpf_json(int r, const struct vm_error *err,
				    const struct vm_backend_status *bpf)
{
	struct json_object *o = probe_json(r, err);
	struct json_object *p = json_object_new_object();

	json_object_object_add(
		p, "loaded_at_start",
		json_object_new_boolean(bpf->programs_prepared &&
					!bpf->programs_error[0]));
	if (bpf->programs_prepared)
		json_object_object_add(
			p, "load_ms",
			json_object_new_int64((int64_t)bpf->programs_load_ms));
	json_object_object_add(
		p, "maps_kept",
		json_object_new_int64((int64_t)bpf->programs_maps_kept));
	json_object_object_add(
		p, "maps_reused",
		json_object_new_int64((int64_t)bpf->programs_maps_reused));
	if (bpf->programs_error[0])
		json_object_object_add(
			p, "error",
			json_object_new_string(bpf->programs_error));
	json_object_object_add(o, "programs", p);
	return o;
}

/*
 * Which PostgreSQL versions get wait_event and query_id labels, and why
 * the last profile of another version went without (bpf's status).
 */
static struct json_object *postgresql_json(const struct vm_backend_status *bpf)
{
	struct json_object *o = json_object_new_object();
	struct json_object *tables = json_object_new_object();
	const struct vm_pg_layout *l;
	char major[16];

	json_object_object_add(o, "label_versions",
			       json_object_new_string(vm_pg_known_versions()));
	/* Each table's minor release: {"15": "15.20", ...}. */
	for (size_t i = 0; (l = vm_pg_layout_at(i)); i++) {
		snprintf(major, sizeof(major), "%u", l->major);
		json_object_object_add(tables, major,
				       json_object_new_string(l->written_from));
	}
	json_object_object_add(o, "tables_written_from", tables);
	if (bpf->pg_labels_note[0])
		json_object_object_add(
			o, "error",
			json_object_new_string(bpf->pg_labels_note));
	return o;
}

/* How debug file lookups went (agent/symbolize/debuginfod.h). */
static struct json_object *debuginfod_json(struct vm_debuginfod *d)
{
	struct json_object *o = json_object_new_object();
	struct json_object *lookups = json_object_new_object();
	struct vm_debuginfod_stats st;

	vm_debuginfod_stats(d, &st);
	json_object_object_add(o, "enabled",
			       json_object_new_boolean(st.enabled));
	for (int i = 0; i < VM_DEBUGINFOD_OUTCOMES; i++)
		json_object_object_add(
			lookups, vm_debuginfod_outcome_name(i),
			json_object_new_int64((int64_t)st.lookups[i]));
	json_object_object_add(o, "lookups", lookups);
	json_object_object_add(o, "pending",
			       json_object_new_int64((int64_t)st.pending));
	if (st.error[0])
		json_object_object_add(o, "error",
				       json_object_new_string(st.error));
	return o;
}

/*
 * The symbols kept per binary, and the binaries skipped (the home of
 * binaries, agent/binaries/binaries.h, whose bound they share).
 */
static struct json_object *symbols_json(struct vm_binaries *binaries)
{
	struct json_object *o = json_object_new_object();
	struct json_object *list = json_object_new_array();
	struct vm_binaries_skip skip[4];
	struct vm_binaries_stats st = { 0 };
	size_t n = 0;

	if (binaries) {
		vm_binaries_stats(binaries, &st);
		vm_binaries_skipped(binaries, VM_BINARY_SYMBOLS, skip, 4, &n);
	}
	json_object_object_add(
		o, "binaries",
		json_object_new_int64(
			(int64_t)st.facet[VM_BINARY_SYMBOLS].filled));
	json_object_object_add(
		o, "bytes",
		json_object_new_int64(
			(int64_t)st.facet[VM_BINARY_SYMBOLS].bytes));
	json_object_object_add(o, "max_bytes",
			       json_object_new_int64((int64_t)st.max_bytes));
	json_object_object_add(
		o, "skipped",
		json_object_new_int64(
			(int64_t)st.facet[VM_BINARY_SYMBOLS].skipped));
	for (size_t i = 0; i < n; i++) {
		struct json_object *k = json_object_new_object();

		json_object_object_add(k, "file",
				       json_object_new_string(skip[i].file));
		json_object_object_add(k, "reason",
				       json_object_new_string(skip[i].reason));
		json_object_array_add(list, k);
	}
	json_object_object_add(o, "last_skipped", list);
	return o;
}

static void add_u64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_int64((int64_t)v));
}

/*
 * The unwind tables kept (unwind_cache.h), and from the bpf backend's
 * status: where its programs find a task's user registers, the binaries
 * its store left out, the processes past its maps' bounds, and whether
 * the kernel refused its unwinder.
 */
static struct json_object *unwind_json(struct vm_binaries *binaries,
				       const struct vm_backend_status *bpf)
{
	struct json_object *o = json_object_new_object();
	struct json_object *regs = json_object_new_object();
	struct vm_unwind_cache_stats st;

	vm_unwind_cache_stats(binaries, &st);
	add_u64(o, "tables", st.tables);
	add_u64(o, "bytes", st.bytes);
	add_u64(o, "max_bytes", st.max_bytes);
	add_u64(o, "builds", st.builds);
	add_u64(o, "hits", st.hits);
	add_u64(o, "skipped", st.skipped);
	json_object_object_add(o, "last_skipped",
			       json_object_new_string(st.last_skipped));
	json_object_object_add(regs, "found",
			       json_object_new_boolean(bpf->user_regs_found));
	if (bpf->user_regs_found) {
		add_u64(regs, "stack_offset", bpf->user_regs_stack_offset);
		add_u64(regs, "thread_size", bpf->user_regs_thread_size);
	} else {
		json_object_object_add(
			regs, "error",
			json_object_new_string(bpf->user_regs_error));
	}
	json_object_object_add(o, "user_registers", regs);
	add_u64(o, "store_runs", bpf->unwind_store_runs);
	add_u64(o, "store_rows", bpf->unwind_store_rows);
	add_u64(o, "store_skipped", bpf->unwind_store_skipped);
	json_object_object_add(
		o, "store_last_skipped",
		json_object_new_string(bpf->unwind_store_last_skipped));
	add_u64(o, "procs_skipped", bpf->unwind_procs_skipped);
	add_u64(o, "walks_cut", bpf->unwind_walks_cut);
	json_object_object_add(
		o, "procs_last_skipped",
		json_object_new_string(bpf->unwind_procs_last_skipped));
	if (bpf->unwind_refused[0])
		json_object_object_add(
			o, "bpf_refused",
			json_object_new_string(bpf->unwind_refused));
	return o;
}

/* What the warmer has built before any profile asked (warm.h). */
static struct json_object *warm_json(struct vm_warm *warm)
{
	struct json_object *o = json_object_new_object();
	struct vm_warm_stats st;
	char when[32] = "";
	struct tm tm;
	time_t t;

	json_object_object_add(o, "enabled",
			       json_object_new_boolean(warm != NULL));
	if (!warm)
		return o;
	vm_warm_stats(warm, &st);
	add_u64(o, "passes", st.passes);
	add_u64(o, "processes", st.processes);
	add_u64(o, "binaries", st.binaries);
	add_u64(o, "tables", st.tables);
	if (st.passes) {
		t = (time_t)(st.last_pass_ms / 1000);
		if (gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		json_object_object_add(o, "last_pass",
				       json_object_new_string(when));
		add_u64(o, "last_pass_unix_ms", st.last_pass_ms);
		add_u64(o, "last_pass_took_ms", st.last_pass_took_ms);
	}
	if (st.error[0])
		json_object_object_add(o, "error",
				       json_object_new_string(st.error));
	return o;
}

/* Reads of targets' files that did not finish in time (iopool.h). */
static struct json_object *target_files_json(struct vm_iopool *iopool)
{
	struct json_object *o = json_object_new_object();
	uint64_t timed_out;
	unsigned stuck;

	vm_iopool_stats(iopool, &stuck, &timed_out);
	json_object_object_add(o, "reads_hanging",
			       json_object_new_int64((int64_t)stuck));
	json_object_object_add(o, "reads_timed_out",
			       json_object_new_int64((int64_t)timed_out));
	return o;
}

struct json_object *vm_health_json(const struct vm_health_config *cfg,
				   bool *usable)
{
	struct json_object *root = json_object_new_object();
	struct json_object *disk = json_object_new_object();
	struct json_object *kernel = json_object_new_object();
	struct json_object *perf;
	struct vm_error berr = { 0 }, perr = { 0 };
	struct vm_backend_status bpf;
	struct utsname u;
	int rb, rp;

	json_object_object_add(disk, "label",
			       vm_json_string_or_null(cfg->label));
	json_object_object_add(disk, "mountpoint",
			       vm_json_string_or_null(cfg->mountpoint));
	json_object_object_add(disk, "setup_ran",
			       json_object_new_boolean(cfg->setup_ran));
	json_object_object_add(disk, "found",
			       json_object_new_boolean(cfg->disk_found));
	json_object_object_add(disk, "mounted",
			       json_object_new_boolean(cfg->mounted));
	json_object_object_add(disk, "verified",
			       json_object_new_boolean(cfg->verified));
	json_object_object_add(disk, "device",
			       vm_json_string_or_null(cfg->device));
	if (cfg->setup_error)
		json_object_object_add(
			disk, "error",
			json_object_new_string(cfg->setup_error));
	else if (!cfg->setup_ran && !cfg->mounted)
		json_object_object_add(
			disk, "error",
			json_object_new_string(
				"setup was skipped (--no-setup); run `vmtools-agent setup` to mount the tools disk"));

	uname(&u);
	json_object_object_add(kernel, "release",
			       json_object_new_string(u.release));
	json_object_object_add(kernel, "image_release",
			       vm_json_string_or_null(cfg->image_release));
	json_object_object_add(kernel, "match",
			       json_object_new_boolean(cfg->release_match));

	rb = vm_health_probe_bpf(&berr);
	rp = vm_health_probe_perf(cfg->perf_path, &perr);
	perf = probe_json(rp, &perr);
	json_object_object_add(perf, "path",
			       vm_json_string_or_null(cfg->perf_path));

	*usable = rb == 0 || rp == 0;
	json_object_object_add(root, "status",
			       json_object_new_string(*usable ? "ok" :
								"unusable"));
	json_object_object_add(root, "disk", disk);
	json_object_object_add(root, "kernel", kernel);
	vm_engine_backend_status(cfg->ctx, VM_PROFILER_BPF, &bpf);
	json_object_object_add(root, "bpf", bpf_json(rb, &berr, &bpf));
	json_object_object_add(root, "perf", perf);
	json_object_object_add(root, "postgresql", postgresql_json(&bpf));
	json_object_object_add(root, "debuginfod",
			       debuginfod_json(cfg->ctx->debuginfod));
	json_object_object_add(root, "symbols",
			       symbols_json(cfg->ctx->binaries));
	json_object_object_add(root, "unwind",
			       unwind_json(cfg->ctx->binaries, &bpf));
	json_object_object_add(root, "warm", warm_json(cfg->warm));
	json_object_object_add(root, "target_files",
			       target_files_json(cfg->ctx->iopool));
	return root;
}
