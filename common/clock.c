// SPDX-License-Identifier: Apache-2.0
/*
 * clock.c - reading a clock in nanoseconds, and condition variables that
 * wait on the monotonic one (clock.h).
 */
#include "common/clock.h"

uint64_t vm_clock_ns(clockid_t clk)
{
	struct timespec ts;

	/* Fails only for a clock id the kernel does not know. */
	if (clock_gettime(clk, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void vm_cond_init_monotonic(pthread_cond_t *c)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
}

int vm_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m,
		       uint64_t deadline_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline_ns / 1000000000ULL),
			       .tv_nsec = (long)(deadline_ns % 1000000000ULL) };

	return pthread_cond_timedwait(c, m, &ts);
}

bool vm_cond_sleep_until(pthread_cond_t *c, pthread_mutex_t *m,
			 const bool *stop, uint64_t deadline_ns)
{
	bool stopped;

	pthread_mutex_lock(m);
	while (!*stop && vm_clock_ns(CLOCK_MONOTONIC) < deadline_ns)
		vm_cond_wait_until(c, m, deadline_ns);
	stopped = *stop;
	pthread_mutex_unlock(m);
	return stopped;
}

void vm_cond_raise(pthread_cond_t *c, pthread_mutex_t *m, bool *stop)
{
	pthread_mutex_lock(m);
	*stop = true;
	pthread_cond_broadcast(c);
	pthread_mutex_unlock(m);
}
