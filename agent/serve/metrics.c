// SPDX-License-Identifier: Apache-2.0
/*
 * metrics.c - counting sessions and answers, and writing them in the
 * Prometheus text exposition format (version 0.0.4) for GET /metrics.
 */
#include "agent/serve/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/profile/limits.h"

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

void vm_metrics_rejected(struct vm_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	m->s.rejected_busy++;
	pthread_mutex_unlock(&m->lock);
}

void vm_metrics_kind(struct vm_metrics *m, enum vm_profile_kind kind)
{
	pthread_mutex_lock(&m->lock);
	if ((unsigned)kind <= VM_KIND_WALL)
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
	vm_debuginfod_stats(&s->debuginfod);
}

char *vm_metrics_render(const struct vm_metrics_snapshot *s,
			const char *version, size_t *len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f;

	f = open_memstream(&buf, &size);
	if (!f)
		return NULL;
	fprintf(f,
		"# HELP vmtools_build_info The agent's version.\n"
		"# TYPE vmtools_build_info gauge\n"
		"vmtools_build_info{version=\"%s\"} 1\n",
		version);
	fprintf(f,
		"# HELP process_start_time_seconds When the agent started, in seconds since the epoch.\n"
		"# TYPE process_start_time_seconds gauge\n"
		"process_start_time_seconds %.3f\n",
		s->start_time_seconds);
	fprintf(f,
		"# HELP vmtools_sessions_total Profiling sessions ended, by outcome.\n"
		"# TYPE vmtools_sessions_total counter\n");
	for (int o = 0; o < VM_OUTCOME_COUNT; o++)
		fprintf(f, "vmtools_sessions_total{outcome=\"%s\"} %llu\n",
			outcome_names[o], (unsigned long long)s->sessions[o]);
	fprintf(f,
		"# HELP vmtools_profiles_total Profiling sessions ended, by kind (cpu, offcpu, wall).\n"
		"# TYPE vmtools_profiles_total counter\n");
	for (int k = 0; k <= VM_KIND_WALL; k++)
		fprintf(f, "vmtools_profiles_total{kind=\"%s\"} %llu\n",
			vm_kind_name(k), (unsigned long long)s->kinds[k]);
	fprintf(f,
		"# HELP vmtools_sessions_rejected_total Profile requests refused with 409 because another profile was running.\n"
		"# TYPE vmtools_sessions_rejected_total counter\n"
		"vmtools_sessions_rejected_total %llu\n",
		(unsigned long long)s->rejected_busy);
	fprintf(f,
		"# HELP vmtools_session_running Whether a profile is being taken now.\n"
		"# TYPE vmtools_session_running gauge\n"
		"vmtools_session_running %d\n",
		s->running ? 1 : 0);
	fprintf(f,
		"# HELP vmtools_samples_total Samples collected by all sessions.\n"
		"# TYPE vmtools_samples_total counter\n"
		"vmtools_samples_total %llu\n",
		(unsigned long long)s->samples);
	fprintf(f,
		"# HELP vmtools_lost_stacks_total Stacks that could not be recorded (stack map full or colliding).\n"
		"# TYPE vmtools_lost_stacks_total counter\n"
		"vmtools_lost_stacks_total %llu\n",
		(unsigned long long)s->lost_stacks);
	fprintf(f,
		"# HELP vmtools_last_session_duration_seconds Wall time of the last session, from start to response.\n"
		"# TYPE vmtools_last_session_duration_seconds gauge\n"
		"vmtools_last_session_duration_seconds %.3f\n",
		s->last_duration_seconds);
	fprintf(f,
		"# HELP vmtools_last_session_samples Samples in the last session's profile.\n"
		"# TYPE vmtools_last_session_samples gauge\n"
		"vmtools_last_session_samples %llu\n",
		(unsigned long long)s->last_samples);
	fprintf(f,
		"# HELP vmtools_http_requests_total HTTP requests answered, by status code.\n"
		"# TYPE vmtools_http_requests_total counter\n");
	for (size_t i = 0; i < VM_METRICS_CODES; i++)
		fprintf(f, "vmtools_http_requests_total{code=\"%u\"} %llu\n",
			codes[i], (unsigned long long)s->http[i]);
	fprintf(f, "vmtools_http_requests_total{code=\"other\"} %llu\n",
		(unsigned long long)s->http[VM_METRICS_CODES]);
	fprintf(f,
		"# HELP vmtools_debuginfod_lookups_total Debug files looked up on debuginfod servers, by outcome.\n"
		"# TYPE vmtools_debuginfod_lookups_total counter\n");
	for (int o = 0; o < VM_DEBUGINFOD_OUTCOMES; o++)
		fprintf(f,
			"vmtools_debuginfod_lookups_total{outcome=\"%s\"} %llu\n",
			vm_debuginfod_outcome_name(o),
			(unsigned long long)s->debuginfod.lookups[o]);
	fprintf(f,
		"# HELP vmtools_debuginfod_pending Debug file lookups queued or running.\n"
		"# TYPE vmtools_debuginfod_pending gauge\n"
		"vmtools_debuginfod_pending %llu\n",
		(unsigned long long)s->debuginfod.pending);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*len = size;
	return buf;
}
