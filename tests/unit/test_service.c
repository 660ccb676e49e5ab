// SPDX-License-Identifier: Apache-2.0
/*
 * test_service.c - unit tests of the profiling service's state machine
 * (agent/serve/service.c), without HTTP: the slot's phases as its status
 * shows them, and how each session ends.
 *
 * Always, without privileges: the service reads kallsyms when it starts,
 * before any profile; idle, stop with nothing running (-ENXIO), a
 * request the engine refuses (not a session), a backend that cannot start
 * (a failed session), a client that hung up before its request was read
 * (no session at all), and a service shut down before anything ran.
 *
 * With root and BPF, on the real engine and bpf backend sampling a child
 * that burns CPU, one or two seconds each: a session that runs its time,
 * a second start while one runs (-EBUSY), a stop that keeps what was
 * collected, the client hanging up, and a shutdown while a session runs;
 * none of them reads kallsyms again.
 * Where BPF cannot be used these say why and are skipped.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/serve/health.h"
#include "agent/serve/service.h"
#include "proto/profile.pb-c.h"
#include "tests/unit/spinner.h"

/* What the agent's command would make: every service here shares it. */
static struct vm_agent_ctx *ctx;

/* How many times the context's symbol cache read /proc/kallsyms. */
static uint64_t kallsyms_reads(void)
{
	struct vm_symcache_stats st;

	vm_symcache_stats(ctx->symbols, &st);
	return st.kernel_reads;
}

/* A session in its own thread, as a connection thread runs it. */
struct runner {
	struct vm_service *svc;
	struct vm_profile_request req;
	int client_fd;
	struct vm_service_result res;
	int r;
	pthread_t thread;
	bool started;
	atomic_bool done;
};

struct fixture {
	struct vm_service *svc;
	pid_t child;
	struct runner ru;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static int setup(void **state)
{
	struct vm_service_config cfg = { .engine.ctx = ctx };
	struct vm_error err = { 0 };
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->child = -1;
	if (vm_service_new(&cfg, &f->svc, &err) < 0) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	/* After a failed assertion a session may still run: end it. */
	vm_service_shutdown(f->svc, 30000);
	if (f->ru.started)
		pthread_join(f->ru.thread, NULL);
	free(f->ru.res.out.data);
	if (f->child > 0) {
		kill(f->child, SIGKILL);
		waitpid(f->child, NULL, 0);
	}
	vm_service_free(f->svc);
	free(f);
	return 0;
}

/* Whether a real session can run here; if not, say why. */
static bool bpf_usable(void)
{
	struct vm_error err = { 0 };

	if (geteuid() != 0) {
		print_message("skipped: loading BPF programs needs root\n");
		return false;
	}
	if (vm_health_probe_bpf(&err) < 0) {
		print_message("skipped: BPF cannot be used here: %s\n",
			      vm_error_str(&err));
		return false;
	}
	return true;
}

static struct vm_profile_request request_for(pid_t pid, uint32_t seconds)
{
	struct vm_profile_request r = {
		.profiler = VM_PROFILER_BPF,
		.frequency = 499,
		.seconds = seconds,
		.format = VM_FORMAT_PPROF,
	};

	r.pids[0] = pid;
	r.n_pids = 1;
	return r;
}

static void *run_thread(void *arg)
{
	struct runner *ru = arg;

	ru->r = vm_service_run(ru->svc, &ru->req, ru->client_fd, &ru->res);
	atomic_store(&ru->done, true);
	return NULL;
}

static void start_runner(struct fixture *f,
			 const struct vm_profile_request *req, int client_fd)
{
	struct runner *ru = &f->ru;

	ru->svc = f->svc;
	ru->req = *req;
	ru->client_fd = client_fd;
	atomic_store(&ru->done, false);
	assert_int_equal(pthread_create(&ru->thread, NULL, run_thread, ru), 0);
	ru->started = true;
}

static void join_runner(struct fixture *f)
{
	assert_true(f->ru.started);
	pthread_join(f->ru.thread, NULL);
	f->ru.started = false;
}

/* Wait up to ms for the slot to reach phase; its status in *st. */
static bool wait_for_phase(struct vm_service *svc, enum vm_service_phase phase,
			   unsigned ms, struct vm_service_status *st)
{
	uint64_t deadline = mono_ms() + ms;

	do {
		vm_service_status(svc, st);
		if (st->phase == phase)
			return true;
		sleep_ms(2);
	} while (mono_ms() < deadline);
	return false;
}

/* Wait until a running session has samples; returns how many. */
static uint64_t wait_for_samples(struct vm_service *svc)
{
	struct vm_service_status st;

	for (int i = 0; i < 200; i++) { /* up to 2 s */
		vm_service_status(svc, &st);
		assert_int_equal(st.phase, VM_SERVICE_RUNNING);
		if (st.session.samples > 0)
			return st.session.samples;
		sleep_ms(10);
	}
	fail_msg("no sample within 2 s of a child burning CPU at 499 Hz");
	return 0;
}

/* A whole profile with at least one sample. */
static void assert_profile(const struct vm_profile_output *out)
{
	Perftools__Profiles__Profile *p;

	assert_non_null(out->data);
	assert_string_equal(out->filename, "profile.pb");
	p = perftools__profiles__profile__unpack(NULL, out->len, out->data);
	assert_non_null(p);
	assert_true(p->n_sample > 0);
	perftools__profiles__profile__free_unpacked(p, NULL);
}

static void metrics_of(struct vm_service *svc, struct vm_metrics_snapshot *m)
{
	vm_metrics_snapshot(vm_service_metrics(svc), m);
}

static void assert_no_session(struct vm_service *svc)
{
	struct vm_metrics_snapshot m;

	metrics_of(svc, &m);
	for (int o = 0; o < VM_OUTCOME_COUNT; o++)
		assert_int_equal(m.sessions[o], 0);
	assert_int_equal(m.rejected_busy, 0);
	assert_false(m.running);
}

static void assert_idle(struct vm_service *svc)
{
	struct vm_service_status st;

	memset(&st, 0xff, sizeof(st));
	vm_service_status(svc, &st);
	assert_int_equal(st.phase, VM_SERVICE_IDLE);
}

/* Before any fixture: the first service of the process. */
static void test_kallsyms_at_start(void **state)
{
	struct vm_service_config cfg = { .engine.ctx = ctx };
	struct vm_service *svc;

	(void)state;
	assert_int_equal(kallsyms_reads(), 0);
	assert_int_equal(vm_service_new(&cfg, &svc, NULL), 0);
	vm_service_free(svc); /* joins the thread that reads it */
	assert_int_equal(kallsyms_reads(), 1);
}

static void test_idle(void **state)
{
	struct fixture *f = *state;
	struct vm_service_status st;
	struct vm_error err = { 0 };

	assert_idle(f->svc);
	memset(&st, 0xff, sizeof(st));
	assert_int_equal(vm_service_stop(f->svc, &st, &err), -ENXIO);
	assert_string_equal(
		err.msg, "no profile is running, so there is nothing to stop");
	assert_int_equal(st.phase, VM_SERVICE_IDLE);
	assert_idle(f->svc);
	assert_no_session(f->svc);
}

static void test_refused_request(void **state)
{
	struct fixture *f = *state;
	struct vm_profile_request req = request_for(getpid(), 1);
	struct vm_service_result res;

	/* The engine refuses the request: the slot was taken, then freed. */
	req.frequency = 0;
	assert_int_equal(vm_service_run(f->svc, &req, -1, &res), -EINVAL);
	assert_true(res.claimed);
	assert_false(res.started);
	assert_false(res.client_gone);
	assert_int_equal(res.outcome, VM_OUTCOME_FAILED);
	assert_null(res.out.data);
	assert_non_null(strstr(res.err.msg, "frequency 0 Hz"));
	assert_idle(f->svc);

	req = request_for(999999999, 1);
	assert_int_equal(vm_service_run(f->svc, &req, -1, &res), -ESRCH);
	assert_true(res.claimed);
	assert_non_null(strstr(res.err.msg, "no process with pid 999999999"));
	assert_idle(f->svc);

	/* A bad request is not a session. */
	assert_no_session(f->svc);
}

static void test_backend_unavailable(void **state)
{
	struct fixture *f = *state;
	struct vm_service_config cfg = { 0 };
	struct vm_profile_request req = request_for(getpid(), 1);
	struct vm_service_result res;
	struct vm_metrics_snapshot m;
	struct vm_service *svc = NULL;
	struct vm_error err = { 0 };
	char empty[] = "/tmp/test_service.XXXXXX";
	char *path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	int r;

	/* No perf anywhere: not where we point, not on PATH. */
	assert_non_null(mkdtemp(empty));
	cfg.engine.perf_path = "/nonexistent/perf";
	assert_int_equal(vm_service_new(&cfg, &svc, &err), 0);
	req.profiler = VM_PROFILER_PERF;
	setenv("PATH", empty, 1);
	r = vm_service_run(svc, &req, -1, &res);
	if (path)
		setenv("PATH", path, 1);
	free(path);
	rmdir(empty);
	free(res.out.data);
	if (r == 0) {
		vm_service_free(svc);
		print_message("skipped: a tools disk here provides perf\n");
		skip();
	}
	assert_int_equal(r, -ENOENT);
	assert_true(res.claimed);
	assert_false(res.started);
	assert_int_equal(res.outcome, VM_OUTCOME_FAILED);
	assert_non_null(strstr(res.err.msg, "perf is not available"));

	/* The agent's failure, not the request's: a failed session. */
	metrics_of(svc, &m);
	assert_int_equal(m.sessions[VM_OUTCOME_FAILED], 1);
	assert_int_equal(m.sessions[VM_OUTCOME_COMPLETED], 0);
	assert_false(m.running);
	assert_idle(svc);
	vm_service_free(svc);
	(void)f;
}

static void test_shutdown_idle(void **state)
{
	struct fixture *f = *state;
	struct vm_profile_request req = request_for(getpid(), 1);
	struct vm_service_status st;
	struct vm_service_result res;
	struct vm_error err = { 0 };
	uint64_t t0 = mono_ms();

	/* Nothing runs: at once. */
	assert_true(vm_service_shutdown(f->svc, 10000));
	assert_true(mono_ms() - t0 < 1000);
	assert_int_equal(vm_service_run(f->svc, &req, -1, &res), -ESHUTDOWN);
	assert_false(res.claimed);
	assert_false(res.started);
	assert_null(res.out.data);
	assert_non_null(strstr(res.err.msg, "shutting down"));
	assert_int_equal(vm_service_stop(f->svc, &st, &err), -ENXIO);
	assert_idle(f->svc);
	assert_no_session(f->svc);
}

/*
 * A session that runs its time.  Its status is watched throughout: the
 * phases only move forward (idle, starting, running, finishing, idle) and
 * every snapshot describes the request.
 */
static void test_completed(void **state)
{
	struct fixture *f = *state;
	struct vm_profile_request req;
	struct vm_service_status st;
	struct vm_metrics_snapshot m;
	struct runner *ru = &f->ru;
	uint64_t t0 = real_ms(), max_samples = 0;
	int rank = 0, seen = 0;

	if (!bpf_usable())
		skip();
	f->child = spawn_spinner();
	req = request_for(f->child, 1);
	start_runner(f, &req, -1);
	for (;;) {
		bool done = atomic_load(&ru->done);
		int now;

		vm_service_status(f->svc, &st);
		now = st.phase == VM_SERVICE_IDLE ? (rank ? 4 : 0) :
						    (int)st.phase;
		if (now < rank)
			fail_msg("phase went back from %d to %d", rank, now);
		rank = now;
		seen |= 1 << now;
		if (st.phase != VM_SERVICE_IDLE) {
			assert_int_equal(st.session.profiler, VM_PROFILER_BPF);
			assert_int_equal(st.session.frequency, 499);
			assert_int_equal(st.session.seconds, 1);
			assert_true(st.session.started_unix_ms + 1000 >= t0);
			assert_true(st.session.started_unix_ms <=
				    real_ms() + 1000);
			assert_true(st.session.samples >= max_samples);
			max_samples = st.session.samples;
		}
		if (st.phase == VM_SERVICE_STARTING)
			assert_int_equal(st.session.samples, 0);
		if (st.phase == VM_SERVICE_RUNNING)
			assert_false(st.session.stopping);
		if (st.phase == VM_SERVICE_FINISHING)
			assert_true(st.session.stopping);
		if (done)
			break;
		sleep_ms(2);
	}
	join_runner(f);
	assert_true(seen & (1 << VM_SERVICE_RUNNING));
	assert_int_equal(rank, 4);

	assert_int_equal(ru->r, 0);
	assert_true(ru->res.claimed);
	assert_true(ru->res.started);
	assert_false(ru->res.client_gone);
	assert_int_equal(ru->res.outcome, VM_OUTCOME_COMPLETED);
	assert_true(ru->res.duration_ms >= 1000);
	assert_true(ru->res.samples > 0);
	assert_true(ru->res.samples >= max_samples);
	assert_int_equal(ru->res.samples, ru->res.out.samples);
	assert_int_equal(ru->res.lost, ru->res.out.lost);
	assert_profile(&ru->res.out);
	assert_idle(f->svc);
	/* Read at the first start, kept: no profile reads it again. */
	assert_int_equal(kallsyms_reads(), 1);

	metrics_of(f->svc, &m);
	assert_int_equal(m.sessions[VM_OUTCOME_COMPLETED], 1);
	assert_int_equal(m.samples, ru->res.samples);
	assert_int_equal(m.rejected_busy, 0);
	assert_false(m.running);
}

/* Busy while one runs, then a stop that keeps what was collected. */
static void test_busy_then_stopped(void **state)
{
	struct fixture *f = *state;
	struct vm_profile_request req, other;
	struct vm_service_status st;
	struct vm_service_result res;
	struct vm_metrics_snapshot m;
	struct vm_error err = { 0 };
	struct runner *ru = &f->ru;
	uint64_t seen, t0 = mono_ms();

	if (!bpf_usable())
		skip();
	f->child = spawn_spinner();
	req = request_for(f->child, 10);
	start_runner(f, &req, -1);
	assert_true(wait_for_phase(f->svc, VM_SERVICE_RUNNING, 5000, &st));
	metrics_of(f->svc, &m);
	assert_true(m.running);

	/* The slot is taken, whatever the second asks for. */
	other = request_for(f->child, 1);
	other.frequency = 99;
	assert_int_equal(vm_service_run(f->svc, &other, -1, &res), -EBUSY);
	assert_false(res.claimed);
	assert_false(res.started);
	assert_null(res.out.data);
	if (!strstr(res.err.msg,
		    "another profile is running (cpu, BccProfile at 499 Hz for 10 s, "))
		fail_msg("unexpected: %s", res.err.msg);
	metrics_of(f->svc, &m);
	assert_int_equal(m.rejected_busy, 1);
	vm_service_status(f->svc, &st);
	assert_int_equal(st.phase, VM_SERVICE_RUNNING);
	assert_false(st.session.stopping);

	seen = wait_for_samples(f->svc);
	assert_int_equal(vm_service_stop(f->svc, &st, &err), 0);
	assert_int_equal(st.phase, VM_SERVICE_RUNNING);
	assert_true(st.session.stopping);
	assert_int_equal(st.session.frequency, 499);
	assert_int_equal(st.session.seconds, 10);
	assert_true(st.session.samples >= seen);
	join_runner(f);
	assert_true(mono_ms() - t0 < 8000); /* long before its 10 s */

	assert_int_equal(ru->r, 0);
	assert_int_equal(ru->res.outcome, VM_OUTCOME_STOPPED);
	assert_false(ru->res.client_gone);
	assert_true(ru->res.samples >= seen);
	assert_profile(&ru->res.out);
	assert_idle(f->svc);
	assert_int_equal(vm_service_stop(f->svc, &st, &err), -ENXIO);

	metrics_of(f->svc, &m);
	assert_int_equal(m.sessions[VM_OUTCOME_STOPPED], 1);
	assert_int_equal(m.sessions[VM_OUTCOME_COMPLETED], 0);
	assert_int_equal(m.rejected_busy, 1);
	assert_false(m.running);
}

/* The requester hangs up: the session ends and nothing is encoded. */
static void test_client_gone(void **state)
{
	struct fixture *f = *state;
	struct vm_profile_request req;
	struct vm_service_status st;
	struct vm_metrics_snapshot m;
	struct runner *ru = &f->ru;
	uint64_t t0 = mono_ms();
	int sv[2];

	if (!bpf_usable())
		skip();
	/* The child first, so that it holds no end of the connection. */
	f->child = spawn_spinner();
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	req = request_for(f->child, 10);
	start_runner(f, &req, sv[0]);
	assert_true(wait_for_phase(f->svc, VM_SERVICE_RUNNING, 5000, &st));
	close(sv[1]);
	join_runner(f);
	close(sv[0]);
	assert_true(mono_ms() - t0 < 8000);

	assert_int_equal(ru->r, 0);
	assert_true(ru->res.client_gone);
	assert_int_equal(ru->res.outcome, VM_OUTCOME_CLIENT_GONE);
	assert_null(ru->res.out.data);
	assert_int_equal(ru->res.out.len, 0);
	assert_idle(f->svc);

	metrics_of(f->svc, &m);
	assert_int_equal(m.sessions[VM_OUTCOME_CLIENT_GONE], 1);
	assert_int_equal(m.sessions[VM_OUTCOME_COMPLETED], 0);
	assert_false(m.running);
}

/*
 * The requester hung up before its request was read (it waited for a
 * connection slot): no session is started for nobody.  Needs no BPF.
 */
static void test_client_gone_before(void **state)
{
	struct fixture *f = *state;
	struct vm_profile_request req = request_for(getpid(), 1);
	struct vm_service_result res;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[1]);
	assert_int_equal(vm_service_run(f->svc, &req, sv[0], &res), 0);
	close(sv[0]);
	assert_true(res.client_gone);
	assert_false(res.claimed);
	assert_false(res.started);
	assert_null(res.out.data);
	assert_idle(f->svc);
	assert_no_session(f->svc);
}

/* SIGTERM while a session runs: its client still gets the profile. */
static void test_shutdown_running(void **state)
{
	struct fixture *f = *state;
	struct vm_profile_request req;
	struct vm_service_status st;
	struct vm_service_result res;
	struct vm_metrics_snapshot m;
	struct vm_error err = { 0 };
	struct runner *ru = &f->ru;
	uint64_t t0 = mono_ms();

	if (!bpf_usable())
		skip();
	f->child = spawn_spinner();
	req = request_for(f->child, 10);
	start_runner(f, &req, -1);
	assert_true(wait_for_phase(f->svc, VM_SERVICE_RUNNING, 5000, &st));
	wait_for_samples(f->svc);
	assert_true(vm_service_shutdown(f->svc, 10000));
	assert_idle(f->svc);
	join_runner(f);
	assert_true(mono_ms() - t0 < 8000);

	assert_int_equal(ru->r, 0);
	assert_int_equal(ru->res.outcome, VM_OUTCOME_SHUTDOWN);
	assert_false(ru->res.client_gone);
	assert_profile(&ru->res.out);

	/* And no new one. */
	assert_int_equal(vm_service_run(f->svc, &req, -1, &res), -ESHUTDOWN);
	assert_false(res.claimed);
	assert_int_equal(vm_service_stop(f->svc, &st, &err), -ENXIO);
	assert_idle(f->svc);

	metrics_of(f->svc, &m);
	assert_int_equal(m.sessions[VM_OUTCOME_SHUTDOWN], 1);
	assert_false(m.running);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kallsyms_at_start),
		cmocka_unit_test_setup_teardown(test_idle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_request, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_backend_unavailable, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_shutdown_idle, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_completed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_busy_then_stopped, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_client_gone, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_client_gone_before, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_shutdown_running, setup,
						teardown),
	};

	int failed;

	if (vm_agent_ctx_new(NULL, &ctx, NULL) < 0)
		return 1;
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	vm_engine_release(ctx); /* the unwind tables' store puts back its own */
	vm_agent_ctx_free(ctx);
	return failed;
}
