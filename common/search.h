/* SPDX-License-Identifier: Apache-2.0 */
/*
 * search.h - the one binary search over an array sorted by a 64-bit key:
 * the last element whose key is at or below a given one (an address's
 * symbol, mapping, unwind row or FDE start).
 *
 * It is static inline so that, in the lookups run for every frame, the
 * compiler inlines key_of too and the loop is as tight as one written out
 * by hand.
 *
 *	static uint64_t row_addr(const void *elem, const void *arg)
 *	{
 *		return ((const struct row *)elem)->addr;
 *	}
 *	const struct row *r = vm_bsearch_floor(addr, rows, n, sizeof(*rows),
 *					       row_addr, NULL);
 */
#ifndef VMTOOLS_COMMON_SEARCH_H
#define VMTOOLS_COMMON_SEARCH_H

#include <stddef.h>
#include <stdint.h>

/* An element's key; arg is vm_bsearch_floor()'s. */
typedef uint64_t vm_search_key_fn(const void *elem, const void *arg);

/*
 * Of the n elements of size bytes at base, sorted by key_of (ascending,
 * equal keys allowed), the last one whose key is at most key; NULL when
 * there is none (n is 0, or key is below the first).
 */
static inline const void *vm_bsearch_floor(uint64_t key, const void *base,
					   size_t n, size_t size,
					   vm_search_key_fn *key_of,
					   const void *arg)
{
	const char *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (key_of(b + mid * size, arg) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? b + (lo - 1) * size : NULL;
}

#endif
