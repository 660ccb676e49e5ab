/* SPDX-License-Identifier: Apache-2.0 */
/*
 * datawrite.h - file data into the image: consecutive blocks gathered into
 * vectored direct writes, made by a thread of their own so that the
 * caller never waits for the device.
 */
#ifndef VMTOOLS_IMAGEBUILDER_DATAWRITE_H
#define VMTOOLS_IMAGEBUILDER_DATAWRITE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/error.h"

#define VM_DW_BLOCKS 512u /* at most 2 MiB in one write */
/* Of which copied (not kept by the caller): each block is a page fault. */
#define VM_DW_COPY_BLOCKS 128u
#define VM_DW_IOV 1024 /* UIO_MAXIOV */
#define VM_DW_BATCHES 4 /* gathered or being written at once */

/* One write: gathered, then handed to the writing thread. */
struct vm_dw_batch {
	uint64_t start; /* first block */
	size_t blocks;
	struct iovec iov[VM_DW_IOV];
	int n_iov;
	char *copy; /* VM_DW_COPY_BLOCKS blocks for data that is not kept */
	size_t copied; /* blocks of it in use */
	size_t mark; /* the caller's mark when it was handed over */
};

struct vm_datawrite {
	int fd;
	size_t block_size;
	struct vm_dw_batch batches[VM_DW_BATCHES];
	int filling; /* the batch being gathered */
	/* Handed over, not yet written: those before `filling`.  Changed
	 * under the lock, atomically: vm_dw_idle reads it without. */
	int queued;
	/*
	 * Set by the caller between writes: `written` is told it once all
	 * the data given before it was set is written.
	 */
	size_t mark;
	size_t handed_mark; /* the mark of the last batch handed over */
	/* Called by the writing thread: data before `mark` may be reused. */
	void (*written)(void *ctx, size_t mark);
	void *ctx;
	const char *name; /* the image, as messages call it: path, or set */
	pthread_t thread;
	int started, stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int failed; /* a write failed: `error` says how */
	struct vm_error error;
};

/* Open `path` for writing data, with direct I/O where the filesystem has it. */
int vm_dw_open(struct vm_datawrite *dw, const char *path, size_t block_size,
	       struct vm_error *err);

/*
 * Write `count` blocks of buf at block `pblk`.  With `kept`, buf stays
 * valid and unchanged until `written` is told a mark set after this call,
 * and is written from where it is, else it is copied.  Writes at
 * consecutive blocks are gathered; anything else hands over what was
 * gathered first.  An error of an earlier write may be reported here.
 */
int vm_dw_write(struct vm_datawrite *dw, uint64_t pblk, size_t count,
		const char *buf, int kept, struct vm_error *err);

/* Whether the writing thread has nothing to write: the device idles. */
int vm_dw_idle(struct vm_datawrite *dw);

/* Hand over what is gathered to be written, without waiting for it. */
int vm_dw_flush(struct vm_datawrite *dw, struct vm_error *err);

/* Hand over what is gathered and wait until everything is written. */
int vm_dw_sync(struct vm_datawrite *dw, struct vm_error *err);

/* Wait for the writes in flight and close; what is gathered is dropped. */
void vm_dw_close(struct vm_datawrite *dw);

#endif
