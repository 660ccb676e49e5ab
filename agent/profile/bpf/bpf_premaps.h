/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_premaps.h - creating the eBPF profiler's largest maps side by side,
 * before libbpf loads the object (bpf_premaps.c).
 */
#ifndef VMTOOLS_AGENT_BPF_PREMAPS_H
#define VMTOOLS_AGENT_BPF_PREMAPS_H

#include <stddef.h>

struct bpf_map;

/*
 * Create the n maps of an opened, not yet loaded object at once, one per
 * thread, and hand them to libbpf (bpf_map__reuse_fd), which then skips
 * creating them.  A map that could not be created this way is left to
 * libbpf, which creates it as usual (and reports what the kernel says):
 * this only saves time, so it cannot fail.
 */
void vm_bpf_premake_maps(struct bpf_map *const *maps, size_t n);

#endif
