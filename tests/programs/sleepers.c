// SPDX-License-Identifier: Apache-2.0
/*
 * sleepers.c - a process of many threads that all sleep (in pause()) until
 * it is killed: what an off-CPU profile must end on time for however many
 * threads its targets have (tests/integration/56-hostile-process.sh).
 * Prints "ready" once every thread is started.
 *
 * usage: sleepers --threads N [--comm NAME]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	long threads = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--threads")) {
			threads = strtol(argv[i + 1], NULL, 10);
		} else if (!strcmp(argv[i], "--comm")) {
			prctl(PR_SET_NAME, argv[i + 1]);
		} else {
			fprintf(stderr, "sleepers: unknown option %s\n",
				argv[i]);
			return 2;
		}
	}
	if (threads <= 0) {
		fprintf(stderr, "usage: sleepers --threads N [--comm NAME]\n");
		return 2;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	for (long i = 0; i < threads; i++) {
		pthread_t t;
		int r = pthread_create(&t, &attr, sleeper, NULL);

		if (r) {
			fprintf(stderr, "sleepers: thread %ld: %s\n", i,
				strerror(r));
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
