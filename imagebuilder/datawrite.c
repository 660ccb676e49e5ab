// SPDX-License-Identifier: Apache-2.0
/*
 * datawrite.c - file data into the image: consecutive blocks gathered into
 * vectored direct writes, made by a thread of their own.
 *
 * Consecutive files get consecutive blocks, so their data goes out in one
 * pwritev of up to 2 MiB instead of a write per file.  Data the caller
 * keeps (the read-ahead ring) is written from where it is; only the rest
 * is copied.  (Copying it all into one buffer would add a pass over every
 * byte of file data on the main thread.)  A direct write waits for the
 * device, so the writes are made by a thread that does nothing else: the
 * caller gathers the next batch while earlier ones are written, and hears
 * through `written` (called by that thread, in order) when the memory of
 * a batch may be reused.  The image's metadata goes through libext2fs's io
 * channel; the blocks written here are disjoint from it.
 */
#include "imagebuilder/datawrite.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALIGN 4096u

static void batch_reset(struct vm_dw_batch *b)
{
	b->blocks = 0;
	b->n_iov = 0;
	b->copied = 0;
}

static int write_batch(struct vm_datawrite *dw, struct vm_dw_batch *b,
		       struct vm_error *err)
{
	struct iovec *iov = b->iov;
	int n = b->n_iov;
	off_t off = (off_t)(b->start * dw->block_size);

	while (n > 0) {
		ssize_t r = pwritev(dw->fd, iov, n, off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return vm_error_errno(err, r < 0 ? errno : EIO,
					      "cannot write to the image %s",
					      dw->name);
		off += r;
		while (n > 0 && (size_t)r >= iov->iov_len) {
			r -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + r;
			iov->iov_len -= (size_t)r;
		}
	}
	return 0;
}

/* The oldest batch handed over; under the lock, with dw->queued > 0. */
static struct vm_dw_batch *oldest(struct vm_datawrite *dw)
{
	return &dw->batches[(dw->filling - dw->queued + VM_DW_BATCHES) %
			    VM_DW_BATCHES];
}

/*
 * The writing thread: the batches in the order handed over.  After a
 * failure the rest are not written, but still reported as done, so that
 * nobody waits for memory that would never be given back; the caller
 * hears of the failure at its next call.
 */
static void *writing(void *arg)
{
	struct vm_datawrite *dw = arg;

	pthread_mutex_lock(&dw->lock);
	for (;;) {
		struct vm_error err = { 0 };
		struct vm_dw_batch *b;
		int failed, r = 0;

		while (!dw->queued && !dw->stop)
			pthread_cond_wait(&dw->cond, &dw->lock);
		if (!dw->queued)
			break;
		b = oldest(dw);
		failed = dw->failed;
		pthread_mutex_unlock(&dw->lock);
		if (!failed)
			r = write_batch(dw, b, &err);
		if (dw->written)
			dw->written(dw->ctx, b->mark);
		pthread_mutex_lock(&dw->lock);
		if (r < 0 && !dw->failed) {
			dw->error = err;
			__atomic_store_n(&dw->failed, 1, __ATOMIC_RELEASE);
		}
		batch_reset(b);
		__atomic_sub_fetch(&dw->queued, 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&dw->cond);
	}
	pthread_mutex_unlock(&dw->lock);
	return NULL;
}

int vm_dw_open(struct vm_datawrite *dw, const char *path, size_t block_size,
	       struct vm_error *err)
{
	memset(dw, 0, sizeof(*dw));
	dw->name = path;
	dw->block_size = block_size;
	dw->fd = open(path, O_WRONLY | O_CLOEXEC | O_DIRECT);
	if (dw->fd < 0 && errno == EINVAL) /* tmpfs and the like */
		dw->fd = open(path, O_WRONLY | O_CLOEXEC);
	if (dw->fd < 0)
		return vm_error_errno(err, errno, "cannot open %s", path);
	/* Untouched until used: memory costs only where data is copied. */
	for (int i = 0; i < VM_DW_BATCHES; i++) {
		dw->batches[i].copy = aligned_alloc(
			ALIGN, (size_t)VM_DW_COPY_BLOCKS * block_size);
		if (!dw->batches[i].copy) {
			vm_dw_close(dw);
			return vm_error_set(err, ENOMEM, "out of memory");
		}
	}
	pthread_mutex_init(&dw->lock, NULL);
	pthread_cond_init(&dw->cond, NULL);
	if (pthread_create(&dw->thread, NULL, writing, dw)) {
		pthread_mutex_destroy(&dw->lock);
		pthread_cond_destroy(&dw->cond);
		vm_dw_close(dw);
		return vm_error_set(err, EAGAIN,
				    "cannot start a thread to write %s", path);
	}
	dw->started = 1;
	return 0;
}

/* The failure of an earlier write, if there was one. */
static int failure(struct vm_datawrite *dw, struct vm_error *err)
{
	if (!__atomic_load_n(&dw->failed, __ATOMIC_ACQUIRE))
		return 0;
	*err = dw->error; /* written once, before `failed` */
	return -(err->code ? err->code : EIO);
}

/* Hand the batch being gathered to the writing thread, marked `mark`. */
static int hand_over(struct vm_datawrite *dw, size_t mark, struct vm_error *err)
{
	if (!dw->batches[dw->filling].blocks)
		return failure(dw, err);
	pthread_mutex_lock(&dw->lock);
	dw->batches[dw->filling].mark = mark;
	dw->handed_mark = mark;
	dw->filling = (dw->filling + 1) % VM_DW_BATCHES;
	__atomic_add_fetch(&dw->queued, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&dw->cond);
	/* The next batch to gather must be written and free. */
	while (dw->queued >= VM_DW_BATCHES)
		pthread_cond_wait(&dw->cond, &dw->lock);
	pthread_mutex_unlock(&dw->lock);
	return failure(dw, err);
}

int vm_dw_idle(struct vm_datawrite *dw)
{
	return !__atomic_load_n(&dw->queued, __ATOMIC_ACQUIRE);
}

int vm_dw_flush(struct vm_datawrite *dw, struct vm_error *err)
{
	return hand_over(dw, dw->mark, err);
}

int vm_dw_sync(struct vm_datawrite *dw, struct vm_error *err)
{
	int r = vm_dw_flush(dw, err);

	if (r < 0)
		return r;
	pthread_mutex_lock(&dw->lock);
	while (dw->queued)
		pthread_cond_wait(&dw->cond, &dw->lock);
	pthread_mutex_unlock(&dw->lock);
	return failure(dw, err);
}

/* Append n blocks (that fit) of buf to the batch being gathered. */
static void gather(struct vm_datawrite *dw, struct vm_dw_batch *b,
		   const char *buf, size_t n, int kept)
{
	size_t len = n * dw->block_size;
	const char *from = buf;
	struct iovec *last;

	if (!kept) {
		from = b->copy + b->copied * dw->block_size;
		memcpy((char *)from, buf, len);
		b->copied += n;
	}
	last = b->n_iov ? &b->iov[b->n_iov - 1] : NULL;
	if (last && (const char *)last->iov_base + last->iov_len == from)
		last->iov_len += len; /* adjacent in memory too */
	else
		b->iov[b->n_iov++] = (struct iovec){ (void *)from, len };
	b->blocks += n;
}

int vm_dw_write(struct vm_datawrite *dw, uint64_t pblk, size_t count,
		const char *buf, int kept, struct vm_error *err)
{
	/* What is handed over before all of buf is gathered is marked
	 * as of before this call. */
	size_t mark = dw->mark;
	int r = failure(dw, err);

	kept = kept && !((uintptr_t)buf % ALIGN);
	while (r == 0 && count) {
		struct vm_dw_batch *b = &dw->batches[dw->filling];
		size_t room = kept ? VM_DW_BLOCKS - b->blocks :
				     VM_DW_COPY_BLOCKS - b->copied;

		if (VM_DW_BLOCKS - b->blocks < room)
			room = VM_DW_BLOCKS - b->blocks;
		if (b->blocks && (pblk != b->start + b->blocks || !room ||
				  b->n_iov == VM_DW_IOV)) {
			r = hand_over(dw, mark, err);
			continue;
		}
		if (!b->blocks)
			b->start = pblk;
		if (room > count)
			room = count;
		gather(dw, b, buf, room, kept);
		buf += room * dw->block_size;
		pblk += room;
		count -= room;
	}
	return r;
}

void vm_dw_close(struct vm_datawrite *dw)
{
	if (dw->started) {
		pthread_mutex_lock(&dw->lock);
		dw->stop = 1;
		pthread_cond_broadcast(&dw->cond);
		pthread_mutex_unlock(&dw->lock);
		pthread_join(dw->thread, NULL);
		pthread_mutex_destroy(&dw->lock);
		pthread_cond_destroy(&dw->cond);
		dw->started = 0;
	}
	if (dw->fd >= 0)
		close(dw->fd);
	dw->fd = -1;
	for (int i = 0; i < VM_DW_BATCHES; i++) {
		free(dw->batches[i].copy);
		dw->batches[i].copy = NULL;
	}
}
