// SPDX-License-Identifier: Apache-2.0
/*
 * unwind-build.c - what building a binary's unwind table costs, cold and
 * from the agent's cache (agent/unwind/unwind_cache.c), for
 * bench/unwind.sh: prints "rows cold_ms warm_ms bytes" for FILE.
 *
 * usage: unwind-build FILE
 */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "agent/unwind/unwind_cache.h"

static double ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	const struct vm_unwind_table *cold, *warm;
	struct vm_binaries *home = vm_binaries_new(NULL);
	struct vm_iopool *pool = vm_iopool_new();
	struct vm_binary *held_cold, *held_warm;
	double t0, t1, t2;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: unwind-build FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !home || !pool) {
		perror(argv[1]);
		return 1;
	}
	t0 = ms();
	cold = vm_unwind_cache_get(pool, home, fd, argv[1], &held_cold, NULL);
	t1 = ms();
	warm = vm_unwind_cache_get(pool, home, fd, argv[1], &held_warm, NULL);
	t2 = ms();
	close(fd);
	if (!cold || cold != warm) {
		fprintf(stderr, "unwind-build: %s: no unwind table\n", argv[1]);
		return 1;
	}
	printf("%zu %.2f %.3f %zu\n", cold->n, t1 - t0, t2 - t1,
	       vm_unwind_table_bytes(cold));
	vm_binaries_put(home, held_cold);
	vm_binaries_put(home, held_warm);
	vm_binaries_free(home);
	vm_iopool_free(pool);
	return 0;
}
