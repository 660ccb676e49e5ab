// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_premaps.c - the eBPF profiler's stack maps, created on threads of
 * their own (see bpf_premaps.h).
 *
 * The kernel preallocates a stack map and zeroes it: ~8 MiB each for a
 * short profile, most of the time the profiler takes to load, all of it
 * before sampling can start.  libbpf creates maps one after the other;
 * created side by side they take the time of one on a machine with two
 * CPUs.
 */
#include "agent/profile/bpf/bpf_premaps.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

struct premake {
	struct bpf_map *map;
	int fd; /* -1: not created */
	pthread_t thread;
	bool started;
};

static void *create(void *arg)
{
	struct premake *p = arg;

	p->fd = bpf_map_create(bpf_map__type(p->map), bpf_map__name(p->map),
			       bpf_map__key_size(p->map),
			       bpf_map__value_size(p->map),
			       bpf_map__max_entries(p->map), NULL);
	return NULL;
}

void vm_bpf_premake_maps(struct bpf_map *const *maps, size_t n)
{
	struct premake *p = calloc(n, sizeof(*p));

	if (!p)
		return;
	for (size_t i = 0; i < n; i++) {
		p[i].map = maps[i];
		p[i].fd = -1;
		/* This thread makes the first one itself. */
		if (i > 0)
			p[i].started = pthread_create(&p[i].thread, NULL,
						      create, &p[i]) == 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!p[i].started)
			create(&p[i]);
	for (size_t i = 0; i < n; i++) {
		if (p[i].started)
			pthread_join(p[i].thread, NULL);
		/* libbpf keeps a duplicate of the descriptor. */
		if (p[i].fd >= 0) {
			bpf_map__reuse_fd(p[i].map, p[i].fd);
			close(p[i].fd);
		}
	}
	free(p);
}
