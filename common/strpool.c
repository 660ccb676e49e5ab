// SPDX-License-Identifier: Apache-2.0
/*
 * strpool.c - interned strings (strpool.h): glibc's tsearch finds a string
 * already held (or an intern table, intern.h, its string hash seeded at
 * random per process, in a pool made `hashed`); new ones are appended to
 * 64 KiB chunks (a long one gets a chunk of its own), so a string costs its
 * bytes and a tree node (or a table entry), not a malloc header each.
 */
#include "common/strpool.h"

#include <search.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES (64u << 10)
/* What a tsearch node costs: three words and malloc's header. */
#define NODE_BYTES (4 * sizeof(void *))

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

/* A copy of str (len bytes, its '\0' too) in room(), or NULL. */
static char *keep(struct vm_strpool *p, const char *str, size_t len)
{
	char *copy = room(p, len);

	if (copy)
		memcpy(copy, str, len);
	return copy;
}

/* vm_strpool_intern() of a hashed pool; len counts str's '\0'. */
static const char *intern_hashed(struct vm_strpool *p, const char *str,
				 size_t len)
{
	const char *found;
	unsigned long h;
	char *copy;
	long grew;

	found = vm_intern_find(&p->table, str, &h, NULL);
	if (found)
		return found;
	copy = keep(p, str, len);
	if (!copy)
		return NULL;
	grew = vm_intern_add(&p->table, copy, NULL, h);
	if (grew < 0)
		return NULL; /* its bytes stay in the chunk, unused */
	p->bytes += (size_t)grew;
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
	copy = keep(p, str, len);
	if (!copy)
		return NULL;
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
	vm_intern_free(&p->table, NULL);
	while (p->chunks) {
		struct vm_strpool_chunk *c = p->chunks;

		p->chunks = c->next;
		free(c);
	}
	*p = (struct vm_strpool){ 0 };
}
