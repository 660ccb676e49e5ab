// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_read.c - reading the eBPF profiler's maps after sampling (see
 * bpf_read.h).  It runs after the profile's window, so every system call
 * here is wall time the caller waits for: the counts map comes in one
 * BPF_MAP_LOOKUP_BATCH instead of a GET_NEXT_KEY and a LOOKUP_ELEM per
 * entry, and a stack shared by several counts (other threads, the other
 * half of the stack differing) is looked up once.  Stack maps have no
 * batch operation.
 */
#include "agent/profile/bpf/bpf_read.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "common/array.h"

/* The kernel's ENOTSUPP (not in user space's errno.h): no such operation. */
#define KERNEL_ENOTSUPP 524

/* The way kernels before 5.6 (no batch operations) are read. */
static int read_counts_by_key(int fd, struct vm_bpf_count *v, size_t cap,
			      size_t *n)
{
	struct profile_key key, next, *prev = NULL;

	*n = 0;
	while (*n < cap && bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v[*n].count))
			continue; /* deleted meanwhile */
		v[(*n)++].key = key;
	}
	return 0;
}

int vm_bpf_read_counts(int fd, uint32_t max_entries, struct vm_bpf_count **out,
		       size_t *n)
{
	size_t cap = max_entries ? max_entries : 1, got = 0;
	struct profile_key *keys = NULL;
	struct vm_bpf_count *v = NULL;
	uint64_t *values = NULL;
	uint32_t batch = 0;
	bool first = true;
	int r = 0;

	*out = NULL;
	*n = 0;
	v = calloc(cap, sizeof(*v));
	keys = calloc(cap, sizeof(*keys));
	values = calloc(cap, sizeof(*values));
	if (!v || !keys || !values) {
		r = -ENOMEM;
		goto out;
	}
	/*
	 * The hash map's batch token is a bucket number.  Room for every
	 * entry: one call, unless entries are added meanwhile (not here:
	 * sampling has stopped).
	 */
	while (got < cap) {
		__u32 count = cap - got;

		r = bpf_map_lookup_batch(fd, first ? NULL : &batch, &batch,
					 keys + got, values + got, &count,
					 NULL);
		first = false;
		if (r < 0 && r != -ENOENT) {
			if (got == 0 &&
			    (r == -EINVAL || r == -KERNEL_ENOTSUPP ||
			     r == -EOPNOTSUPP)) {
				r = read_counts_by_key(fd, v, cap, &got);
				goto done;
			}
			goto out;
		}
		got += count;
		if (r == -ENOENT)
			break; /* the last batch */
	}
	for (size_t i = 0; i < got; i++) {
		v[i].key = keys[i];
		v[i].count = values[i];
	}
done:
	r = 0;
	*out = v;
	*n = got;
	v = NULL;
out:
	free(v);
	free(keys);
	free(values);
	return r;
}

int vm_bpf_read_stack(void *ctx, int32_t id, uint64_t *ips)
{
	int fd = (int)(intptr_t)ctx;

	return bpf_map_lookup_elem(fd, &id, ips) ? -errno : 0;
}

int vm_stack_cache_init(struct vm_stack_cache *c, uint32_t n_ids,
			vm_stack_read_fn read, void *ctx)
{
	memset(c, 0, sizeof(*c));
	c->read = read;
	c->ctx = ctx;
	c->n_ids = n_ids;
	c->slot = calloc(n_ids ? n_ids : 1, sizeof(*c->slot));
	return c->slot ? 0 : -ENOMEM;
}

int vm_stack_cache_get(struct vm_stack_cache *c, int32_t id,
		       const uint64_t **ips, uint32_t *n)
{
	uint32_t depth = 0;
	uint64_t *dst;

	*ips = NULL;
	*n = 0;
	if (id < 0 || (uint32_t)id >= c->n_ids)
		return 0;
	if (!c->slot[id]) {
		if (vm_grow(c->ips, &c->cap_ips,
			    c->n_ips + PROFILE_MAX_STACK_DEPTH) ||
		    vm_grow(c->where, &c->cap_where, c->n_where + 1))
			return -ENOMEM;
		dst = c->ips + c->n_ips;
		memset(dst, 0, PROFILE_MAX_STACK_DEPTH * sizeof(*dst));
		c->reads++;
		/* An id that cannot be read is remembered as empty. */
		if (c->read(c->ctx, id, dst) == 0)
			while (depth < PROFILE_MAX_STACK_DEPTH && dst[depth])
				depth++;
		c->where[c->n_where].off = c->n_ips;
		c->where[c->n_where].n = depth;
		c->n_ips += depth;
		c->slot[id] = ++c->n_where;
	}
	*n = c->where[c->slot[id] - 1].n;
	*ips = c->ips + c->where[c->slot[id] - 1].off;
	return 0;
}

void vm_stack_cache_free(struct vm_stack_cache *c)
{
	free(c->slot);
	free(c->where);
	free(c->ips);
	memset(c, 0, sizeof(*c));
}
