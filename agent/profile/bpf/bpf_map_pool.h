/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_map_pool.h - the programs' preallocated hash maps made once and
 * kept between profiles (bpf_map_pool.c), in what the backend keeps for
 * the agent's life (bpf_kept.h): creating one costs the kernel
 * milliseconds (it allocates and links every entry up front), emptying
 * one that held a profile's few hundred entries costs microseconds.
 *
 * Before its programs are loaded, a session borrows, for each map of
 * VM_BPF_POOLED_MAPS its objects have, a kept map of the same shape
 * (type, key and value sizes, entries, flags) that no other session
 * holds: the continuous profile and an on-demand one of the same shape
 * each hold one.  When the session ends and its programs are gone, each
 * of those maps, borrowed or made by its load, is emptied and kept for
 * the next; at most VM_BPF_POOL_PER_SHAPE of one shape and VM_BPF_POOL_MAX
 * in all, the rest closed.
 */
#ifndef VMTOOLS_AGENT_BPF_MAP_POOL_H
#define VMTOOLS_AGENT_BPF_MAP_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bpf/libbpf.h>

/* Sessions that may run at once: the continuous one and an on-demand. */
#define VM_BPF_POOL_PER_SHAPE 2
/*
 * Maps kept in all (requests of other lengths and frequencies size some
 * maps otherwise): past it, the one used least recently is let go.
 */
#define VM_BPF_POOL_MAX 32

struct vm_bpf_pooled {
	char name[32];
	uint32_t type, key, value, entries, flags;
	int fd;
	bool lent;
};

struct vm_bpf_map_pool {
	pthread_mutex_t lock;
	struct vm_bpf_pooled *v;
	size_t n, cap;
	uint64_t reused; /* maps lent since start */
};

void vm_bpf_map_pool_init(struct vm_bpf_map_pool *p);
/* Every kept map closed. */
void vm_bpf_map_pool_destroy(struct vm_bpf_map_pool *p);
/* Every kept map no session holds closed (no profile runs). */
void vm_bpf_map_pool_let_go(struct vm_bpf_map_pool *p);

/*
 * Before obj is loaded: each of its pooled maps given a kept map of its
 * shape no one holds, if there is one (bpf_map__reuse_fd).
 */
void vm_bpf_map_pool_lend(struct vm_bpf_map_pool *p, struct bpf_object *obj);

/*
 * After obj's programs are detached, before it is closed: each of its
 * pooled maps emptied and kept (the one lent, or the one its load made).
 */
void vm_bpf_map_pool_take_back(struct vm_bpf_map_pool *p,
			       struct bpf_object *obj);

/* Maps kept now, and lent since start. */
void vm_bpf_map_pool_stats(struct vm_bpf_map_pool *p, uint64_t *kept,
			   uint64_t *reused);

#endif
