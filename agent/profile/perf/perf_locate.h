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
 * is none; err then names every place we looked.  An override that is not
 * an executable file, or a bare name such as "perf", falls through to the
 * manifest and PATH, in that order (the brief's order of preference; the
 * engine's callers pass a default path that may not exist).
 */
int vm_perf_locate(const char *override, const char *mountpoint, char **out,
		   struct vm_error *err);

#endif
