/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prefetch.h - reads and hashes the files of the image in a second thread,
 * in the order the writer needs them, so opening, reading and hashing
 * overlap with writing the image.  Memory in flight is bounded.
 */
#ifndef VMTOOLS_IMAGEBUILDER_PREFETCH_H
#define VMTOOLS_IMAGEBUILDER_PREFETCH_H

#include <stddef.h>

#include "imagebuilder/tree.h"

/*
 * Files larger than this (and sparse ones) are streamed by the writer: a
 * kernel tree has a handful (the kernel, perf, the largest module), and a
 * larger ring would cost a page fault for each 4 KiB of it.
 */
#define VM_PREFETCH_MAX_FILE (4u << 20)
/* Bytes read ahead at most. */
#define VM_PREFETCH_MAX_AHEAD (4u << 20)

struct vm_prefetch;

/*
 * Open n->source (`name` relative to dfd) for reading: the fd, or a
 * negative errno with err saying what changed.  With `check`, also check
 * it is still the regular file of n->size bytes the walk saw; a caller
 * that asks for a byte more than that and refuses a short read needs no
 * check, and saves a system call per file.
 */
int vm_source_open(const struct vm_node *n, int dfd, const char *name,
		   int check, struct vm_error *err);

/* Whether the writer should take n's content from the prefetcher. */
int vm_prefetch_wanted(const struct vm_node *n);

/* Start reading `nodes` (each vm_prefetch_wanted) in this order. */
int vm_prefetch_start(struct vm_node **nodes, size_t n,
		      struct vm_prefetch **out);

/*
 * The content of the next node, which must be `n`: *data (size rounded up
 * to 4 KiB with zeros, 4 KiB aligned), valid until vm_prefetch_release or
 * the stop; and n->sha256 set (by a reader thread, before it is taken).
 * The errors are those of reading the file (vanished, changed, ...).
 */
int vm_prefetch_take(struct vm_prefetch *p, struct vm_node *n,
		     const char **data, struct vm_error *err);

/* Whether the next take has its file read already (will not wait). */
int vm_prefetch_ready(struct vm_prefetch *p);

/*
 * Whether the next take's file has room to be read in once the first
 * `released` files taken are released: if not, waiting for it would wait
 * for the caller, who must hand over what it holds first.
 */
int vm_prefetch_fits(const struct vm_prefetch *p, size_t released);

/* How many files were taken so far. */
size_t vm_prefetch_taken(const struct vm_prefetch *p);

/*
 * The first n files taken are written: their memory may be read into
 * again.  The readers wait for this once they are a buffer's worth ahead
 * (see vm_prefetch_fits).  Any thread may call it.
 */
void vm_prefetch_release(struct vm_prefetch *p, size_t n);

/* Stop the thread and free what was not taken. */
void vm_prefetch_stop(struct vm_prefetch *p);

#endif
