// SPDX-License-Identifier: Apache-2.0
/*
 * nofp.c - a workload built as most code is, without frame pointers
 * (-O2 -fomit-frame-pointer: the Makefile says so for this file and for
 * libnofp.so, tests/programs/nofplib.c), whose stacks are known.  A
 * profiler that follows frame pointers loses the callers of every frame
 * here; one that unwinds with .eh_frame names each.
 *
 * By default (tests/integration/74-perf-unwind.sh): main -> nofp_outer ->
 * nofp_middle -> nofp_recurse (ten calls deep) -> nofp_leaf, which burns
 * CPU, and every fourth round through libc: nofp_middle -> qsort ->
 * nofp_compare.
 *
 * With --chains (tests/integration/76-nofp-chains.sh), five chains in
 * turn, CHAIN_SLICE seconds each, each burning CPU in a leaf of its own:
 *   recursion  main -> nofp_rotate -> nofp_deep -> nofp_deep_recurse
 *              (exactly 100 calls deep) -> nofp_deep_leaf
 *   plt        main -> nofp_rotate -> nofp_via_plt -> (PLT) nofplib_entry
 *              -> nofplib_middle -> nofplib_inner -> nofplib_leaf, in
 *              libnofp.so
 *   signal     main -> nofp_rotate -> nofp_sigwork -> nofp_interrupted,
 *              a loop calling nothing that SIGALRM (setitimer) interrupts
 *              -> __restore_rt, the handler's return address ->
 *              nofp_handler -> nofp_handler_leaf
 *   alloca     main -> nofp_rotate -> nofp_alloca -> nofp_alloca_outer ->
 *              nofp_alloca_inner -> nofp_alloca_leaf, the middle two
 *              with alloca() of a size that changes every call (their
 *              CFA is %rbp-based)
 *   thread     a second thread: nofp_thread_main -> nofp_thread_work ->
 *              nofp_thread_step -> nofp_thread_leaf; it runs only while
 *              main waits for it, so the process burns one CPU
 *
 * With --dlopen S (tests/integration/77-nofp-dlopen.sh), the default
 * workload until S seconds have passed, then libnofpdl.so
 * (tests/programs/nofpdl.c, beside nofp, not linked) loaded with dlopen()
 * and burnt in, called through the pointer dlsym() gives:
 *   dlopen     main -> nofp_dlopen -> nofp_dl_burn -> (pointer)
 *              nofpdl_entry -> nofpdl_middle -> nofpdl_inner ->
 *              nofpdl_leaf, in libnofpdl.so
 * With --vdso (tests/integration/78-nofp-vdso.sh), clock_gettime() in a
 * loop, which libc answers from the vDSO the kernel maps (no system call):
 *   vdso       main -> nofp_vdso -> nofp_vdso_outer -> nofp_vdso_inner ->
 *              libc's clock_gettime -> the vDSO's
 * --expect prints each chain of the mode given with it (--chains when
 * none) as NAME LEAF FRAMES, FRAMES from main (or the thread's function)
 * down to the leaf, ';'-separated, as a folded stack has them; libc's
 * frames above (_start ..., start_thread ...) are libc's, not named here,
 * and so are the vdso chain's last two, its LEAF nofp_vdso_inner.
 *
 * usage: nofp [--seconds S] [--comm NAME] [--chains | --dlopen S | --vdso]
 *             [--expect]
 */
#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define RECURSION_DEPTH 100
#define CHAIN_SLICE 0.04
#define LEAF_ROUNDS 200000
#define VDSO_ROUNDS 20000

/* libnofp.so's, called through the PLT. */
void nofplib_entry(unsigned long rounds);

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The default workload: ten calls of recursion, and libc's qsort. */

__attribute__((noinline)) void nofp_leaf(void)
{
	for (int i = 0; i < LEAF_ROUNDS; i++)
		sink += (unsigned long)i * i;
}

__attribute__((noinline)) int nofp_compare(const void *a, const void *b)
{
	for (int i = 0; i < 200; i++)
		sink += i;
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) void nofp_recurse(int depth)
{
	if (depth > 0)
		nofp_recurse(depth - 1);
	else
		nofp_leaf();
	sink++; /* not a tail call */
}

__attribute__((noinline)) void nofp_middle(int round)
{
	int v[256];

	if (round % 4 == 0) {
		for (int i = 0; i < 256; i++)
			v[i] = (i * 7919) % 256;
		qsort(v, 256, sizeof(v[0]), nofp_compare);
	} else {
		nofp_recurse(9);
	}
	sink++;
}

__attribute__((noinline)) void nofp_outer(double until)
{
	for (int round = 0; now() < until; round++)
		nofp_middle(round);
	sink++;
}

/* --chains: (a) recursion exactly RECURSION_DEPTH deep. */

__attribute__((noinline)) void nofp_deep_leaf(void)
{
	for (int i = 0; i < LEAF_ROUNDS; i++)
		sink += (unsigned long)i * i;
}

__attribute__((noinline)) void nofp_deep_recurse(int depth)
{
	if (depth > 1)
		nofp_deep_recurse(depth - 1);
	else
		nofp_deep_leaf();
	sink++; /* not a tail call */
}

__attribute__((noinline)) void nofp_deep(double until)
{
	while (now() < until)
		nofp_deep_recurse(RECURSION_DEPTH);
	sink++;
}

/* (b) through the PLT into libnofp.so. */

__attribute__((noinline)) void nofp_via_plt(double until)
{
	while (now() < until)
		nofplib_entry(LEAF_ROUNDS);
	sink++;
}

/* (c) a signal handler burning CPU, having interrupted nofp_interrupted.
 * The handler burns only when the loop runs (spinning), so the frame the
 * signal interrupted is always nofp_interrupted's; a SIGALRM arriving
 * anywhere else returns at once.
 */

static volatile sig_atomic_t spinning, handled;
static double handler_until;

__attribute__((noinline)) void nofp_handler_leaf(void)
{
	for (int i = 0; i < LEAF_ROUNDS; i++)
		sink += (unsigned long)i * i;
}

__attribute__((noinline)) void nofp_handler(int sig)
{
	if (!spinning || handled)
		return;
	while (now() < handler_until)
		nofp_handler_leaf();
	handled = 1;
}

__attribute__((noinline)) void nofp_interrupted(void)
{
	spinning = 1;
	while (!handled)
		sink++;
	spinning = 0;
}

static void set_timer(long usec)
{
	struct itimerval it = { .it_interval = { 0, usec },
				.it_value = { 0, usec } };

	setitimer(ITIMER_REAL, &it, NULL);
}

__attribute__((noinline)) void nofp_sigwork(double until)
{
	handler_until = until;
	handled = 0;
	set_timer(1000); /* every millisecond until the handler has run */
	nofp_interrupted();
	set_timer(0);
	sink++;
}

/* (d) alloca: frames whose size is known only at run time. */

__attribute__((noinline)) void nofp_alloca_leaf(volatile char *p, size_t n)
{
	for (int i = 0; i < LEAF_ROUNDS; i++)
		p[i % n] += i;
}

__attribute__((noinline)) void nofp_alloca_inner(size_t n)
{
	volatile char *p = alloca(n);

	p[0] = 1;
	nofp_alloca_leaf(p, n);
	sink += p[n - 1]; /* not a tail call */
}

__attribute__((noinline)) void nofp_alloca_outer(size_t n)
{
	volatile char *p = alloca(n);

	p[0] = 1;
	nofp_alloca_inner(n / 2 + 16);
	sink += p[n - 1]; /* not a tail call */
}

__attribute__((noinline)) void nofp_alloca(double until)
{
	for (size_t k = 0; now() < until; k++)
		nofp_alloca_outer(64 + (k % 13) * 200);
	sink++;
}

/* (e) a second thread, run while main waits. */

static sem_t thread_go, thread_done;
static double thread_until;
static volatile int thread_stop;

static void wait_for(sem_t *s)
{
	while (sem_wait(s) && errno == EINTR)
		;
}

__attribute__((noinline)) void nofp_thread_leaf(void)
{
	for (int i = 0; i < LEAF_ROUNDS; i++)
		sink += (unsigned long)i * i;
}

__attribute__((noinline)) void nofp_thread_step(void)
{
	nofp_thread_leaf();
	sink++; /* not a tail call */
}

__attribute__((noinline)) void nofp_thread_work(double until)
{
	while (now() < until)
		nofp_thread_step();
	sink++;
}

__attribute__((noinline)) void *nofp_thread_main(void *arg)
{
	for (;;) {
		wait_for(&thread_go);
		if (thread_stop)
			break;
		nofp_thread_work(thread_until);
		sem_post(&thread_done);
	}
	return NULL;
}

__attribute__((noinline)) void nofp_rotate(double until)
{
	pthread_t thread;
	sigset_t alarm;
	struct sigaction sa = { .sa_handler = nofp_handler,
				.sa_flags = SA_RESTART };

	sigaction(SIGALRM, &sa, NULL);
	/* SIGALRM for main only: the thread starts with it blocked. */
	sigemptyset(&alarm);
	sigaddset(&alarm, SIGALRM);
	sem_init(&thread_go, 0, 0);
	sem_init(&thread_done, 0, 0);
	pthread_sigmask(SIG_BLOCK, &alarm, NULL);
	if (pthread_create(&thread, NULL, nofp_thread_main, NULL)) {
		fprintf(stderr, "nofp: pthread_create failed\n");
		exit(1);
	}
	pthread_sigmask(SIG_UNBLOCK, &alarm, NULL);

	for (int round = 0; now() < until; round++) {
		double slice = now() + CHAIN_SLICE;

		switch (round % 5) {
		case 0:
			nofp_deep(slice);
			break;
		case 1:
			nofp_via_plt(slice);
			break;
		case 2:
			nofp_sigwork(slice);
			break;
		case 3:
			nofp_alloca(slice);
			break;
		default:
			thread_until = slice;
			sem_post(&thread_go);
			wait_for(&thread_done);
		}
	}
	thread_stop = 1;
	sem_post(&thread_go);
	pthread_join(thread, NULL);
	sink++;
}

/* --dlopen: a library loaded while the process runs. */

__attribute__((noinline)) void nofp_dl_burn(void (*entry)(unsigned long),
					    double until)
{
	while (now() < until)
		entry(LEAF_ROUNDS);
	sink++;
}

__attribute__((noinline)) void nofp_dlopen(double load_at, double until)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	char *slash;
	void (*entry)(unsigned long);
	void *lib;

	nofp_outer(load_at); /* its own code until then */
	/* libnofpdl.so is beside nofp. */
	if (n > 0)
		path[n] = '\0';
	slash = n > 0 ? strrchr(path, '/') : NULL;
	if (!slash ||
	    (size_t)(slash - path) + sizeof("/libnofpdl.so") > sizeof(path)) {
		fprintf(stderr, "nofp: cannot tell where nofp is\n");
		exit(1);
	}
	strcpy(slash, "/libnofpdl.so");
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	entry = lib ? (void (*)(unsigned long))dlsym(lib, "nofpdl_entry") :
		      NULL;
	if (!entry) {
		fprintf(stderr, "nofp: %s\n", dlerror());
		exit(1);
	}
	nofp_dl_burn(entry, until);
	sink++;
}

/* --vdso: every clock_gettime() of the loop is nofp_vdso_inner's. */

__attribute__((noinline)) double nofp_vdso_inner(void)
{
	struct timespec ts = { 0 };

	for (int i = 0; i < VDSO_ROUNDS; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += (unsigned long)ts.tv_nsec;
	}
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) double nofp_vdso_outer(void)
{
	double t = nofp_vdso_inner();

	sink++; /* not a tail call */
	return t;
}

__attribute__((noinline)) void nofp_vdso(double until)
{
	while (nofp_vdso_outer() < until)
		;
	sink++;
}

enum mode { MODE_DEFAULT, MODE_CHAINS, MODE_DLOPEN, MODE_VDSO };

/* What a mode runs, frame by frame, for the test to compare. */
static void print_expected(enum mode mode)
{
	if (mode == MODE_DLOPEN) {
		printf("dlopen nofpdl_leaf main;nofp_dlopen;nofp_dl_burn;"
		       "nofpdl_entry;nofpdl_middle;nofpdl_inner;nofpdl_leaf\n");
		return;
	}
	if (mode == MODE_VDSO) {
		printf("vdso nofp_vdso_inner main;nofp_vdso;nofp_vdso_outer;"
		       "nofp_vdso_inner\n");
		return;
	}
	printf("recursion nofp_deep_leaf main;nofp_rotate;nofp_deep");
	for (int i = 0; i < RECURSION_DEPTH; i++)
		printf(";nofp_deep_recurse");
	printf(";nofp_deep_leaf\n");
	printf("plt nofplib_leaf main;nofp_rotate;nofp_via_plt;nofplib_entry;"
	       "nofplib_middle;nofplib_inner;nofplib_leaf\n");
	printf("signal nofp_handler_leaf main;nofp_rotate;nofp_sigwork;"
	       "nofp_interrupted;__restore_rt;nofp_handler;nofp_handler_leaf\n");
	printf("alloca nofp_alloca_leaf main;nofp_rotate;nofp_alloca;"
	       "nofp_alloca_outer;nofp_alloca_inner;nofp_alloca_leaf\n");
	printf("thread nofp_thread_leaf nofp_thread_main;nofp_thread_work;"
	       "nofp_thread_step;nofp_thread_leaf\n");
}

int main(int argc, char **argv)
{
	double seconds = 5, load_at = 0, start = now();
	enum mode mode = MODE_DEFAULT;
	int expect = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--expect")) {
			expect = 1;
		} else if (!strcmp(argv[i], "--chains")) {
			mode = MODE_CHAINS;
		} else if (i + 1 < argc && !strcmp(argv[i], "--dlopen")) {
			mode = MODE_DLOPEN;
			load_at = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--vdso")) {
			mode = MODE_VDSO;
		} else if (i + 1 < argc && !strcmp(argv[i], "--seconds")) {
			seconds = atof(argv[++i]);
		} else if (i + 1 < argc && !strcmp(argv[i], "--comm")) {
			prctl(PR_SET_NAME, argv[++i]);
		} else {
			fprintf(stderr,
				"usage: nofp [--seconds S] [--comm NAME] "
				"[--chains | --dlopen S | --vdso] [--expect]\n");
			return 2;
		}
	}
	if (expect) {
		print_expected(mode);
		return 0;
	}
	switch (mode) {
	case MODE_CHAINS:
		nofp_rotate(start + seconds);
		break;
	case MODE_DLOPEN:
		nofp_dlopen(start + load_at, start + seconds);
		break;
	case MODE_VDSO:
		nofp_vdso(start + seconds);
		break;
	default:
		nofp_outer(start + seconds);
	}
	return 0;
}
