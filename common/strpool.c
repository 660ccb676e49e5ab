// SPDX-License-Identifier: Apache-2.0
/*
 * strpool.c - interned strings (strpool.h): a hash table (open addressing,
 * linear probing, each slot keeping its string's hash, so that a probe
 * compares strings only when their hashes match) finds a string already
 * held; new ones are appended to 64 KiB chunks (a long one gets a chunk
 * of its own), so a string costs its bytes and a slot, not a malloc
 * header each.  Symbolizing asks for every frame of every sample, most
 * of them names it holds already.
 */
#include "common/strpool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES (64u << 10)
#define MIN_SLOTS 64

struct vm_strpool_slot {
	const char *s; /* NULL: empty */
	uint64_t hash;
};

struct vm_strpool_chunk {
	struct vm_strpool_chunk *next;
	size_t used, size;
	char data[];
};

/* FNV-1a of the len bytes at s. */
static uint64_t hash_of(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
}

/* The slot of the string s with hash h, or the empty one it would take. */
static struct vm_strpool_slot *slot_of(const struct vm_strpool *p,
				       const char *s, uint64_t h)
{
	size_t mask = p->n_slots - 1, i = (size_t)h & mask;

	while (p->slots[i].s &&
	       (p->slots[i].hash != h || strcmp(p->slots[i].s, s)))
		i = (i + 1) & mask;
	return &p->slots[i];
}

/* Twice the slots (or the first ones): -1 when out of memory. */
static int grow(struct vm_strpool *p)
{
	struct vm_strpool old = *p;
	size_t n = old.n_slots ? 2 * old.n_slots : MIN_SLOTS;

	p->slots = calloc(n, sizeof(*p->slots));
	if (!p->slots) {
		p->slots = old.slots;
		return -1;
	}
	p->n_slots = n;
	for (size_t i = 0; i < old.n_slots; i++)
		if (old.slots[i].s)
			*slot_of(p, old.slots[i].s, old.slots[i].hash) =
				old.slots[i];
	free(old.slots);
	p->bytes += (n - old.n_slots) * sizeof(*p->slots);
	return 0;
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

const char *vm_strpool_intern(struct vm_strpool *p, const char *str)
{
	size_t len = strlen(str) + 1;
	uint64_t h = hash_of(str, len - 1);
	struct vm_strpool_slot *slot;
	char *copy;

	if (p->n_slots) {
		slot = slot_of(p, str, h);
		if (slot->s)
			return slot->s;
	}
	if ((p->count + 1) * 2 > p->n_slots && grow(p) < 0)
		return NULL;
	copy = room(p, len);
	if (!copy)
		return NULL;
	memcpy(copy, str, len);
	slot = slot_of(p, copy, h);
	slot->s = copy;
	slot->hash = h;
	p->count++;
	return copy;
}

void vm_strpool_free(struct vm_strpool *p)
{
	free(p->slots);
	while (p->chunks) {
		struct vm_strpool_chunk *c = p->chunks;

		p->chunks = c->next;
		free(c);
	}
	*p = (struct vm_strpool){ 0 };
}
