// SPDX-License-Identifier: Apache-2.0
/*
 * intern.c - an intern table (intern.h) over json-c's linkhash: the hash
 * taken at the lookup goes to the insert, and the table's bytes are
 * counted from its size.
 */
#include "common/intern.h"

#include <errno.h>

#include <json-c/linkhash.h>

void vm_intern_init(struct vm_intern *t, int start, vm_intern_hash_fn *hash,
		    vm_intern_equal_fn *equal)
{
	*t = (struct vm_intern){ .hash = hash, .equal = equal, .start = start };
}

const void *vm_intern_find(const struct vm_intern *t, const void *key,
			   unsigned long *hash, void **value)
{
	struct lh_entry *found;

	/* Without a table, the add that makes it hashes the key. */
	if (!t->table)
		return NULL;
	*hash = lh_get_hash(t->table, key);
	found = lh_table_lookup_entry_w_hash(t->table, key, *hash);
	if (!found)
		return NULL;
	if (value)
		*value = (void *)lh_entry_v(found);
	return lh_entry_k(found);
}

long vm_intern_add(struct vm_intern *t, const void *key, const void *value,
		   unsigned long hash)
{
	size_t before = vm_intern_bytes(t);
	int start = t->start ? t->start : VM_INTERN_START;

	if (!t->table) {
		t->table =
			t->hash ? lh_table_new(start, NULL, t->hash, t->equal) :
				  lh_kchar_table_new(start, NULL);
		if (!t->table)
			return -ENOMEM;
		hash = lh_get_hash(t->table, key);
	}
	if (lh_table_insert_w_hash(t->table, key, value, hash, 0) < 0)
		return -ENOMEM;
	return (long)(vm_intern_bytes(t) - before);
}

size_t vm_intern_bytes(const struct vm_intern *t)
{
	return t->table ? sizeof(*t->table) + (size_t)t->table->size *
						      sizeof(struct lh_entry) :
			  0;
}

void vm_intern_free(struct vm_intern *t, void (*free_key)(void *key))
{
	struct lh_entry *e;

	if (!t->table)
		return;
	for (e = lh_table_head(t->table); free_key && e; e = lh_entry_next(e))
		free_key((void *)lh_entry_k(e));
	lh_table_free(t->table);
	t->table = NULL;
}
