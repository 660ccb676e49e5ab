/* SPDX-License-Identifier: Apache-2.0 */
/*
 * strpool.h - a set of strings, each stored once (strpool.c): interning
 * gives every equal string the same pointer, valid until the pool is freed.
 *
 * Symbol tables name thousands of functions, and a hostile one names a
 * million with one long string; kept once, such a table costs its entries,
 * not a copy of the name per entry.  The pool counts the bytes it holds,
 * so its owner can bound them.
 */
#ifndef VMTOOLS_COMMON_STRPOOL_H
#define VMTOOLS_COMMON_STRPOOL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/intern.h"

struct vm_strpool {
	/*
	 * Where a string already held is found: a tsearch tree, or, when
	 * `hashed` (set it while the pool is empty), an intern table,
	 * faster at a few dozen more bytes a string (a pool of a profile's
	 * names, not of a symbol table's).
	 */
	bool hashed;
	void *tree;
	struct vm_intern table;
	struct vm_strpool_chunk *chunks; /* where they are stored */
	size_t bytes; /* held, with the tree's and allocator's overhead */
	size_t count; /* distinct strings */
};

/*
 * The pool's copy of str (stored when it is new), or NULL when out of
 * memory.
 */
const char *vm_strpool_intern(struct vm_strpool *p, const char *str);

/* Free every string; the pool is empty and usable again. */
void vm_strpool_free(struct vm_strpool *p);

#endif
