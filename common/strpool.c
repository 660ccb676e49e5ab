// SPDX-License-Identifier: Apache-2.0
/*
 * strpool.c - interned strings (strpool.h): glibc's tsearch finds a string
 * already held (or json-c's hash table, its string hash seeded at random
 * per process, in a pool made `hashed`); new ones are appended to 64 KiB
 * chunks (a long one gets a chunk of its own), so a string costs its
 * bytes and a tree node (or a table entry), not a malloc header each.
 */
#include "common/strpool.h"

#include <search.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/linkhash.h>

#define CHUNK_BYTES (64u << 10)
/* What a tsearch node costs: three words and malloc's header. */
#define NODE_BYTES (4 * sizeof(void *))
/* Entries of a new hash table; it doubles when two thirds full. */
#define TABLE_START 256

struct vm_strpool_chunk {
	struct vm_strpool_chunk *next;
	size_t used, size;
	char data[];
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Room for len bytes: the current chunk, or a new one. */
static char *room(struct vm_strpool *p, size_t len)
{
	struct vm_strpool_chunk *c = p->chunks;
	size_t size;

	if (c && c->size - c->used >= len) {
		c->used += len;
		return c->data + c->used - len;
	}
	size = len > CHUNK_BYTES / 4 ? len : CHUNK_BYTES;
	c = malloc(sizeof(*c) + size);
	if (!c)
		return NULL;
	c->size = size;
	c->used = len;
	p->bytes += sizeof(*c) + size;
	if (size == len && p->chunks) {
		/* A long string's own chunk: keep filling the current one. */
		c->next = p->chunks->next;
		p->chunks->next = c;
	} else {
		c->next = p->chunks;
		p->chunks = c;
	}
	return c->data;
}

/* The hash table's bytes: its entries, at its size now. */
static size_t table_bytes(const struct lh_table *t)
{
	return t ? sizeof(*t) + (size_t)t->size * sizeof(struct lh_entry) : 0;
}

/* vm_strpool_intern() of a hashed pool; len counts str's '\0'. */
static const char *intern_hashed(struct vm_strpool *p, const char *str,
				 size_t len)
{
	size_t before;
	struct lh_entry *found;
	unsigned long h;
	char *copy;

	if (!p->table) {
		p->table = lh_kchar_table_new(TABLE_START, NULL);
		if (!p->table)
			return NULL;
		p->bytes += table_bytes(p->table);
	}
	h = lh_get_hash(p->table, str);
	found = lh_table_lookup_entry_w_hash(p->table, str, h);
	if (found)
		return lh_entry_k(found);
	copy = room(p, len);
	if (!copy)
		return NULL;
	memcpy(copy, str, len);
	before = table_bytes(p->table);
	if (lh_table_insert_w_hash(p->table, copy, NULL, h, 0) < 0)
		return NULL; /* its bytes stay in the chunk, unused */
	p->bytes += table_bytes(p->table) - before;
	p->count++;
	return copy;
}

const char *vm_strpool_intern(struct vm_strpool *p, const char *str)
{
	size_t len = strlen(str) + 1;
	const char **found;
	char *copy;

	if (p->hashed)
		return intern_hashed(p, str, len);
	found = tfind(str, &p->tree, cmp_str);
	if (found)
		return *found;
	copy = room(p, len);
	if (!copy)
		return NULL;
	memcpy(copy, str, len);
	found = tsearch(copy, &p->tree, cmp_str);
	if (!found)
		return NULL; /* its bytes stay in the chunk, unused */
	p->bytes += NODE_BYTES;
	p->count++;
	return *found;
}

static void no_free(void *node)
{
	(void)node;
}

void vm_strpool_free(struct vm_strpool *p)
{
	tdestroy(p->tree, no_free);
	if (p->table)
		lh_table_free(p->table);
	while (p->chunks) {
		struct vm_strpool_chunk *c = p->chunks;

		p->chunks = c->next;
		free(c);
	}
	*p = (struct vm_strpool){ 0 };
}
