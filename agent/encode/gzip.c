// SPDX-License-Identifier: Apache-2.0
/*
 * gzip.c - gzip of an encoded profile with zlib (the API's "archive").
 */
#include "agent/encode/encode.h"

#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

int vm_gzip(const void *in, size_t in_len, void **out, size_t *out_len,
	    struct vm_error *err)
{
	z_stream z = { 0 };
	size_t cap;
	void *buf;
	int r;

	/*
	 * windowBits 15 + 16: a gzip header and trailer, not zlib's.  Level
	 * 1, as Go's runtime/pprof writes profiles: a profile's strings and
	 * varints compress nearly as well, at a fraction of the CPU, which
	 * continuous profiling spends every window.
	 */
	if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return vm_error_set(err, ENOMEM, "cannot start gzip");
	cap = deflateBound(&z, in_len);
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&z);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	z.next_in = (Bytef *)in;
	z.avail_in = in_len;
	z.next_out = buf;
	z.avail_out = cap;
	r = deflate(&z, Z_FINISH);
	deflateEnd(&z);
	if (r != Z_STREAM_END) {
		free(buf);
		return vm_error_set(err, EIO, "gzip failed (zlib error %d)", r);
	}
	*out = buf;
	*out_len = cap - z.avail_out;
	return 0;
}
