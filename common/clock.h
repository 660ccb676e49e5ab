/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock.h - the time in nanoseconds: CLOCK_MONOTONIC for how long something
 * took or how long is left (it never jumps), CLOCK_REALTIME for when
 * something happened (the time a person or a profile's timestamp reads).
 */
#ifndef VMTOOLS_COMMON_CLOCK_H
#define VMTOOLS_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

uint64_t vm_clock_ns(clockid_t clk);

#endif
