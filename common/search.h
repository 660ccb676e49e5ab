/* SPDX-License-Identifier: Apache-2.0 */
/*
 * search.h - the one binary search over an array sorted by a 64-bit key:
 * the last element whose key is at or below a given one (an address's
 * symbol, mapping, unwind row or FDE start).
 *
 * It is static inline so that, in the lookups run for every frame, the
 * compiler inlines the key's reading too and the loop is as tight as one
 * written out by hand.  Most arrays are keyed by a member:
 *
 *	const struct row *r = VM_BSEARCH_FLOOR(addr, rows, n, addr);
 *
 * and others by what a function reads from an element and arg:
 *
 *	const uint32_t *i = vm_bsearch_floor(addr, by_start, n,
 *					     sizeof(*by_start), start_of, maps);
 */
#ifndef VMTOOLS_COMMON_SEARCH_H
#define VMTOOLS_COMMON_SEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* The uint64_t *(const size_t *)offset bytes into elem. */
static inline uint64_t vm_search_key_at(const void *elem, const void *offset)
{
	uint64_t k;

	memcpy(&k, (const char *)elem + *(const size_t *)offset, sizeof(k));
	return k;
}

/* vm_bsearch_floor() keyed by the uint64_t offset bytes into each element. */
static inline const void *vm_bsearch_floor_at(uint64_t key, const void *base,
					      size_t n, size_t size,
					      size_t offset)
{
	return vm_bsearch_floor(key, base, n, size, vm_search_key_at, &offset);
}

/*
 * vm_bsearch_floor() of the n elements of array, sorted by their uint64_t
 * member; a pointer of the array's type, or NULL.
 */
#define VM_BSEARCH_FLOOR(key, array, n, member)          \
	((__typeof__(&(array)[0]))vm_bsearch_floor_at(   \
		(key), (array), (n), sizeof((array)[0]), \
		offsetof(__typeof__((array)[0]), member)))

#endif
