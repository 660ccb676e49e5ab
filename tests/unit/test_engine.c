// SPDX-License-Identifier: Apache-2.0
/*
 * test_engine.c - unit tests of agent/profile/engine.c: request validation (no
 * privileges needed), and with root a real eBPF session on this very
 * process: sessions independent of each other, vm_session_status() and
 * vm_session_stop() from another thread while vm_session_wait() blocks, a
 * valid pprof at the end of a child that burns CPU, and no BPF program, link or perf event left open
 * in the process after vm_session_free().
 *
 * Also: a second session runs beside the first and ending it leaves the
 * first sampling; folded and gzip output; a continuous session
 * (vm_session_seal) whose windows follow each other to the nanosecond while
 * an on-demand session runs beside it, and a perf one and a seal of an
 * on-demand session refused; a continuous faults session's windows, in
 * faults and bytes of the period, and a continuous memory one refused.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/profile/engine.h"
#include "proto/profile.pb-c.h"
#include "agent/samples/sample.h"
#include "agent/symbolize/symbolize.h"
#include "tests/unit/spinner.h"

/* The context the agent's command would make: the test's own. */
static struct vm_engine_config cfg;

static struct vm_profile_request base_request(void)
{
	struct vm_profile_request r = {
		.profiler = VM_PROFILER_BPF,
		.frequency = 99,
		.seconds = 1,
		.format = VM_FORMAT_PPROF,
	};

	return r;
}

/* A session of r started into *s, or the test skipped (and child ended). */
static void start_or_skip(const struct vm_profile_request *r, pid_t child,
			  struct vm_session **s)
{
	struct vm_error err = { 0 };

	if (vm_session_start(r, &cfg, s, &err) < 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		print_message("no BPF here: %s\n", err.msg);
		skip();
	}
}

static void expect_refused(struct vm_profile_request *r, const char *needle)
{
	struct vm_session *s = NULL;
	struct vm_error err = { 0 };

	assert_true(vm_session_start(r, NULL, &s, &err) < 0);
	assert_null(s);
	if (!strstr(err.msg, needle))
		fail_msg("expected '%s' in: %s", needle, err.msg);
}

static void test_validation(void **state)
{
	struct vm_profile_request r;

	(void)state;
	r = base_request();
	r.frequency = 0;
	expect_refused(&r, "1 to 1000");
	r = base_request();
	r.frequency = 1001;
	expect_refused(&r, "1001 Hz");
	r = base_request();
	r.seconds = 0;
	expect_refused(&r, "duration");
	r = base_request();
	r.comms[0] = "a/b";
	r.n_comms = 1;
	expect_refused(&r, "command name 'a/b'");
	r = base_request();
	r.pids[0] = -4;
	r.n_pids = 1;
	expect_refused(&r, "pid -4");
	r = base_request();
	r.pids[0] = 999999999;
	r.n_pids = 1;
	expect_refused(&r, "no process with pid 999999999");
	assert_string_equal(vm_profiler_name(VM_PROFILER_BPF), "BccProfile");
	assert_string_equal(vm_profiler_name(VM_PROFILER_PERF), "Perf");
}

/* BPF objects and perf events this process holds open. */
static int bpf_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	char path[300], target[256];
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (strstr(target, "bpf-prog") || strstr(target, "bpf_link") ||
		    strstr(target, "bpf-map") || strstr(target, "perf_event"))
			n++;
	}
	closedir(d);
	return n;
}

struct stopper {
	struct vm_session *s;
	uint64_t samples_seen;
};

static void *stop_later(void *arg)
{
	struct stopper *st = arg;
	struct vm_session_status status;
	struct timespec ts = { 0, 50 * 1000 * 1000 };

	for (int i = 0; i < 40; i++) { /* up to 2 s of 10 */
		nanosleep(&ts, NULL);
		vm_session_status(st->s, &status);
		assert_int_equal(status.frequency, 499);
		assert_int_equal(status.seconds, 10);
		st->samples_seen = status.samples;
		if (status.samples >= 20)
			break;
	}
	vm_session_stop(st->s);
	return NULL;
}

static void test_session(void **state)
{
	struct vm_profile_request r = base_request();
	struct vm_session *s = NULL, *other = NULL;
	struct vm_error err = { 0 };
	struct vm_profile_output out = { 0 };
	struct vm_session_status status;
	Perftools__Profiles__Profile *p;
	struct stopper st = { 0 };
	pthread_t stopper;
	pid_t child;
	struct timespec t0, t1;
	int before;

	(void)state;
	if (geteuid() != 0)
		skip();
	before = bpf_fds();
	child = spawn_spinner();
	r.pids[0] = child;
	r.n_pids = 1;
	r.frequency = 499;
	r.seconds = 10;
	start_or_skip(&r, child, &s);
	assert_true(bpf_fds() > before);

	/*
	 * Sessions are independent: a second runs beside the first (the
	 * one-at-a-time rule is the REST service's, test_service.c), and
	 * ending it leaves the first sampling.
	 */
	assert_int_equal(vm_session_start(&r, &cfg, &other, &err), 0);
	assert_non_null(other);
	assert_true(other != s);
	vm_session_stop(other);
	assert_int_equal(vm_session_wait(other, &err), 0);
	assert_int_equal(vm_session_finish(other, &out, &err), 0);
	assert_non_null(out.data);
	free(out.data);
	memset(&out, 0, sizeof(out));
	vm_session_free(other);
	vm_session_status(s, &status);
	assert_false(status.stopping);

	st.s = s;
	assert_int_equal(pthread_create(&stopper, NULL, stop_later, &st), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(vm_session_wait(s, &err), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(stopper, NULL);
	/* Stopped early, long before the 10 s. */
	assert_true(t1.tv_sec - t0.tv_sec < 5);
	assert_true(st.samples_seen > 0);
	vm_session_status(s, &status);
	assert_true(status.stopping);

	assert_int_equal(vm_session_finish(s, &out, &err), 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_true(out.samples >= st.samples_seen);
	assert_string_equal(out.filename, "profile.pb");
	assert_string_equal(out.content_type, "application/octet-stream");
	p = perftools__profiles__profile__unpack(NULL, out.len, out.data);
	assert_non_null(p);
	assert_true(p->n_sample > 0);
	assert_true(p->n_location > 0);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(out.data);
	/* A second finish is refused, status still answers. */
	assert_true(vm_session_finish(s, &out, &err) < 0);
	vm_session_status(s, &status);
	vm_session_free(s);

	/* The unwind tables' store, kept till now in the context. */
	vm_engine_release(cfg.ctx);
	assert_int_equal(bpf_fds(), before);

	/* The slot is free again; folded + gzip this time. */
	r.seconds = 1;
	r.pids[0] = getpid(); /* the child is gone */
	r.format = VM_FORMAT_FOLDED;
	r.gzip = true;
	assert_int_equal(vm_session_start(&r, &cfg, &s, &err), 0);
	vm_session_stop(s);
	assert_int_equal(vm_session_wait(s, &err), 0);
	assert_int_equal(vm_session_finish(s, &out, &err), 0);
	assert_string_equal(out.filename, "profile.folded.gz");
	assert_string_equal(out.content_type, "application/gzip");
	assert_true(out.len >= 18);
	free(out.data);
	vm_session_free(s);
	vm_session_free(NULL);
	/* The unwind tables' store, kept till now in the context. */
	vm_engine_release(cfg.ctx);
	assert_int_equal(bpf_fds(), before);
}

static uint64_t window_total(const struct vm_samples *w)
{
	uint64_t n = 0;

	for (size_t i = 0; i < w->n; i++)
		n += w->v[i].count;
	return n;
}

/*
 * A continuous session: windows sealed one after the other while sampling
 * goes on, each starting where the previous ended, an on-demand session
 * beside it; a perf one and a seal of an on-demand session are refused.
 */
static void test_continuous(void **state)
{
	struct vm_profile_request r = base_request();
	struct vm_session *s = NULL, *od = NULL;
	struct vm_error err = { 0 };
	struct vm_samples w[3];
	struct vm_symbolized y[3];
	struct vm_profile_output out = { 0 };
	uint64_t all = 0;
	pid_t child;
	int before;

	(void)state;
	r.continuous = true;
	r.profiler = VM_PROFILER_PERF;
	assert_int_equal(vm_session_start(&r, &cfg, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "continuously"));
	r.profiler = VM_PROFILER_BPF;
	r.kind = VM_KIND_MEMORY;
	err = (struct vm_error){ 0 };
	assert_int_equal(vm_session_start(&r, &cfg, &s, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "only CPU and faults profiles"));
	if (geteuid() != 0)
		skip();
	before = bpf_fds();
	child = spawn_spinner();
	r = base_request();
	r.continuous = true;
	r.pids[0] = child;
	r.n_pids = 1;
	r.frequency = 199;
	r.seconds = 1;
	err = (struct vm_error){ 0 };
	start_or_skip(&r, child, &s);
	r.continuous = false;
	assert_int_equal(vm_session_start(&r, &cfg, &od, &err), 0);
	assert_int_equal(vm_session_seal(od, &w[0], &y[0], &err), -EINVAL);
	for (int i = 0; i < 3; i++) {
		usleep(300000);
		assert_int_equal(vm_session_seal(s, &w[i], &y[i], &err), 0);
		assert_true(window_total(&w[i]) > 0);
		assert_int_equal(y[i].n_stacks, w[i].n);
		all += window_total(&w[i]);
		if (i > 0)
			assert_int_equal(w[i].time_nanos,
					 w[i - 1].time_nanos +
						 w[i - 1].duration_nanos);
	}
	assert_true(all > 0);
	vm_session_stop(od);
	assert_int_equal(vm_session_wait(od, &err), 0);
	assert_int_equal(vm_session_finish(od, &out, &err), 0);
	assert_true(out.samples > 0);
	free(out.data);
	vm_session_free(od);
	for (int i = 0; i < 3; i++) {
		vm_symbolized_free(&y[i]);
		vm_samples_free(&w[i]);
	}
	vm_session_stop(s);
	vm_session_free(s);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	/* The unwind tables' store, kept till now in the context. */
	vm_engine_release(cfg.ctx);
	assert_int_equal(bpf_fds(), before);
}

/* A child that maps, touches and unmaps 4 MiB over and over. */
static pid_t spawn_toucher(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		size_t len = 4 << 20;

		alarm(30);
		for (;;) {
			char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p == MAP_FAILED)
				_exit(1);
			for (size_t off = 0; off < len; off += 4096)
				p[off] = 1;
			munmap(p, len);
		}
	}
	assert_true(pid > 0);
	return pid;
}

static void test_continuous_faults(void **state)
{
	struct vm_profile_request r = base_request();
	struct vm_session *s = NULL;
	struct vm_error err = { 0 };
	struct vm_samples w;
	struct vm_symbolized y;
	pid_t child;

	(void)state;
	if (geteuid() != 0)
		skip();
	child = spawn_toucher();
	r.continuous = true;
	r.kind = VM_KIND_FAULTS;
	r.period = 16;
	r.pids[0] = child;
	r.n_pids = 1;
	start_or_skip(&r, child, &s);
	for (int i = 0; i < 2; i++) {
		usleep(300000);
		assert_int_equal(vm_session_seal(s, &w, &y, &err), 0);
		assert_int_equal(w.kind, VM_KIND_FAULTS);
		assert_int_equal(w.fault_period, 16);
		assert_true(window_total(&w) > 0);
		/* Each sample is the period's faults, each of a page. */
		for (size_t j = 0; j < w.n; j++) {
			assert_int_equal(w.v[j].count % 16, 0);
			assert_int_equal(w.v[j].value,
					 w.v[j].count * w.page_size);
		}
		vm_symbolized_free(&y);
		vm_samples_free(&w);
	}
	vm_session_stop(s);
	vm_session_free(s);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_session),
		cmocka_unit_test(test_continuous),
		cmocka_unit_test(test_continuous_faults),
	};
	int failed;

	if (vm_agent_ctx_new(NULL, &cfg.ctx, NULL) < 0)
		return 1;
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	/* The unwind tables' store puts back its own. */
	vm_engine_release(cfg.ctx);
	vm_agent_ctx_free(cfg.ctx);
	return failed;
}
