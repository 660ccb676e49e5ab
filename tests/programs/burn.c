// SPDX-License-Identifier: Apache-2.0
/*
 * burn.c - a test workload with a known CPU profile.
 *
 * Each of --threads threads repeatedly spends --ratio A:B milliseconds of
 * its own CPU time in burn_hot_a() and burn_hot_b() (A ms in the first, B ms
 * in the second), for --seconds of wall time.  Measuring thread CPU time,
 * not wall time, keeps the ratio exact even when the machine is loaded, so
 * a profiler's output can be checked against it.  Built with frame pointers
 * and without inlining so every profiler sees the two functions.
 *
 * usage: burn [--threads N] [--seconds S] [--ratio A:B] [--comm NAME]
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

static unsigned ms_a = 3, ms_b = 1;
static double seconds = 5;
static volatile unsigned long sink;

static double now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void spin_until(double cpu_deadline)
{
	while (now(CLOCK_THREAD_CPUTIME_ID) < cpu_deadline)
		for (int i = 0; i < 1000; i++)
			sink += i;
}

__attribute__((noinline)) void burn_hot_a(double ms)
{
	spin_until(now(CLOCK_THREAD_CPUTIME_ID) + ms / 1000);
}

__attribute__((noinline)) void burn_hot_b(double ms)
{
	spin_until(now(CLOCK_THREAD_CPUTIME_ID) + ms / 1000);
}

static void *worker(void *arg)
{
	double end = now(CLOCK_MONOTONIC) + seconds;

	(void)arg;
	while (now(CLOCK_MONOTONIC) < end) {
		burn_hot_a(ms_a);
		burn_hot_b(ms_b);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned threads = 1;
	pthread_t tid[64];

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--threads"))
			threads = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--ratio"))
			sscanf(argv[i + 1], "%u:%u", &ms_a, &ms_b);
		else if (!strcmp(argv[i], "--comm"))
			prctl(PR_SET_NAME, argv[i + 1], 0, 0, 0);
		else {
			fprintf(stderr, "burn: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (threads < 1 || threads > 64) {
		fprintf(stderr, "burn: --threads must be 1..64\n");
		return 2;
	}
	for (unsigned i = 0; i < threads; i++)
		if (pthread_create(&tid[i], NULL, worker, NULL) != 0) {
			perror("burn: pthread_create");
			return 1;
		}
	for (unsigned i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	return 0;
}
