// SPDX-License-Identifier: Apache-2.0
/*
 * continuous_faults.c - the continuous faults windows (see
 * continuous_faults.h).
 *
 * One engine session with req.continuous and kind VM_KIND_FAULTS: the
 * eBPF backend loads its page-fault program alone (not the CPU one) on
 * one software perf event per CPU, which the kernel runs once every
 * period faults of the targets, so it costs nothing while they do not
 * fault.  continuous.c calls a beat when it seals a CPU window; the beat
 * seals this session's window too, keeps it in the faults history (its
 * faults per stack and the kind of mapping they were in), then, encoded
 * once as a gzipped pprof, queues it for the push (Pyroscope files it as
 * its own profile type, "faults", by its sample types fault_space and
 * faults).  Faults windows are kept in memory only: --history-dir keeps
 * CPU windows.  A session that cannot start is tried again at each beat
 * and said in the stats; it never stops the CPU windows.
 */
#include "agent/continuous/continuous_faults.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/samples/sample.h"
#include "agent/symbolize/symbolize.h"
#include "common/log.h"

struct vm_continuous_faults {
	struct vm_continuous_faults_config cfg;
	struct vm_history *history;
	struct vm_session *session; /* NULL until it starts */
	bool told; /* that it cannot start, once */
	pthread_mutex_t lock; /* st */
	/* What other threads read: sampling (session is set), windows, error */
	struct vm_continuous_faults_stats st;
};

static void set_error(struct vm_continuous_faults *f, const char *msg)
{
	pthread_mutex_lock(&f->lock);
	f->st.sampling = f->session != NULL;
	snprintf(f->st.last_error, sizeof(f->st.last_error), "%s", msg);
	pthread_mutex_unlock(&f->lock);
}

int vm_continuous_faults_new(const struct vm_continuous_faults_config *cfg,
			     struct vm_continuous_faults **out,
			     struct vm_error *err)
{
	struct vm_continuous_faults *f = calloc(1, sizeof(*f));
	struct vm_history_config hc = cfg->history;
	long page = sysconf(_SC_PAGESIZE);
	int r;

	*out = NULL;
	if (!f)
		return vm_error_set(err, ENOMEM, "out of memory");
	f->cfg = *cfg;
	pthread_mutex_init(&f->lock, NULL);
	hc.kind = VM_KIND_FAULTS;
	hc.max_bytes /= VM_CONTINUOUS_FAULTS_BYTES_SHARE;
	hc.fault_period = cfg->period;
	hc.page_size = page > 0 ? (uint32_t)page : 4096;
	r = vm_history_new(&hc, &f->history, err);
	if (r < 0) {
		vm_continuous_faults_free(f);
		return r;
	}
	*out = f;
	return 0;
}

static void start(struct vm_continuous_faults *f)
{
	struct vm_profile_request req = {
		.kind = VM_KIND_FAULTS,
		.profiler = VM_PROFILER_BPF,
		.frequency = VM_FREQUENCY_DEFAULT,
		.period = f->cfg.period,
		.seconds = VM_SECONDS_MIN,
		.continuous = true,
	};
	struct vm_error err = { 0 };

	for (size_t i = 0; i < f->cfg.n_comms; i++)
		req.comms[i] = f->cfg.comms[i];
	req.n_comms = f->cfg.n_comms;
	if (vm_session_start(&req, f->cfg.engine, &f->session, &err) < 0) {
		f->session = NULL;
		set_error(f, vm_error_str(&err));
		if (!f->told)
			vm_log("continuous: no faults windows: %s; trying again at every window",
			       vm_error_str(&err));
		f->told = true;
		return;
	}
	set_error(f, "");
	vm_log("continuous faults windows: one sample every %u page faults",
	       f->cfg.period);
}

static void seal(struct vm_continuous_faults *f)
{
	struct vm_samples s;
	struct vm_symbolized y;
	struct vm_history_window w = { 0 };
	struct vm_error err = { 0 };
	bool kept;

	if (vm_session_seal(f->session, &s, &y, &err) < 0) {
		vm_log("continuous: cannot seal a faults window: %s",
		       vm_error_str(&err));
		return;
	}
	w.start_ns = s.time_nanos;
	w.end_ns = s.time_nanos + s.duration_nanos;
	w.lost = s.lost_stacks + s.lost_samples;
	/* A faults window's samples are its faults (the period's each). */
	for (size_t i = 0; i < s.n; i++)
		w.samples += s.v[i].count;
	kept = vm_history_add(f->history, &w, &y, &err) == 0;
	if (kept)
		vm_push_enqueue_profile(f->cfg.push, w.start_ns, w.end_ns, &y,
					"a faults window");
	else
		vm_log("continuous: %s", vm_error_str(&err));
	pthread_mutex_lock(&f->lock);
	f->st.windows += kept;
	pthread_mutex_unlock(&f->lock);
	vm_symbolized_free(&y);
	vm_samples_free(&s);
}

void vm_continuous_faults_beat(struct vm_continuous_faults *f)
{
	if (!f)
		return;
	if (f->session)
		seal(f);
	else
		start(f);
}

void vm_continuous_faults_end(struct vm_continuous_faults *f)
{
	if (!f || !f->session)
		return;
	seal(f);
	vm_session_stop(f->session);
	vm_session_free(f->session);
	f->session = NULL;
	pthread_mutex_lock(&f->lock);
	f->st.sampling = false;
	pthread_mutex_unlock(&f->lock);
}

void vm_continuous_faults_free(struct vm_continuous_faults *f)
{
	if (!f)
		return;
	vm_continuous_faults_end(f);
	vm_history_free(f->history);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

struct vm_history *
vm_continuous_faults_history_of(struct vm_continuous_faults *f)
{
	return f ? f->history : NULL;
}

void vm_continuous_faults_stats(struct vm_continuous_faults *f,
				struct vm_continuous_faults_stats *st)
{
	pthread_mutex_lock(&f->lock);
	*st = f->st;
	pthread_mutex_unlock(&f->lock);
	vm_history_usage(f->history, &st->history_bytes, &st->history_dropped);
}
