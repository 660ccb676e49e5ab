/* SPDX-License-Identifier: Apache-2.0 */
/*
 * satmath.h - sums and products of counts that stop at the largest value
 * instead of wrapping: sample counts and times merged from files the agent
 * did not write (a history directory) may be anything, and a total that
 * wraps would print negative CPU time or abort under UBSan.
 */
#ifndef VMTOOLS_COMMON_SATMATH_H
#define VMTOOLS_COMMON_SATMATH_H

#include <stdint.h>

static inline uint64_t vm_sat_add_u64(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static inline uint64_t vm_sat_mul_u64(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* a + b, at most INT64_MAX and at least INT64_MIN (a difference's). */
static inline int64_t vm_sat_add_i64(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b < 0 ? INT64_MIN : INT64_MAX;
	return r;
}

/* a * b for a, b >= 0, at most INT64_MAX. */
static inline int64_t vm_sat_mul_i64(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

#endif
