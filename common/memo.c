// SPDX-License-Identifier: Apache-2.0
/*
 * memo.c - a fixed-size, direct-mapped memo (see memo.h).
 */
#include "common/memo.h"

#include <errno.h>
#include <pthread.h>
#include <sys/random.h>
#include <stdlib.h>
#include <string.h>

int vm_memo_init(struct vm_memo *m, unsigned bits)
{
	if (bits > 24)
		bits = 24;
	m->bits = bits;
	m->slots = calloc((size_t)1 << bits, sizeof(*m->slots));
	return m->slots ? 0 : -ENOMEM;
}

void vm_memo_free(struct vm_memo *m)
{
	free(m->slots);
	m->slots = NULL;
}

void vm_memo_clear(struct vm_memo *m)
{
	if (m->slots)
		memset(m->slots, 0, ((size_t)1 << m->bits) * sizeof(*m->slots));
}

/* Multiply-xorshift: every bit of the key reaches the top bits taken. */
static struct vm_memo_slot *slot_of(const struct vm_memo *m, uint64_t a,
				    uint64_t b, uint64_t c)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ULL;

	h = (h ^ (h >> 29) ^ b) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (h >> 31) ^ c) * 0x94d049bb133111ebULL;
	h ^= h >> 32;
	return &m->slots[m->bits ? h >> (64 - m->bits) : 0];
}

bool vm_memo_get(const struct vm_memo *m, uint64_t a, uint64_t b, uint64_t c,
		 uint64_t *value)
{
	const struct vm_memo_slot *s;

	if (!m->slots)
		return false;
	s = slot_of(m, a, b, c);
	if (!s->value || s->key[0] != a || s->key[1] != b || s->key[2] != c)
		return false;
	*value = s->value;
	return true;
}

void vm_memo_put(struct vm_memo *m, uint64_t a, uint64_t b, uint64_t c,
		 uint64_t value)
{
	struct vm_memo_slot *s;

	if (!m->slots || !value)
		return;
	s = slot_of(m, a, b, c);
	s->key[0] = a;
	s->key[1] = b;
	s->key[2] = c;
	s->value = value;
}

static uint64_t seed;
static pthread_once_t seed_once = PTHREAD_ONCE_INIT;

static void seed_init(void)
{
	uint64_t s = 0;

	/* Without randomness (never, on Linux >= 3.17), a fixed seed. */
	if (getrandom(&s, sizeof(s), 0) != sizeof(s))
		s = 0x2545f4914f6cdd1dULL;
	seed = s;
}

static uint64_t seeded(void)
{
	pthread_once(&seed_once, seed_init);
	return seed;
}

uint64_t vm_memo_hash(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t h = (a ^ seeded()) * 0x9e3779b97f4a7c15ULL;

	h = (h ^ (h >> 29) ^ b) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (h >> 31) ^ c) * 0x94d049bb133111ebULL;
	return h ^ (h >> 32);
}

/* FNV-1a, 64 bits, from the seed. */
uint64_t vm_memo_bytes_key(const void *s, size_t len)
{
	const unsigned char *p = s;
	uint64_t h = 0xcbf29ce484222325ULL ^ seeded();

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}
