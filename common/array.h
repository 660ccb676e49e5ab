/* SPDX-License-Identifier: Apache-2.0 */
/*
 * array.h - room in a heap array that grows as it is filled: one helper for
 * every array of both binaries that is appended to one element (or a few)
 * at a time.
 *
 * The capacity doubles, so n appends cost O(n) copies in all, and a size
 * that would overflow (past PTRDIFF_MAX bytes, the most any object may
 * have) is refused like a failed allocation instead of wrapping round to a
 * small buffer.
 */
#ifndef VMTOOLS_COMMON_ARRAY_H
#define VMTOOLS_COMMON_ARRAY_H

#include <stddef.h>

/*
 * Make *v (elements of elem bytes, *cap of them allocated) hold at least
 * need elements.  Returns 0, or -ENOMEM with *v and *cap unchanged.
 */
int vm_array_reserve(void **v, size_t *cap, size_t need, size_t elem);

/*
 * vm_array_reserve() for a typed pointer, as systemd's GREEDY_REALLOC:
 * `vm_grow(s->v, &s->cap, s->n + 1)` makes room for one more element of
 * s->v.
 */
#define vm_grow(array, cap, need) \
	vm_array_reserve((void **)&(array), (cap), (need), sizeof(*(array)))

#endif
