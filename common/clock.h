/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock.h - the time in nanoseconds: CLOCK_MONOTONIC for how long something
 * took or how long is left (it never jumps), CLOCK_REALTIME for when
 * something happened (the time a person or a profile's timestamp reads).
 */
#ifndef VMTOOLS_COMMON_CLOCK_H
#define VMTOOLS_COMMON_CLOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

uint64_t vm_clock_ns(clockid_t clk);

/*
 * A condition variable whose timed waits take CLOCK_MONOTONIC deadlines
 * (vm_clock_ns(CLOCK_MONOTONIC)), so that setting the clock does not
 * stretch or cut a wait.
 */
void vm_cond_init_monotonic(pthread_cond_t *c);

/*
 * Wait on c (made by vm_cond_init_monotonic(), m locked) until it is
 * signalled or the deadline (vm_clock_ns(CLOCK_MONOTONIC)) has come:
 * pthread_cond_timedwait()'s return, ETIMEDOUT at the deadline.
 */
int vm_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m,
		       uint64_t deadline_ns);

/*
 * A thread that works on a beat: sleep on c (m not held) until *stop is
 * raised (vm_cond_raise) or the deadline has come; whether it was raised.
 */
bool vm_cond_sleep_until(pthread_cond_t *c, pthread_mutex_t *m,
			 const bool *stop, uint64_t deadline_ns);
/* Raise *stop under m and wake every thread sleeping on c. */
void vm_cond_raise(pthread_cond_t *c, pthread_mutex_t *m, bool *stop);

#endif
