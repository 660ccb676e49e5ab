/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perf_locate.h - which perf binary the perf backend runs (perf_locate.c).
 *
 * In order: the agent's own --perf PATH (fixed at start-up, never taken from
 * a request), the "perf" tool of the tools image mounted at mountpoint (its
 * launcher, as the image manifest names it), then the first perf on PATH.
 */
#ifndef VMTOOLS_AGENT_PERF_LOCATE_H
#define VMTOOLS_AGENT_PERF_LOCATE_H

#include "common/error.h"

#define VM_PERF_DEFAULT_MOUNTPOINT "/run/vm-tools"

/*
 * *out gets a malloc'd absolute path to an executable.  -ENOENT when there
 * is none (err lists where we looked), or when override is given but is not
 * an executable file (then nothing else is tried: an explicit choice that
 * does not work must not silently become another binary).
 */
int vm_perf_locate(const char *override, const char *mountpoint, char **out,
		   struct vm_error *err);

#endif
