// SPDX-License-Identifier: Apache-2.0
/*
 * datawrite.c - file data into the image: consecutive blocks gathered into
 * one vectored direct write.
 *
 * Consecutive files get consecutive blocks, so their data goes out in one
 * pwritev of up to 8 MiB instead of a write per file.  Data the caller
 * keeps (the read-ahead ring) is written from where it is; only the rest
 * is copied.  (Copying it all into one buffer would add a pass over every
 * byte of file data on the main thread.)  The image's metadata goes
 * through libext2fs's io channel; the blocks written here are disjoint
 * from it.
 */
#include "imagebuilder/datawrite.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALIGN 4096u

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
	dw->copy = aligned_alloc(ALIGN, (size_t)VM_DW_BLOCKS * block_size);
	if (!dw->copy) {
		vm_dw_close(dw);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

static int write_all(struct vm_datawrite *dw, struct iovec *iov, int n,
		     uint64_t pblk, struct vm_error *err)
{
	off_t off = (off_t)(pblk * dw->block_size);

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

int vm_dw_flush(struct vm_datawrite *dw, struct vm_error *err)
{
	int r;

	if (!dw->blocks)
		return 0;
	r = write_all(dw, dw->iov, dw->n_iov, dw->start, err);
	dw->blocks = 0;
	dw->n_iov = 0;
	dw->copied = 0;
	if (r == 0 && dw->written)
		dw->written(dw->ctx);
	return r;
}

/* Data over the size of the copy buffer, not kept: through it in pieces. */
static int write_large(struct vm_datawrite *dw, uint64_t pblk, size_t count,
		       const char *buf, struct vm_error *err)
{
	for (size_t done = 0; done < count;) {
		size_t n = count - done < VM_DW_BLOCKS ? count - done :
							 VM_DW_BLOCKS;
		struct iovec v = { dw->copy, n * dw->block_size };
		int r;

		memcpy(dw->copy, buf + done * dw->block_size,
		       n * dw->block_size);
		r = write_all(dw, &v, 1, pblk + done, err);
		if (r < 0)
			return r;
		done += n;
	}
	return 0;
}

int vm_dw_write(struct vm_datawrite *dw, uint64_t pblk, size_t count,
		const char *buf, int kept, struct vm_error *err)
{
	size_t len = count * dw->block_size;
	struct iovec *last;
	const char *from = buf;
	int r;

	if (!count)
		return 0;
	kept = kept && !((uintptr_t)buf % ALIGN);
	if (!dw->blocks || pblk != dw->start + dw->blocks ||
	    dw->blocks + count > VM_DW_BLOCKS || dw->n_iov == VM_DW_IOV ||
	    (!kept && dw->copied + count > VM_DW_BLOCKS)) {
		r = vm_dw_flush(dw, err);
		if (r < 0)
			return r;
		if (count > VM_DW_BLOCKS && !kept)
			return write_large(dw, pblk, count, buf, err);
		dw->start = pblk;
	}
	if (!kept) {
		from = dw->copy + dw->copied * dw->block_size;
		memcpy((char *)from, buf, len);
		dw->copied += count;
	}
	last = dw->n_iov ? &dw->iov[dw->n_iov - 1] : NULL;
	if (last && (const char *)last->iov_base + last->iov_len == from)
		last->iov_len += len; /* adjacent in memory too */
	else
		dw->iov[dw->n_iov++] = (struct iovec){ (void *)from, len };
	dw->blocks += count;
	return 0;
}

void vm_dw_close(struct vm_datawrite *dw)
{
	if (dw->fd >= 0)
		close(dw->fd);
	dw->fd = -1;
	free(dw->copy);
	dw->copy = NULL;
}
