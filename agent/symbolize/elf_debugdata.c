// SPDX-License-Identifier: Apache-2.0
/*
 * elf_debugdata.c - decompressing MiniDebugInfo: the .gnu_debugdata section
 * some distributions (Fedora, RHEL) put in stripped binaries is an
 * xz-compressed ELF file holding a .symtab of the local functions.
 */
#include "agent/symbolize/elf.h"

#include <errno.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>

int vm_xz_decompress(const void *in, size_t in_len, size_t max_out, void **out,
		     size_t *out_len, struct vm_error *err)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	size_t cap = in_len * 4 < 65536 ? 65536 : in_len * 4;
	uint8_t *buf = NULL, *nb;
	lzma_ret r;

	if (cap > max_out)
		cap = max_out;
	if (lzma_stream_decoder(&strm, UINT64_MAX, 0) != LZMA_OK)
		return vm_error_set(err, ENOMEM, "cannot start xz decoder");
	buf = malloc(cap);
	if (!buf) {
		lzma_end(&strm);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	strm.next_in = in;
	strm.avail_in = in_len;
	strm.next_out = buf;
	strm.avail_out = cap;
	for (;;) {
		r = lzma_code(&strm, LZMA_FINISH);
		if (r == LZMA_STREAM_END)
			break;
		if (r != LZMA_OK && r != LZMA_BUF_ERROR)
			goto bad;
		if (strm.avail_out == 0) {
			size_t used = cap;

			if (cap >= max_out) {
				lzma_end(&strm);
				free(buf);
				return vm_error_set(
					err, EFBIG,
					".gnu_debugdata decompresses to more than %zu bytes",
					max_out);
			}
			cap = cap * 2 > max_out ? max_out : cap * 2;
			nb = realloc(buf, cap);
			if (!nb)
				goto bad;
			buf = nb;
			strm.next_out = buf + used;
			strm.avail_out = cap - used;
		} else if (r == LZMA_BUF_ERROR) {
			goto bad; /* truncated input */
		}
	}
	*out_len = cap - strm.avail_out;
	*out = buf;
	lzma_end(&strm);
	return 0;
bad:
	lzma_end(&strm);
	free(buf);
	return vm_error_set(
		err, EINVAL,
		".gnu_debugdata is not valid xz data (or too large)");
}
