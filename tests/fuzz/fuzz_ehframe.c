// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_ehframe.c - libFuzzer target for the .eh_frame_hdr reader
 * (agent/unwind/ehframe.c): any bytes, as a stripped binary might carry
 * in its PT_GNU_EH_FRAME segment, must yield a refusal or a sorted list of
 * distinct function starts, never a read past the bytes.  The first input
 * byte picks the ELF class and byte order, the rest is the table.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/unwind/ehframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vm_ehframe_hdr h = { .vaddr = 0x1000 };
	uint64_t *starts, start;
	uint8_t *copy;
	size_t n;

	if (size < 1)
		return 0;
	h.ptr_size = data[0] & 1 ? 4 : 8;
	h.big_endian = data[0] & 2;
	/* An exact allocation, so ASan sees any read past its end. */
	copy = malloc(size - 1 ? size - 1 : 1);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	h.data = copy;
	h.len = size - 1;
	if (vm_ehframe_hdr_starts(&h, &starts, &n) == 0) {
		for (size_t i = 1; i < n; i++)
			if (starts[i - 1] >= starts[i])
				abort(); /* not sorted, or not distinct */
		for (size_t i = 0; i < n; i++)
			if (!vm_ehframe_lookup(starts, n, starts[i], &start) ||
			    start != starts[i])
				abort();
		free(starts);
	}
	free(copy);
	return 0;
}
