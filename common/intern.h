/* SPDX-License-Identifier: Apache-2.0 */
/*
 * intern.h - an intern table (intern.c): entries found by their content,
 * each added once, through json-c's hash table.
 *
 * Interning takes two steps with work between them that only the caller
 * knows (a copy to make, an id to give): look the key up, and when it is
 * new, add it.  The key is hashed once for both:
 *
 *	unsigned long h;
 *	const struct entry *e = vm_intern_find(&t, &key, &h, NULL);
 *	if (!e) { e = copy_of(&key); if (vm_intern_add(&t, e, NULL, h) < 0) ... }
 *
 * The table is made by the first add, so an empty one costs nothing, and
 * doubles when two thirds full; a caller that bounds its memory counts
 * what each add made it grow by.  The keys stay the caller's.
 */
#ifndef VMTOOLS_COMMON_INTERN_H
#define VMTOOLS_COMMON_INTERN_H

#include <stddef.h>

struct lh_table;

/* json-c's hash and equality of two keys (lh_hash_fn, lh_equal_fn). */
typedef unsigned long vm_intern_hash_fn(const void *key);
typedef int vm_intern_equal_fn(const void *a, const void *b);

/* Entries of a zeroed table when it is made. */
#define VM_INTERN_START 256

/*
 * Zeroed, it is a table of C strings (json-c's string hash, seeded at
 * random per process) of VM_INTERN_START entries; vm_intern_init() makes
 * it another.
 */
struct vm_intern {
	vm_intern_hash_fn *hash;
	vm_intern_equal_fn *equal;
	int start;
	struct lh_table *table;
};

/*
 * A table of keys that hash and equal know (neither NULL), of start
 * entries when it is made.  Nothing is allocated yet.
 */
void vm_intern_init(struct vm_intern *t, int start, vm_intern_hash_fn *hash,
		    vm_intern_equal_fn *equal);

/*
 * The key held equal to key, its value in *value (when value is not NULL);
 * NULL when there is none.  *hash is what vm_intern_add() takes for key.
 */
const void *vm_intern_find(const struct vm_intern *t, const void *key,
			   unsigned long *hash, void **value);

/*
 * Add key, which vm_intern_find() did not find, with its value and the
 * hash that find left.  key must stay put until the table is freed.
 * Returns the bytes the table grew by (made, or doubled; mostly 0), or
 * -ENOMEM.
 */
long vm_intern_add(struct vm_intern *t, const void *key, const void *value,
		   unsigned long hash);

/* What the table takes: its entries, at its size now. */
size_t vm_intern_bytes(const struct vm_intern *t);

/*
 * Free the table (with free_key, when not NULL, called on every key it
 * holds); it is empty and usable again, of the same kind.
 */
void vm_intern_free(struct vm_intern *t, void (*free_key)(void *key));

#endif
