/* SPDX-License-Identifier: Apache-2.0 */
/*
 * vdso.h - the vDSO, the small shared object the kernel maps into every
 * process as `[vdso]` (vdso.c): no file holds it, but every 64-bit
 * process on one kernel maps the same image, so the agent's own, found
 * in its memory, stands for every target's.  Its symbols name the frames
 * in it (symcache.c); its unwind table, built once from it, walks them
 * with both backends (agent/profile/bpf/bpf_unwind.c,
 * agent/profile/perf/perfdata_unwind.c) instead of its frame pointer,
 * which is not yet set up at a function's first instruction nor still
 * at its last.
 */
#ifndef VMTOOLS_AGENT_VDSO_H
#define VMTOOLS_AGENT_VDSO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/unwind/unwind_table.h"

/* Whether path, as a maps line gives it, is the vDSO's. */
bool vm_vdso_path(const char *path);

/*
 * The agent's vDSO: its start in our memory and its size (the whole
 * mapping), found once; false when there is none.
 */
bool vm_vdso_image(const void **image, size_t *size);

/*
 * The unwind table of the vDSO a process maps from start to end (its
 * [vdso] line; the image starts there, at link-time address 0 plus
 * whatever its segments say), built once from the agent's own and kept
 * for the agent's life, never released: NULL when that mapping is not
 * the size of ours (not the same image) or ours has no table.
 */
const struct vm_unwind_table *vm_vdso_unwind_table(uint64_t start,
						   uint64_t end);

#endif
