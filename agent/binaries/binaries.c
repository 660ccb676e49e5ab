// SPDX-License-Identifier: Apache-2.0
/*
 * binaries.c - one entry per binary, its facets bounded together
 * (binaries.h).
 *
 * The entries are a list searched in full: a few hundred binaries at
 * most are mapped by the targets of one agent, and every search is for a
 * file just opened, which costs far more.  Eviction drops whole entries
 * no one holds, least recently held first, so a binary's facets come and
 * go together.
 */
#include "agent/binaries/binaries.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/escape.h"

struct vm_binaries {
	pthread_mutex_t lock;
	struct vm_binary **v;
	size_t n, cap;
	size_t bytes, max_bytes, max_entries;
	uint64_t clock; /* holds so far */
	uint64_t fills[VM_BINARY_FACETS], hits[VM_BINARY_FACETS],
		skipped[VM_BINARY_FACETS];
	struct vm_binaries_skip skips[VM_BINARIES_SKIPPED_KEPT];
	uint64_t n_skips; /* noted since start; the last few kept */
};

void vm_binary_key_of(const struct stat *st, struct vm_binary_key *k)
{
	k->dev = st->st_dev;
	k->ino = st->st_ino;
	k->size = (uint64_t)st->st_size;
	k->mtime_ns = st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
}

struct vm_binaries *vm_binaries_new(const struct vm_binaries_limits *lim)
{
	struct vm_binaries *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	pthread_mutex_init(&h->lock, NULL);
	h->max_bytes = lim && lim->max_bytes ? lim->max_bytes :
					       VM_BINARIES_MAX_BYTES;
	h->max_entries = lim && lim->max_entries ? lim->max_entries :
						   VM_BINARIES_MAX_ENTRIES;
	return h;
}

static void entry_free(struct vm_binary *b)
{
	for (int f = 0; f < VM_BINARY_FACETS; f++)
		if (b->facet[f] && b->free_facet[f])
			b->free_facet[f](b->facet[f]);
	free(b);
}

static size_t entry_bytes(const struct vm_binary *b)
{
	size_t sum = 0;

	for (int f = 0; f < VM_BINARY_FACETS; f++)
		sum += b->bytes[f];
	return sum;
}

void vm_binaries_free(struct vm_binaries *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++)
		entry_free(h->v[i]);
	free(h->v);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

static bool same_key(const struct vm_binary_key *a,
		     const struct vm_binary_key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns;
}

/*
 * Drop the least recently held entry no one holds (under the lock), only
 * among those taking memory when with_bytes: false when there is none.
 */
static bool evict_one(struct vm_binaries *h, bool with_bytes)
{
	size_t oldest = h->n;

	for (size_t i = 0; i < h->n; i++) {
		const struct vm_binary *b = h->v[i];

		if (!b->refs && (!with_bytes || entry_bytes(b)) &&
		    (oldest == h->n || b->used < h->v[oldest]->used))
			oldest = i;
	}
	if (oldest == h->n)
		return false;
	h->bytes -= entry_bytes(h->v[oldest]);
	entry_free(h->v[oldest]);
	h->v[oldest] = h->v[--h->n];
	return true;
}

struct vm_binary *vm_binaries_hold(struct vm_binaries *h,
				   const struct vm_binary_key *k)
{
	struct vm_binary *b = NULL;

	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < h->n && !b; i++)
		if (same_key(&h->v[i]->key, k))
			b = h->v[i];
	if (!b) {
		while (h->n >= h->max_entries && evict_one(h, false))
			;
		if (h->n < h->max_entries &&
		    !vm_grow(h->v, &h->cap, h->n + 1) &&
		    (b = calloc(1, sizeof(*b)))) {
			b->key = *k;
			h->v[h->n++] = b;
		}
	}
	if (b) {
		b->refs++;
		b->used = ++h->clock;
	}
	pthread_mutex_unlock(&h->lock);
	return b;
}

void vm_binaries_put(struct vm_binaries *h, struct vm_binary *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&h->lock);
	if (b->refs)
		b->refs--;
	pthread_mutex_unlock(&h->lock);
}

bool vm_binary_facet(struct vm_binaries *h, struct vm_binary *b,
		     enum vm_binary_facet f, void **data)
{
	bool filled;

	pthread_mutex_lock(&h->lock);
	filled = b->filled[f];
	if (filled) {
		*data = b->facet[f];
		h->hits[f]++;
	}
	pthread_mutex_unlock(&h->lock);
	return filled;
}

/* Room for bytes more (under the lock), evicting unheld entries. */
static bool make_room(struct vm_binaries *h, size_t bytes)
{
	while (h->bytes + bytes > h->max_bytes)
		if (!evict_one(h, true))
			return false;
	return true;
}

static void note_skip(struct vm_binaries *h, enum vm_binary_facet f,
		      const char *file, const char *reason)
{
	struct vm_binaries_skip *k =
		&h->skips[h->n_skips++ % VM_BINARIES_SKIPPED_KEPT];

	k->facet = f;
	/* Any process names the file: valid UTF-8 for /healthz's JSON. */
	vm_escape(k->file, sizeof(k->file), file, strlen(file), VM_ESCAPE_TEXT);
	snprintf(k->reason, sizeof(k->reason), "%s", reason);
	h->skipped[f]++;
}

int vm_binary_fill(struct vm_binaries *h, struct vm_binary *b,
		   enum vm_binary_facet f, void *data, size_t bytes,
		   void (*free_data)(void *data), const char *what,
		   const char *file, void **out)
{
	char reason[160];
	int r = 0;

	pthread_mutex_lock(&h->lock);
	if (b->filled[f]) {
		/* Another filled it meanwhile: keep theirs. */
		if (data && free_data)
			free_data(data);
	} else if (!make_room(h, bytes)) {
		if (data && free_data)
			free_data(data);
		snprintf(reason, sizeof(reason),
			 "its %s (%zu bytes) would pass the bound of %zu bytes "
			 "for every binary's facets",
			 what, bytes, h->max_bytes);
		note_skip(h, f, file ? file : "a binary", reason);
		r = -EFBIG;
	} else {
		b->facet[f] = data;
		b->bytes[f] = bytes;
		b->free_facet[f] = free_data;
		b->filled[f] = true;
		h->bytes += bytes;
		h->fills[f]++;
	}
	if (out)
		*out = b->facet[f];
	pthread_mutex_unlock(&h->lock);
	return r;
}

size_t vm_binaries_room(struct vm_binaries *h, size_t want)
{
	size_t room;

	pthread_mutex_lock(&h->lock);
	while (h->bytes + want > h->max_bytes && evict_one(h, true))
		;
	room = h->bytes >= h->max_bytes ? 0 : h->max_bytes - h->bytes;
	pthread_mutex_unlock(&h->lock);
	return room < want ? room : want;
}

void vm_binary_resize(struct vm_binaries *h, struct vm_binary *b,
		      enum vm_binary_facet f, size_t bytes)
{
	pthread_mutex_lock(&h->lock);
	h->bytes = h->bytes - b->bytes[f] + bytes;
	b->bytes[f] = bytes;
	pthread_mutex_unlock(&h->lock);
}

size_t vm_binaries_hold_filled(struct vm_binaries *h, enum vm_binary_facet f,
			       struct vm_binary ***out)
{
	size_t n = 0;

	pthread_mutex_lock(&h->lock);
	*out = calloc(h->n ? h->n : 1, sizeof(**out));
	for (size_t i = 0; *out && i < h->n; i++)
		if (h->v[i]->filled[f] && h->v[i]->facet[f]) {
			h->v[i]->refs++;
			(*out)[n++] = h->v[i];
		}
	pthread_mutex_unlock(&h->lock);
	return n;
}

bool vm_binaries_has(struct vm_binaries *h, enum vm_binary_facet f,
		     uint64_t dev, uint64_t ino)
{
	bool has = false;

	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < h->n && !has; i++)
		has = h->v[i]->key.dev == dev && h->v[i]->key.ino == ino &&
		      h->v[i]->filled[f];
	pthread_mutex_unlock(&h->lock);
	return has;
}

void vm_binaries_skip(struct vm_binaries *h, enum vm_binary_facet f,
		      const char *file, const char *reason)
{
	pthread_mutex_lock(&h->lock);
	note_skip(h, f, file, reason);
	pthread_mutex_unlock(&h->lock);
}

void vm_binaries_stats(struct vm_binaries *h, struct vm_binaries_stats *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&h->lock);
	out->entries = h->n;
	out->bytes = h->bytes;
	out->max_bytes = h->max_bytes;
	out->max_entries = h->max_entries;
	for (size_t i = 0; i < h->n; i++)
		for (int f = 0; f < VM_BINARY_FACETS; f++)
			if (h->v[i]->filled[f] && h->v[i]->facet[f]) {
				out->facet[f].filled++;
				out->facet[f].bytes += h->v[i]->bytes[f];
			}
	for (int f = 0; f < VM_BINARY_FACETS; f++) {
		out->facet[f].fills = h->fills[f];
		out->facet[f].hits = h->hits[f];
		out->facet[f].skipped = h->skipped[f];
	}
	pthread_mutex_unlock(&h->lock);
}

void vm_binaries_skipped(struct vm_binaries *h, enum vm_binary_facet f,
			 struct vm_binaries_skip *out, size_t max,
			 size_t *n_out)
{
	size_t n = 0;

	pthread_mutex_lock(&h->lock);
	/* Newest first. */
	for (uint64_t i = h->n_skips;
	     i > 0 && h->n_skips - i < VM_BINARIES_SKIPPED_KEPT && n < max;
	     i--) {
		const struct vm_binaries_skip *k =
			&h->skips[(i - 1) % VM_BINARIES_SKIPPED_KEPT];

		if (f == VM_BINARY_FACETS || k->facet == f)
			out[n++] = *k;
	}
	*n_out = n;
	pthread_mutex_unlock(&h->lock);
}
