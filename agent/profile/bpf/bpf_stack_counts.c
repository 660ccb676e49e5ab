// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_stack_counts.c - counting the stack records of the eBPF profiler
 * (see bpf_stack_counts.h).  The reader thread calls vm_stack_counts_add()
 * for every record as the ring buffer delivers it, a few thousand a second
 * at most, so a record costs one tree search (glibc's tsearch, O(log n)
 * compares of a few hundred bytes) and, when its stacks are new, one
 * allocation of exactly its size: memory follows the distinct stacks and
 * their real depth, not the deepest stack possible.
 */
#include "agent/profile/bpf/bpf_stack_counts.h"

#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

struct vm_stack_node {
	uint64_t weight; /* summed over the identical records */
	uint32_t len; /* bytes of rec below, its weight zeroed */
	uint32_t n; /* how many records (in what would be padding) */
	struct stack_record rec; /* only len bytes of it are allocated */
};

#define NODE_HEAD offsetof(struct vm_stack_node, rec)

static int node_cmp(const void *a, const void *b)
{
	const struct vm_stack_node *x = a, *y = b;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(&x->rec, &y->rec, x->len);
}

void vm_stack_counts_init(struct vm_stack_counts *c, size_t max_bytes)
{
	memset(c, 0, sizeof(*c));
	c->max_bytes = max_bytes;
}

/* The record's size as its frame counts say, 0 when they are too many. */
static size_t record_size(const struct stack_record *r)
{
	if (r->n_user > STACK_MAX_DEPTH || r->n_kernel > STACK_MAX_DEPTH)
		return 0;
	return STACK_RECORD_HEAD +
	       ((size_t)r->n_user + r->n_kernel) * sizeof(r->ips[0]);
}

int vm_stack_counts_add(struct vm_stack_counts *c, const void *data,
			size_t size)
{
	struct vm_stack_node key, *n, **found;
	uint64_t weight;

	c->records++;
	if (size < STACK_RECORD_HEAD || size > sizeof(struct stack_record)) {
		c->malformed++;
		return -EINVAL;
	}
	memset(&key, 0, NODE_HEAD);
	memcpy(&key.rec, data, size);
	if (record_size(&key.rec) != size) {
		c->malformed++;
		return -EINVAL;
	}
	weight = key.rec.weight;
	key.rec.weight = 0;
	key.len = size;

	found = tfind(&key, &c->tree, node_cmp);
	if (found) {
		(*found)->weight += weight;
		if ((*found)->n < UINT32_MAX)
			(*found)->n++;
		return 0;
	}
	if (c->bytes + NODE_HEAD + size > c->max_bytes) {
		c->dropped++;
		return -E2BIG;
	}
	if (vm_grow(c->v, &c->cap, c->n + 1) < 0 ||
	    !(n = malloc(NODE_HEAD + size))) {
		c->dropped++;
		return -ENOMEM;
	}
	memcpy(n, &key, NODE_HEAD + size);
	n->weight = weight;
	n->n = 1;
	if (!tsearch(n, &c->tree, node_cmp)) {
		free(n);
		c->dropped++;
		return -ENOMEM;
	}
	c->v[c->n++] = n;
	c->bytes += NODE_HEAD + size;
	return 0;
}

/*
 * Every distinct record into s: counted by weight (CPU samples), or by
 * records with their summed weight as nanoseconds (off-CPU blocks).
 */
static int to_samples(const struct vm_stack_counts *c, struct vm_samples *s,
		      bool blocks)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct vm_stack_node *node = c->v[i];
		const struct stack_record *r = &node->rec;
		/* __u64 and uint64_t: the same 64 bits, two C types. */
		const uint64_t *ips = (const uint64_t *)r->ips;
		char comm[VM_COMM_LEN] = { 0 };
		struct vm_sample *x;

		memcpy(comm, r->comm, sizeof(comm) - 1);
		if (vm_samples_add(s, r->pid, r->tid, comm,
				   blocks ? node->n : node->weight, ips,
				   r->n_user, ips + r->n_user, r->n_kernel))
			return -ENOMEM;
		x = &s->v[s->n - 1];
		x->wait_event = r->wait_event;
		x->query_id = r->query_id;
		/* A fault's address was replaced by its mapping's kind. */
		x->fault_mapping = (uint8_t)r->fault_addr;
		if (blocks) {
			x->state = VM_STATE_BLOCKED;
			x->value = node->weight;
			x->sched_state = (uint8_t)r->sched_state;
		}
	}
	return 0;
}

int vm_stack_counts_to_samples(const struct vm_stack_counts *c,
			       struct vm_samples *s)
{
	return to_samples(c, s, false);
}

int vm_stack_counts_to_blocks(const struct vm_stack_counts *c,
			      struct vm_samples *s)
{
	return to_samples(c, s, true);
}

static void no_free(void *p)
{
	(void)p;
}

void vm_stack_counts_free(struct vm_stack_counts *c)
{
	tdestroy(c->tree, no_free);
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i]);
	free(c->v);
	memset(c, 0, sizeof(*c));
}
