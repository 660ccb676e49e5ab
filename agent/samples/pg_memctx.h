/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pg_memctx.h - a PostgreSQL process's memory-context tree, read from
 * outside it (pg_memctx.c: the walk, pure over a callback that reads the
 * target's memory; pg_memctx_read.c: that callback with
 * process_vm_readv, run on the I/O pool with a deadline).
 *
 * Every backend keeps its palloc memory in a tree of MemoryContextData
 * nodes rooted at the exported global TopMemoryContext; each node says
 * how many bytes it took from malloc for itself (mem_allocated, children
 * not included), its name, an optional ident, and its parent, first
 * child, previous and next sibling.  The walk reads that tree while the
 * backend runs on, so it trusts nothing it reads: a pointer is followed
 * only when it lies in user space and is aligned, a node is kept only
 * when its type is one of its major version's context tags and its parent
 * and previous sibling point back where it was reached from, an address
 * seen twice is a cycle and is cut, and the walk is bounded in nodes,
 * depth and bytes of names.  A node that fails a check means the tree
 * changed under the walk (or is not a tree): it is walked again, and after
 * the last try the nodes that passed are kept and the result is said to
 * be partial, never completed by a guess.
 */
#ifndef VMTOOLS_AGENT_PG_MEMCTX_H
#define VMTOOLS_AGENT_PG_MEMCTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The walk's bounds; a limits field left 0 takes these. */
#define VM_MEMCTX_MAX_NODES 200000
#define VM_MEMCTX_MAX_DEPTH 200
/* Bytes kept of one name or ident (PostgreSQL's log keeps 100 of an ident). */
#define VM_MEMCTX_NAME_MAX 128
/* Bytes of all names and idents of one tree, escaped. */
#define VM_MEMCTX_NAME_BYTES ((size_t)8 << 20)
/* Walks of a tree that changed under the walk before it is called partial. */
#define VM_MEMCTX_TRIES 3
/* How many reads go to the reader in one call (process_vm_readv's IOV_MAX). */
#define VM_MEMCTX_BATCH 1024

/* An index that is none: the root's parent, a node without an ident. */
#define VM_MEMCTX_NONE UINT32_MAX

enum vm_memctx_type {
	VM_MEMCTX_ASET,
	VM_MEMCTX_GENERATION,
	VM_MEMCTX_SLAB,
	VM_MEMCTX_BUMP,
	VM_MEMCTX_TYPES
};

/*
 * One major version's NodeTag of each context type (0: the version has
 * no such type), read off each real build's *ContextCreate calls by
 * tests/integration/37-pg-memctx-tags.sh.
 */
struct vm_memctx_tags {
	unsigned major;
	uint32_t tag[VM_MEMCTX_TYPES];
};

/* The tags of major version major; NULL when it has no table. */
const struct vm_memctx_tags *vm_memctx_tags(unsigned major);
/* "AllocSet", "Generation", "Slab", "Bump". */
const char *vm_memctx_type_name(enum vm_memctx_type t);

/*
 * One read of the target's memory: len bytes at addr into buf; the reader
 * sets got to the bytes it could read (less than len: the rest is not
 * mapped, or not readable).
 */
struct vm_memctx_iov {
	uint64_t addr;
	void *buf;
	size_t len;
	size_t got;
};

/*
 * Reads n iovs, each as far as it can (got).  0, or a negative errno that
 * ends the walk (the process is gone, may not be read); -ETIME: the time
 * the reader allows the walk is up, and the walk ends partial with what
 * passed so far.
 */
typedef int (*vm_memctx_read_fn)(void *arg, struct vm_memctx_iov *v, size_t n);

struct vm_memctx_limits {
	size_t max_nodes, max_depth, name_bytes;
	unsigned tries;
};

/* One context, as it was read. */
struct vm_memctx_node {
	uint64_t addr;
	uint64_t mem_allocated;
	uint32_t parent; /* index in the tree; VM_MEMCTX_NONE for the root */
	uint32_t depth; /* the root's is 0 */
	uint32_t name, ident; /* offsets into names; VM_MEMCTX_NONE: none */
	uint8_t type; /* enum vm_memctx_type */
};

/* A walk's result.  Parents come before their children in v. */
struct vm_memctx_tree {
	struct vm_memctx_node *v;
	size_t n, cap;
	char *names; /* NUL-terminated strings, escaped (VM_ESCAPE_TEXT) */
	size_t names_len, names_cap;
	uint64_t total; /* the sum of mem_allocated over v */
	unsigned tries; /* walks made */
	/*
	 * The tree failed a check on every try: v holds the nodes that
	 * passed on the last one, and why says what failed.
	 */
	bool partial;
	bool time_up; /* partial because the reader's time ran out */
	/* What the bounds cut on the last try. */
	uint64_t cut_nodes; /* nodes past max_nodes, not followed */
	uint64_t cut_depth; /* subtrees deeper than max_depth */
	uint64_t cut_names; /* names and idents cut short or left out */
	uint64_t bad; /* pointers or nodes refused on the last try */
	char why[192];
};

/*
 * Walk the tree whose root the pointer at top_ptr (the address of
 * TopMemoryContext in the target) points to, reading through read(arg),
 * node tags from tags, bounded by lim (NULL: the defaults), into out
 * (zeroed first, freed with vm_memctx_tree_free whatever is returned).
 * 0, partial or not; -ENOENT when TopMemoryContext is NULL (the process
 * has not made it yet); -EFAULT when the pointer or the root itself could
 * not be read or failed its checks on every try (why says which);
 * -ENOMEM; or the reader's error.
 */
int vm_memctx_walk(const struct vm_memctx_tags *tags, uint64_t top_ptr,
		   vm_memctx_read_fn read, void *arg,
		   const struct vm_memctx_limits *lim,
		   struct vm_memctx_tree *out);

void vm_memctx_tree_free(struct vm_memctx_tree *t);

/* The string at offset off of t's names; "" for VM_MEMCTX_NONE. */
const char *vm_memctx_str(const struct vm_memctx_tree *t, uint32_t off);

/*
 * MemoryContextData's layout on LP64, the same in 15 to 18: the offsets
 * the walk reads, and the bytes of one node it reads.
 */
#define VM_MEMCTX_OFF_TYPE 0
#define VM_MEMCTX_OFF_MEM_ALLOCATED 8
#define VM_MEMCTX_OFF_PARENT 24
#define VM_MEMCTX_OFF_FIRSTCHILD 32
#define VM_MEMCTX_OFF_PREVCHILD 40
#define VM_MEMCTX_OFF_NEXTCHILD 48
#define VM_MEMCTX_OFF_NAME 56
#define VM_MEMCTX_OFF_IDENT 64
#define VM_MEMCTX_NODE_SIZE 80

#endif
