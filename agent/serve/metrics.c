// SPDX-License-Identifier: Apache-2.0
/*
 * metrics.c - counting sessions and answers, and writing them in the
 * Prometheus text exposition format (version 0.0.4, prom.h) for GET
 * /metrics.
 */
#include "agent/serve/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/profile/limits.h"
#include "agent/encode/prom.h"

static const char *const outcome_names[VM_OUTCOME_COUNT] = {
	[VM_OUTCOME_COMPLETED] = "completed",
	[VM_OUTCOME_STOPPED] = "stopped",
	[VM_OUTCOME_CLIENT_GONE] = "client_gone",
	[VM_OUTCOME_SHUTDOWN] = "shutdown",
	[VM_OUTCOME_FAILED] = "failed",
};

static const unsigned codes[VM_METRICS_CODES] = {
	200, 400, 401, 404, 405, 409, 412, 413, 422, 500, 503, 431,
};

const char *vm_outcome_name(enum vm_outcome o)
{
	return o < VM_OUTCOME_COUNT ? outcome_names[o] : "unknown";
}

void vm_metrics_init(struct vm_metrics *m)
{
	struct timespec ts;

	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
	clock_gettime(CLOCK_REALTIME, &ts);
	m->s.start_time_seconds = (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void vm_metrics_session(struct vm_metrics *m, enum vm_outcome o,
			uint64_t samples, uint64_t lost, double seconds)
{
	pthread_mutex_lock(&m->lock);
	if (o < VM_OUTCOME_COUNT)
		m->s.sessions[o]++;
	m->s.samples += samples;
	m->s.lost_stacks += lost;
	m->s.last_duration_seconds = seconds;
	m->s.last_samples = samples;
	pthread_mutex_unlock(&m->lock);
}

void vm_metrics_unwound(struct vm_metrics *m, uint64_t by_table,
			uint64_t by_frame_pointer, uint64_t cut,
			uint64_t procs_skipped)
{
	pthread_mutex_lock(&m->lock);
	m->s.unwound_by_table += by_table;
	m->s.unwound_by_frame_pointer += by_frame_pointer;
	m->s.unwind_walks_cut += cut;
	m->s.unwind_processes_skipped += procs_skipped;
	pthread_mutex_unlock(&m->lock);
}

void vm_metrics_rejected(struct vm_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	m->s.rejected_busy++;
	pthread_mutex_unlock(&m->lock);
}

void vm_metrics_kind(struct vm_metrics *m, enum vm_profile_kind kind)
{
	pthread_mutex_lock(&m->lock);
	if ((unsigned)kind < VM_KINDS)
		m->s.kinds[kind]++;
	pthread_mutex_unlock(&m->lock);
}

void vm_metrics_running(struct vm_metrics *m, bool running)
{
	pthread_mutex_lock(&m->lock);
	m->s.running = running;
	pthread_mutex_unlock(&m->lock);
}

void vm_metrics_http(struct vm_metrics *m, unsigned status)
{
	size_t i;

	for (i = 0; i < VM_METRICS_CODES && codes[i] != status; i++)
		;
	pthread_mutex_lock(&m->lock);
	m->s.http[i]++;
	pthread_mutex_unlock(&m->lock);
}

void vm_metrics_snapshot(struct vm_metrics *m, struct vm_metrics_snapshot *s)
{
	pthread_mutex_lock(&m->lock);
	*s = m->s;
	pthread_mutex_unlock(&m->lock);
	vm_debuginfod_stats(m->debuginfod, &s->debuginfod);
	vm_unwind_cache_stats(m->binaries, &s->unwind);
}

char *vm_metrics_render(const struct vm_metrics_snapshot *s,
			const char *version, size_t *len)
{
	struct vm_prom p;
	char code[16];

	if (vm_prom_open(&p))
		return NULL;
	vm_prom_family(&p, "vmtools_build_info", "gauge",
		       "The agent's version.");
	vm_prom_u64(&p, "vmtools_build_info", "version", version, 1);
	vm_prom_family(&p, "process_start_time_seconds", "gauge",
		       "When the agent started, in seconds since the epoch.");
	fprintf(p.f, "process_start_time_seconds %.3f\n",
		s->start_time_seconds);
	vm_prom_family(&p, "vmtools_sessions_total", "counter",
		       "Profiling sessions ended, by outcome.");
	for (int o = 0; o < VM_OUTCOME_COUNT; o++)
		vm_prom_u64(&p, "vmtools_sessions_total", "outcome",
			    outcome_names[o], s->sessions[o]);
	vm_prom_family(
		&p, "vmtools_profiles_total", "counter",
		"Profiling sessions ended, by kind (cpu, offcpu, wall, memory).");
	for (int k = 0; k < VM_KINDS; k++)
		vm_prom_u64(&p, "vmtools_profiles_total", "kind",
			    vm_kind_name(k), s->kinds[k]);
	vm_prom_one(
		&p, "vmtools_sessions_rejected_total", "counter",
		"Profile requests refused with 409 because another profile was running.",
		s->rejected_busy);
	vm_prom_one(&p, "vmtools_session_running", "gauge",
		    "Whether a profile is being taken now.",
		    s->running ? 1 : 0);
	vm_prom_one(&p, "vmtools_samples_total", "counter",
		    "Samples collected by all sessions.", s->samples);
	vm_prom_one(
		&p, "vmtools_lost_stacks_total", "counter",
		"Stacks that could not be recorded (stack map full or colliding).",
		s->lost_stacks);
	vm_prom_family(
		&p, "vmtools_last_session_duration_seconds", "gauge",
		"Wall time of the last session, from start to response.");
	fprintf(p.f, "vmtools_last_session_duration_seconds %.3f\n",
		s->last_duration_seconds);
	vm_prom_one(&p, "vmtools_last_session_samples", "gauge",
		    "Samples in the last session's profile.", s->last_samples);
	vm_prom_family(&p, "vmtools_http_requests_total", "counter",
		       "HTTP requests answered, by status code.");
	for (size_t i = 0; i < VM_METRICS_CODES; i++) {
		snprintf(code, sizeof(code), "%u", codes[i]);
		vm_prom_u64(&p, "vmtools_http_requests_total", "code", code,
			    s->http[i]);
	}
	vm_prom_u64(&p, "vmtools_http_requests_total", "code", "other",
		    s->http[VM_METRICS_CODES]);
	vm_prom_family(
		&p, "vmtools_debuginfod_lookups_total", "counter",
		"Debug files looked up on debuginfod servers, by outcome.");
	for (int o = 0; o < VM_DEBUGINFOD_OUTCOMES; o++)
		vm_prom_u64(&p, "vmtools_debuginfod_lookups_total", "outcome",
			    vm_debuginfod_outcome_name(o),
			    s->debuginfod.lookups[o]);
	vm_prom_one(&p, "vmtools_debuginfod_pending", "gauge",
		    "Debug file lookups queued or running.",
		    s->debuginfod.pending);
	vm_prom_family(
		&p, "vmtools_unwound_frames_total", "counter",
		"Callers in user stacks, by how they were found: unwind tables (.eh_frame) or the frame pointer where no table covered the pc.");
	vm_prom_u64(&p, "vmtools_unwound_frames_total", "by", "table",
		    s->unwound_by_table);
	vm_prom_u64(&p, "vmtools_unwound_frames_total", "by", "frame_pointer",
		    s->unwound_by_frame_pointer);
	vm_prom_one(&p, "vmtools_unwind_tables", "gauge",
		    "Unwind tables kept, one per binary.", s->unwind.tables);
	vm_prom_one(&p, "vmtools_unwind_table_bytes", "gauge",
		    "Memory the unwind tables kept take.", s->unwind.bytes);
	vm_prom_one(&p, "vmtools_unwind_table_builds_total", "counter",
		    "Unwind tables built.", s->unwind.builds);
	vm_prom_one(&p, "vmtools_unwind_tables_skipped_total", "counter",
		    "Binaries left without an unwind table: past the bound.",
		    s->unwind.skipped);
	vm_prom_one(
		&p, "vmtools_unwind_processes_skipped_total", "counter",
		"Processes in on-demand profiles walked by frame pointer because they were past the unwinder's bounds: too many executable mappings, or too many processes.",
		s->unwind_processes_skipped);
	vm_prom_one(
		&p, "vmtools_unwind_walks_cut_total", "counter",
		"User stacks in on-demand profiles whose walk was cut short: a read that failed, no progress, off the stack or the code.",
		s->unwind_walks_cut);
	return vm_prom_close(&p, len);
}
