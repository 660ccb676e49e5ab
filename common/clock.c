// SPDX-License-Identifier: Apache-2.0
/*
 * clock.c - reading a clock in nanoseconds (clock.h).
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
