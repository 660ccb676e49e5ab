// SPDX-License-Identifier: Apache-2.0
/*
 * history.c - the continuous profile's windows in memory (history.h).
 *
 * Four tables, each an array indexed by id plus an index to find an entry
 * by content (an intern table, common/intern.h, hashed with a
 * per-process random seed): strings, mappings, frames (address, mapping id,
 * function string id) and stacks (pid, tid, comm, backend type, wait
 * event, query id and frame ids).  A window is an array of (stack id, count).  Merging a span adds
 * counts per stack id, then builds the struct vm_symbolized the encoders
 * take from the tables.
 *
 * A window's frames name the same few mappings and functions over and
 * over, by the same pointers, and each window mostly the frames and names
 * of the one before: memos in front of the indexes spare most of the
 * hashing and comparing.  One from those pointers to their ids, emptied with
 * each window put in (the pointers change); one from a frame's content
 * (address, mapping id, function id) to its id and one from a string's
 * bytes to a candidate id, compared before it is taken; those two are
 * emptied only when the ids change (each compaction).
 *
 * The tables only grow while windows come in; when windows are dropped,
 * compact() rebuilds them from the windows left, so their size follows
 * what is kept.  It runs when the history is over its byte bound, and
 * after every COMPACT_EVERY dropped windows.
 */
#include "agent/history/history_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/history/history_time.h"
#include "common/array.h"
#include "common/clock.h"
#include "common/intern.h"
#include "common/memo.h"
#include "common/satmath.h"

#define COMPACT_EVERY 32
/* What an entry costs beyond its content: malloc's header, roughly. */
#define ENTRY_BYTES 16
/* Entries of a new index; it doubles when two thirds full. */
#define INDEX_START 64

struct hstring {
	uint32_t id;
	char s[];
};

struct hmapping {
	uint32_t id;
	uint64_t start, end, pgoff;
	uint32_t file, build_id; /* string ids */
	bool kernel, has_functions;
};

struct hframe {
	uint32_t id;
	uint64_t addr;
	uint32_t mapping; /* id + 1, 0: none */
	uint32_t function; /* string id + 1, 0: unknown */
};

struct hstack {
	uint32_t id;
	uint32_t pid, tid;
	uint32_t comm, backend, wait_event; /* string id + 1, 0: none */
	uint32_t ident, ctype; /* a memory context's, string id + 1 */
	uint64_t query_id; /* PostgreSQL's, 0: none */
	uint8_t fault_mapping; /* a faults window's, 0: none */
	uint32_t n;
	uint32_t frames[]; /* frame ids, leaf first */
};

/*
 * A stack in a window: its samples; in a memory snapshot its bytes, and
 * in objects the contexts on it (in what would be padding otherwise).
 */
struct hentry {
	uint32_t stack;
	uint32_t objects;
	uint64_t count;
};

struct hwindow {
	struct vm_history_window w;
	struct hentry *v;
	size_t n;
	char *notes; /* a memory snapshot's comment lines, or NULL */
};

struct tables {
	struct hstring **strings;
	size_t n_strings, cap_strings;
	struct vm_intern string_index;
	struct hmapping **mappings;
	size_t n_mappings, cap_mappings;
	struct vm_intern mapping_index;
	struct hframe **frames;
	size_t n_frames, cap_frames;
	struct vm_intern frame_index;
	struct hstack **stacks;
	size_t n_stacks, cap_stacks;
	struct vm_intern stack_index;
	uint64_t bytes;
};

/* Slots of each memo: 4,096 (128 KiB). */
#define HISTORY_MEMO_BITS 12
/* What a key stands for in `ids`. */
enum { ID_MAPPING = 1, ID_STRING, ID_STRING_BYTES };

struct vm_history {
	struct vm_history_config cfg;
	pthread_mutex_t lock;
	struct tables t;
	struct hwindow *windows; /* oldest first */
	size_t n_windows, cap_windows;
	uint64_t window_bytes;
	uint64_t dropped;
	unsigned dropped_since_compact;
	/*
	 * In front of the indexes: for the window being put in, the ids of
	 * its mappings and interned strings by pointer (ID_MAPPING,
	 * ID_STRING); for as long as the ids stand, string ids by the
	 * strings' bytes (ID_STRING_BYTES) and frame ids by (address,
	 * mapping id, function id).
	 */
	struct vm_memo ids, content_ids, frame_ids;
	/* The window being put in (vm_history_begin). */
	struct hentry *pending;
	size_t n_pending, cap_pending;
	char *pending_notes; /* what the window's profile said of itself */
	unsigned merges; /* vm_history_merge() calls under way */
};

static int cmp_string(const void *a, const void *b)
{
	return strcmp(((const struct hstring *)a)->s,
		      ((const struct hstring *)b)->s);
}

#define CMP(x, y)                                  \
	do {                                       \
		if ((x) != (y))                    \
			return (x) < (y) ? -1 : 1; \
	} while (0)

static int cmp_mapping(const void *a, const void *b)
{
	const struct hmapping *x = a, *y = b;

	CMP(x->start, y->start);
	CMP(x->end, y->end);
	CMP(x->pgoff, y->pgoff);
	CMP(x->file, y->file);
	CMP(x->build_id, y->build_id);
	CMP(x->kernel, y->kernel);
	return 0;
}

static int cmp_frame(const void *a, const void *b)
{
	const struct hframe *x = a, *y = b;

	CMP(x->addr, y->addr);
	CMP(x->mapping, y->mapping);
	CMP(x->function, y->function);
	return 0;
}

static int cmp_stack(const void *a, const void *b)
{
	const struct hstack *x = a, *y = b;

	CMP(x->pid, y->pid);
	CMP(x->tid, y->tid);
	CMP(x->comm, y->comm);
	CMP(x->backend, y->backend);
	CMP(x->wait_event, y->wait_event);
	CMP(x->ident, y->ident);
	CMP(x->ctype, y->ctype);
	CMP(x->query_id, y->query_id);
	CMP(x->fault_mapping, y->fault_mapping);
	CMP(x->n, y->n);
	return memcmp(x->frames, y->frames, x->n * sizeof(x->frames[0]));
}

static unsigned long hash_string(const void *k)
{
	const char *s = ((const struct hstring *)k)->s;

	return vm_memo_bytes_key(s, strlen(s));
}

static unsigned long hash_mapping(const void *k)
{
	const struct hmapping *m = k;

	return vm_memo_hash(vm_memo_hash(m->start, m->end, m->pgoff),
			    ((uint64_t)m->file << 32) | m->build_id, m->kernel);
}

static unsigned long hash_frame(const void *k)
{
	const struct hframe *f = k;

	return vm_memo_hash(f->addr, f->mapping, f->function);
}

static unsigned long hash_stack(const void *k)
{
	const struct hstack *x = k;
	uint64_t h = vm_memo_hash(((uint64_t)x->pid << 32) | x->tid,
				  ((uint64_t)x->comm << 32) | x->backend,
				  ((uint64_t)x->wait_event << 32) | x->n);

	h = vm_memo_hash(h, x->query_id ^ x->fault_mapping,
			 ((uint64_t)x->ident << 32) | x->ctype);
	for (uint32_t i = 0; i < x->n; i += 2)
		h = vm_memo_hash(h, x->frames[i],
				 i + 1 < x->n ? x->frames[i + 1] : 0);
	return h;
}

#define EQ_OF(cmp)                                        \
	static int eq_##cmp(const void *a, const void *b) \
	{                                                 \
		return cmp(a, b) == 0;                    \
	}
EQ_OF(cmp_string)
EQ_OF(cmp_mapping)
EQ_OF(cmp_frame)
EQ_OF(cmp_stack)

/* Empty tables, their indexes of the kinds they hold. */
static void tables_init(struct tables *t)
{
	memset(t, 0, sizeof(*t));
	vm_intern_init(&t->string_index, INDEX_START, hash_string,
		       eq_cmp_string);
	vm_intern_init(&t->mapping_index, INDEX_START, hash_mapping,
		       eq_cmp_mapping);
	vm_intern_init(&t->frame_index, INDEX_START, hash_frame, eq_cmp_frame);
	vm_intern_init(&t->stack_index, INDEX_START, hash_stack, eq_cmp_stack);
}

/*
 * Find key in the index, or add a malloc'd copy of it (size bytes) as
 * entry id of the array, counting in *bytes what it and the index's
 * growth take.  Returns the id, or -1 when out of memory.
 */
static int64_t intern(struct vm_intern *index, void ***array, size_t *n,
		      size_t *cap, const void *key, size_t size,
		      uint64_t *bytes)
{
	const uint32_t *found;
	unsigned long h;
	void *copy;
	long grew;

	found = vm_intern_find(index, key, &h, NULL);
	if (found)
		return *found;
	if (*n >= UINT32_MAX ||
	    vm_array_reserve((void **)array, cap, *n + 1, sizeof(void *)))
		return -1;
	copy = malloc(size);
	if (!copy)
		return -1;
	memcpy(copy, key, size);
	*(uint32_t *)copy = (uint32_t)*n;
	grew = vm_intern_add(index, copy, NULL, h);
	if (grew < 0) {
		free(copy);
		return -1;
	}
	(*array)[*n] = copy;
	*bytes += size + ENTRY_BYTES + sizeof(void *) + (uint64_t)grew;
	return (int64_t)(*n)++;
}

/* A string's id + 1; 0 for NULL, -1 when out of memory. */
static int64_t intern_string(struct tables *t, const char *s)
{
	size_t len;
	struct hstring *key;
	int64_t id;

	if (!s)
		return 0;
	len = strlen(s);
	key = malloc(sizeof(*key) + len + 1);
	if (!key)
		return -1;
	memcpy(key->s, s, len + 1);
	id = intern(&t->string_index, (void ***)&t->strings, &t->n_strings,
		    &t->cap_strings, key, sizeof(*key) + len + 1, &t->bytes);
	free(key);
	return id < 0 ? -1 : id + 1;
}

static int64_t intern_mapping(struct tables *t, const struct vm_sym_mapping *m)
{
	struct hmapping key = { 0 };
	int64_t file, build_id, id;

	if (!m)
		return 0;
	file = intern_string(t, m->file ? m->file : "");
	build_id = intern_string(t, m->build_id);
	if (file < 0 || build_id < 0)
		return -1;
	key.start = m->start;
	key.end = m->end;
	key.pgoff = m->pgoff;
	key.file = (uint32_t)file;
	key.build_id = (uint32_t)build_id;
	key.kernel = m->kernel;
	id = intern(&t->mapping_index, (void ***)&t->mappings, &t->n_mappings,
		    &t->cap_mappings, &key, sizeof(key), &t->bytes);
	if (id < 0)
		return -1;
	if (m->has_functions)
		t->mappings[id]->has_functions = true;
	return id + 1;
}

static int64_t intern_frame(struct tables *t, uint64_t addr, int64_t mapping,
			    int64_t function)
{
	struct hframe key = { .addr = addr,
			      .mapping = (uint32_t)mapping,
			      .function = (uint32_t)function };

	return intern(&t->frame_index, (void ***)&t->frames, &t->n_frames,
		      &t->cap_frames, &key, sizeof(key), &t->bytes);
}

static int64_t intern_stack(struct tables *t, const struct hstack *key)
{
	return intern(&t->stack_index, (void ***)&t->stacks, &t->n_stacks,
		      &t->cap_stacks, key,
		      sizeof(*key) + key->n * sizeof(key->frames[0]),
		      &t->bytes);
}

static void tables_free(struct tables *t)
{
	/* The indexes point at the entries the arrays own. */
	vm_intern_free(&t->string_index, NULL);
	vm_intern_free(&t->mapping_index, NULL);
	vm_intern_free(&t->frame_index, NULL);
	vm_intern_free(&t->stack_index, NULL);
	for (size_t i = 0; i < t->n_strings; i++)
		free(t->strings[i]);
	for (size_t i = 0; i < t->n_mappings; i++)
		free(t->mappings[i]);
	for (size_t i = 0; i < t->n_frames; i++)
		free(t->frames[i]);
	for (size_t i = 0; i < t->n_stacks; i++)
		free(t->stacks[i]);
	free(t->strings);
	free(t->mappings);
	free(t->frames);
	free(t->stacks);
	memset(t, 0, sizeof(*t));
}

static const char *string_of(const struct tables *t, uint32_t id1)
{
	return id1 ? t->strings[id1 - 1]->s : NULL;
}

/* The pointers of the window being put in change. */
static void forget_pointers(struct vm_history *h)
{
	vm_memo_clear(&h->ids);
}

/* The ids change. */
static void forget_ids(struct vm_history *h)
{
	vm_memo_clear(&h->ids);
	vm_memo_clear(&h->content_ids);
	vm_memo_clear(&h->frame_ids);
}

/* intern_string() through the memo by the string's bytes. */
static int64_t cached_string(struct vm_history *h, const char *s)
{
	size_t len;
	uint64_t key, v;
	int64_t id;

	if (!s)
		return 0;
	len = strlen(s);
	key = vm_memo_bytes_key(s, len);
	if (vm_memo_get(&h->content_ids, key, len, ID_STRING_BYTES, &v) &&
	    v <= h->t.n_strings && !strcmp(h->t.strings[v - 1]->s, s))
		return (int64_t)v;
	id = intern_string(&h->t, s);
	if (id > 0)
		vm_memo_put(&h->content_ids, key, len, ID_STRING_BYTES,
			    (uint64_t)id);
	return id;
}

/* intern_mapping() and intern_string() through the memo. */
static int64_t cached_mapping(struct vm_history *h,
			      const struct vm_sym_mapping *m)
{
	uint64_t v;
	int64_t id;

	if (!m)
		return 0;
	if (vm_memo_get(&h->ids, (uintptr_t)m, ID_MAPPING, 0, &v))
		return (int64_t)v;
	id = intern_mapping(&h->t, m);
	if (id > 0)
		vm_memo_put(&h->ids, (uintptr_t)m, ID_MAPPING, 0, (uint64_t)id);
	return id;
}

static int64_t cached_function(struct vm_history *h, const char *s)
{
	uint64_t v;
	int64_t id;

	if (!s)
		return 0;
	if (vm_memo_get(&h->ids, (uintptr_t)s, ID_STRING, 0, &v))
		return (int64_t)v;
	id = cached_string(h, s);
	if (id > 0)
		vm_memo_put(&h->ids, (uintptr_t)s, ID_STRING, 0, (uint64_t)id);
	return id;
}

static int64_t cached_frame(struct vm_history *h, uint64_t addr,
			    int64_t mapping, int64_t function)
{
	uint64_t v;
	int64_t id;

	if (vm_memo_get(&h->frame_ids, addr, (uint64_t)mapping,
			(uint64_t)function, &v))
		return (int64_t)v - 1;
	id = intern_frame(&h->t, addr, mapping, function);
	if (id >= 0)
		vm_memo_put(&h->frame_ids, addr, (uint64_t)mapping,
			    (uint64_t)function, (uint64_t)id + 1);
	return id;
}

int vm_history_new(const struct vm_history_config *cfg, struct vm_history **out,
		   struct vm_error *err)
{
	struct vm_history *h = calloc(1, sizeof(*h));

	if (!h)
		return vm_error_set(err, ENOMEM, "out of memory");
	h->cfg = *cfg;
	tables_init(&h->t);
	/* Without memory for the memos, everything is found in the trees. */
	vm_memo_init(&h->ids, HISTORY_MEMO_BITS);
	vm_memo_init(&h->content_ids, HISTORY_MEMO_BITS);
	vm_memo_init(&h->frame_ids, HISTORY_MEMO_BITS);
	pthread_mutex_init(&h->lock, NULL);
	*out = h;
	return 0;
}

void vm_history_free(struct vm_history *h)
{
	if (!h)
		return;
	tables_free(&h->t);
	vm_memo_free(&h->ids);
	vm_memo_free(&h->content_ids);
	vm_memo_free(&h->frame_ids);
	for (size_t i = 0; i < h->n_windows; i++) {
		free(h->windows[i].v);
		free(h->windows[i].notes);
	}
	free(h->windows);
	free(h->pending);
	free(h->pending_notes);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void vm_history_lock(struct vm_history *h)
{
	pthread_mutex_lock(&h->lock);
}

void vm_history_unlock(struct vm_history *h)
{
	pthread_mutex_unlock(&h->lock);
}

void vm_history_begin(struct vm_history *h)
{
	forget_pointers(h);
	h->n_pending = 0;
	free(h->pending_notes);
	h->pending_notes = NULL;
}

void vm_history_abort(struct vm_history *h)
{
	h->n_pending = 0;
	free(h->pending_notes);
	h->pending_notes = NULL;
}

int vm_history_stack(struct vm_history *h, const struct vm_history_labels *l,
		     const struct vm_history_frame_in *frames, size_t n_frames,
		     uint64_t count, uint32_t objects)
{
	struct tables *t = &h->t;
	struct hstack *key;
	int64_t c, b, we, ci, ct, id;

	if (n_frames > UINT32_MAX / 2)
		return -ENOMEM;
	key = calloc(1, sizeof(*key) + n_frames * sizeof(key->frames[0]));
	if (!key)
		return -ENOMEM;
	c = cached_string(h, l->comm && l->comm[0] ? l->comm : NULL);
	/* Interned by the symbolizer, as function names are. */
	b = cached_function(h, l->backend_type);
	we = cached_function(h, l->wait_event);
	ci = cached_function(h, l->context_ident);
	ct = cached_function(h, l->context_type);
	if (c < 0 || b < 0 || we < 0 || ci < 0 || ct < 0)
		goto nomem;
	key->pid = l->pid;
	key->tid = l->tid;
	key->comm = (uint32_t)c;
	key->backend = (uint32_t)b;
	key->wait_event = (uint32_t)we;
	key->ident = (uint32_t)ci;
	key->ctype = (uint32_t)ct;
	key->query_id = l->query_id;
	key->fault_mapping = l->fault_mapping;
	key->n = (uint32_t)n_frames;
	for (size_t i = 0; i < n_frames; i++) {
		int64_t m = cached_mapping(h, frames[i].mapping);
		int64_t f = cached_function(h, frames[i].function);
		int64_t fr;

		if (m < 0 || f < 0)
			goto nomem;
		fr = cached_frame(h, frames[i].addr, m, f);
		if (fr < 0)
			goto nomem;
		key->frames[i] = (uint32_t)fr;
	}
	id = intern_stack(t, key);
	free(key);
	if (id < 0 || vm_grow(h->pending, &h->cap_pending, h->n_pending + 1))
		return -ENOMEM;
	h->pending[h->n_pending++] =
		(struct hentry){ (uint32_t)id, objects, count };
	return 0;
nomem:
	free(key);
	return -ENOMEM;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct hentry *x = a, *y = b;

	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static uint64_t history_bytes(const struct vm_history *h)
{
	return h->t.bytes + h->window_bytes +
	       h->cap_windows * sizeof(struct hwindow);
}

/*
 * Rebuild the tables with only what the windows left use, renumbering the
 * windows' stack ids.
 */
static int compact(struct vm_history *h)
{
	struct tables old = h->t, *t = &h->t;
	int64_t *stack_map =
		calloc(old.n_stacks ? old.n_stacks : 1, sizeof(*stack_map));
	struct vm_history_frame_in *in = NULL;
	struct vm_sym_mapping *maps = NULL;
	size_t cap_in = 0;
	int r = -ENOMEM;

	h->dropped_since_compact = 0;
	forget_ids(h); /* the ids are about to change */
	maps = calloc(old.n_mappings ? old.n_mappings : 1, sizeof(*maps));
	if (!stack_map || !maps)
		goto out;
	for (size_t i = 0; i < old.n_mappings; i++) {
		const struct hmapping *m = old.mappings[i];

		maps[i] = (struct vm_sym_mapping){
			.start = m->start,
			.end = m->end,
			.pgoff = m->pgoff,
			.file = string_of(&old, m->file),
			.kernel = m->kernel,
			.has_functions = m->has_functions,
		};
		snprintf(maps[i].build_id, sizeof(maps[i].build_id), "%s",
			 string_of(&old, m->build_id));
	}
	tables_init(t);
	/* The windows keep the old ids until every stack has its new one. */
	for (size_t w = 0; w < h->n_windows; w++)
		for (size_t e = 0; e < h->windows[w].n; e++) {
			uint32_t sid = h->windows[w].v[e].stack;
			const struct hstack *s = old.stacks[sid];
			struct vm_history_labels l = {
				.pid = s->pid,
				.tid = s->tid,
				.comm = string_of(&old, s->comm),
				.backend_type = string_of(&old, s->backend),
				.wait_event = string_of(&old, s->wait_event),
				.query_id = s->query_id,
				.context_ident = string_of(&old, s->ident),
				.context_type = string_of(&old, s->ctype),
			};
			size_t n_saved;

			if (stack_map[sid])
				continue;
			if (vm_grow(in, &cap_in, s->n ? s->n : 1))
				goto fail;
			for (uint32_t f = 0; f < s->n; f++) {
				const struct hframe *fr =
					old.frames[s->frames[f]];

				in[f] = (struct vm_history_frame_in){
					.addr = fr->addr,
					.mapping =
						fr->mapping ?
							&maps[fr->mapping - 1] :
							NULL,
					.function =
						string_of(&old, fr->function),
				};
			}
			/* vm_history_stack() appends its id to pending. */
			n_saved = h->n_pending;
			r = vm_history_stack(h, &l, in, s->n, 0, 0);
			if (r == 0)
				stack_map[sid] = h->pending[n_saved].stack + 1;
			h->n_pending = n_saved;
			if (r < 0)
				goto fail;
		}
	for (size_t w = 0; w < h->n_windows; w++)
		for (size_t e = 0; e < h->windows[w].n; e++)
			h->windows[w].v[e].stack =
				(uint32_t)(stack_map[h->windows[w].v[e].stack] -
					   1);
	tables_free(&old);
	r = 0;
	goto out;
fail:
	/* Out of memory halfway: keep the old tables, whole. */
	tables_free(t);
	*t = old;
	r = -ENOMEM;
out:
	forget_ids(h); /* maps[] goes, the ids may have changed */
	free(stack_map);
	free(maps);
	free(in);
	return r;
}

static void drop_oldest(struct vm_history *h)
{
	h->window_bytes -= h->windows[0].n * sizeof(struct hentry);
	if (h->windows[0].notes)
		h->window_bytes -= strlen(h->windows[0].notes) + 1;
	free(h->windows[0].v);
	free(h->windows[0].notes);
	memmove(h->windows, h->windows + 1,
		(h->n_windows - 1) * sizeof(h->windows[0]));
	h->n_windows--;
	h->dropped++;
	h->dropped_since_compact++;
}

/*
 * Drop windows beyond the age bound (counted from the newest or now,
 * whichever is earlier), then beyond the byte bound.
 */
static void apply_bounds(struct vm_history *h)
{
	uint64_t newest, horizon, now = vm_clock_ns(CLOCK_REALTIME);

	if (!h->n_windows)
		return;
	newest = h->windows[h->n_windows - 1].w.end_ns;
	horizon = (uint64_t)h->cfg.max_seconds * 1000000000ULL;
	while (h->n_windows > 1 &&
	       vm_history_too_old(h->windows[0].w.end_ns, newest, now, horizon))
		drop_oldest(h);
	if (h->dropped_since_compact >= COMPACT_EVERY)
		compact(h);
	while (history_bytes(h) > h->cfg.max_bytes && h->n_windows > 1) {
		drop_oldest(h);
		/* Compacting for every window dropped would be quadratic. */
		if (h->dropped_since_compact >= h->n_windows / 8 + 1)
			if (compact(h) < 0)
				break;
	}
	if (h->dropped_since_compact && history_bytes(h) > h->cfg.max_bytes)
		compact(h);
}

int vm_history_commit(struct vm_history *h, const struct vm_history_window *w)
{
	struct hwindow *hw;
	size_t n = 0;

	/* The same stack twice (other raw stacks, same frames): one entry. */
	if (h->n_pending)
		qsort(h->pending, h->n_pending, sizeof(h->pending[0]),
		      cmp_entry);
	for (size_t i = 0; i < h->n_pending; i++) {
		if (n && h->pending[n - 1].stack == h->pending[i].stack) {
			struct hentry *e = &h->pending[n - 1];

			e->count =
				vm_sat_add_u64(e->count, h->pending[i].count);
			e->objects = e->objects + h->pending[i].objects <
						     e->objects ?
					     UINT32_MAX :
					     e->objects + h->pending[i].objects;
		} else
			h->pending[n++] = h->pending[i];
	}
	if (vm_grow(h->windows, &h->cap_windows, h->n_windows + 1))
		return -ENOMEM;
	/* Windows arrive in order, but those read from disk may not. */
	size_t at = h->n_windows;
	while (at > 0 && h->windows[at - 1].w.start_ns > w->start_ns)
		at--;
	memmove(h->windows + at + 1, h->windows + at,
		(h->n_windows - at) * sizeof(h->windows[0]));
	hw = &h->windows[at];
	hw->w = *w;
	hw->n = n;
	hw->v = malloc((n ? n : 1) * sizeof(hw->v[0]));
	if (!hw->v) {
		memmove(h->windows + at, h->windows + at + 1,
			(h->n_windows - at) * sizeof(h->windows[0]));
		return -ENOMEM;
	}
	if (n)
		memcpy(hw->v, h->pending, n * sizeof(hw->v[0]));
	hw->notes = h->pending_notes;
	h->pending_notes = NULL;
	if (hw->notes)
		h->window_bytes += strlen(hw->notes) + 1;
	h->n_windows++;
	h->window_bytes += n * sizeof(struct hentry);
	h->n_pending = 0;
	apply_bounds(h);
	return 0;
}

int vm_history_add(struct vm_history *h, const struct vm_history_window *w,
		   const struct vm_symbolized *y, struct vm_error *err)
{
	struct vm_history_frame_in *in = NULL;
	size_t cap_in = 0;
	int r = 0;

	vm_history_lock(h);
	vm_history_begin(h);
	for (size_t i = 0; i < y->n_stacks && r == 0; i++) {
		const struct vm_sym_stack *st = &y->stacks[i];
		struct vm_history_labels l = {
			.pid = st->sample->pid,
			.tid = st->sample->tid,
			.comm = st->sample->comm,
			.backend_type = st->backend_type,
			.wait_event = st->wait_event,
			.query_id = st->sample->query_id,
			.context_ident = st->context_ident,
			.context_type = st->context_type,
			.fault_mapping = st->sample->fault_mapping,
		};
		/* A snapshot's bytes are what is kept of it; its contexts too. */
		bool memory = h->cfg.kind == VM_KIND_MEMORY;
		uint64_t count = memory ? st->sample->value : st->sample->count;
		uint32_t objects = !memory ? 0 :
				   st->sample->count > UINT32_MAX ?
					     UINT32_MAX :
					     (uint32_t)st->sample->count;

		if (vm_grow(in, &cap_in, st->n_frames ? st->n_frames : 1)) {
			r = -ENOMEM;
			break;
		}
		for (size_t f = 0; f < st->n_frames; f++)
			in[f] = (struct vm_history_frame_in){
				.addr = st->frames[f].addr,
				.mapping =
					st->frames[f].mapping ?
						&y->mappings[st->frames[f]
								     .mapping -
							     1] :
						NULL,
				.function = st->frames[f].function,
			};
		r = vm_history_stack(h, &l, in, st->n_frames, count, objects);
	}
	/* A snapshot's comment says what its walks cut: kept with it. */
	if (r == 0 && h->cfg.kind == VM_KIND_MEMORY && y->samples &&
	    y->samples->notes &&
	    !(h->pending_notes = strdup(y->samples->notes)))
		r = -ENOMEM;
	if (r == 0)
		r = vm_history_commit(h, w);
	else
		vm_history_abort(h);
	vm_history_unlock(h);
	free(in);
	if (r < 0)
		return vm_error_set(err, -r,
				    "out of memory keeping a profile window");
	return 0;
}

int vm_history_get_index(struct vm_history *h, struct vm_history_index *idx)
{
	memset(idx, 0, sizeof(*idx));
	vm_history_lock(h);
	idx->v = malloc((h->n_windows ? h->n_windows : 1) * sizeof(idx->v[0]));
	if (!idx->v) {
		vm_history_unlock(h);
		return -ENOMEM;
	}
	for (size_t i = 0; i < h->n_windows; i++)
		idx->v[i] = h->windows[i].w;
	idx->n = h->n_windows;
	idx->bytes = history_bytes(h);
	idx->dropped = h->dropped;
	vm_history_unlock(h);
	return 0;
}

void vm_history_usage(struct vm_history *h, uint64_t *bytes, uint64_t *dropped)
{
	vm_history_lock(h);
	*bytes = history_bytes(h);
	*dropped = h->dropped;
	vm_history_unlock(h);
}

/* What a merged profile owns while the callback runs. */
struct merged {
	struct vm_samples samples;
	struct vm_symbolized y;
	uint32_t *mapping_out; /* per mapping id: index + 1 in y.mappings */
};

static void merged_free(struct merged *m)
{
	vm_strpool_free(&m->y.strings);
	for (size_t i = 0; i < m->y.n_stacks; i++)
		free(m->y.stacks[i].frames);
	free(m->y.stacks);
	free(m->y.mappings);
	free(m->samples.v);
	free(m->samples.notes);
	free(m->mapping_out);
}

/*
 * String id1 of t copied into m (NULL for none, or when out of memory):
 * the merged profile is encoded after the history's lock is let go, when
 * a compaction may free t's strings.
 */
static const char *copy_of(struct merged *m, const struct tables *t,
			   uint32_t id1)
{
	const char *s = string_of(t, id1);

	return s ? vm_symbolized_intern(&m->y, s) : NULL;
}

static uint32_t out_mapping(struct vm_history *h, struct merged *m,
			    uint32_t id1)
{
	const struct hmapping *hm;
	struct vm_sym_mapping *sm;

	if (!id1)
		return 0;
	if (m->mapping_out[id1 - 1])
		return m->mapping_out[id1 - 1];
	hm = h->t.mappings[id1 - 1];
	sm = &m->y.mappings[m->y.n_mappings++];
	*sm = (struct vm_sym_mapping){
		.start = hm->start,
		.end = hm->end,
		.pgoff = hm->pgoff,
		.file = copy_of(m, &h->t, hm->file) ?: "",
		.kernel = hm->kernel,
		.has_functions = hm->has_functions,
	};
	snprintf(sm->build_id, sizeof(sm->build_id), "%s",
		 string_of(&h->t, hm->build_id));
	m->mapping_out[id1 - 1] = (uint32_t)m->y.n_mappings;
	return m->mapping_out[id1 - 1];
}

/*
 * One stack of an answer: its count and value as the sample model has
 * them (a memory snapshot's bytes are its value, its contexts its count).
 */
struct out_entry {
	uint32_t stack;
	uint64_t count, value;
};

/*
 * The stacks of out[] as the encoders' model; path_only leaves out the
 * labels that change while a context stays (wait event, query id, ident).
 */
static int build_merged(struct vm_history *h, const struct out_entry *out,
			size_t n, bool path_only, struct merged *m)
{
	struct tables *t = &h->t;

	m->samples.v = calloc(n ? n : 1, sizeof(m->samples.v[0]));
	m->y.stacks = calloc(n ? n : 1, sizeof(m->y.stacks[0]));
	m->y.mappings = calloc(t->n_mappings ? t->n_mappings : 1,
			       sizeof(m->y.mappings[0]));
	m->mapping_out = calloc(t->n_mappings ? t->n_mappings : 1,
				sizeof(m->mapping_out[0]));
	if (!m->samples.v || !m->y.stacks || !m->y.mappings || !m->mapping_out)
		return -ENOMEM;
	m->y.samples = &m->samples;
	m->samples.kind = h->cfg.kind;
	if (h->cfg.kind == VM_KIND_FAULTS) {
		m->samples.fault_period = h->cfg.fault_period;
		m->samples.page_size = h->cfg.page_size;
	}
	for (size_t k = 0; k < n; k++) {
		const struct hstack *s = t->stacks[out[k].stack];
		struct vm_sample *v = &m->samples.v[k];
		struct vm_sym_stack *st = &m->y.stacks[k];

		v->pid = s->pid;
		v->tid = s->tid;
		v->count = out[k].count;
		v->value = out[k].value;
		v->fault_mapping = s->fault_mapping;
		v->query_id = path_only ? 0 : s->query_id;
		snprintf(v->comm, sizeof(v->comm), "%s",
			 s->comm ? string_of(t, s->comm) : "");
		st->sample = v;
		st->backend_type = copy_of(m, t, s->backend);
		st->wait_event = path_only ? NULL :
					     copy_of(m, t, s->wait_event);
		st->context_ident = path_only ? NULL : copy_of(m, t, s->ident);
		st->context_type = copy_of(m, t, s->ctype);
		if ((s->backend && !st->backend_type) ||
		    (s->ctype && !st->context_type) ||
		    (!path_only && ((s->wait_event && !st->wait_event) ||
				    (s->ident && !st->context_ident))))
			return -ENOMEM;
		st->frames = calloc(s->n ? s->n : 1, sizeof(st->frames[0]));
		if (!st->frames)
			return -ENOMEM;
		st->n_frames = s->n;
		for (uint32_t f = 0; f < s->n; f++) {
			const struct hframe *fr = t->frames[s->frames[f]];

			st->frames[f].addr = fr->addr;
			st->frames[f].mapping = out_mapping(h, m, fr->mapping);
			st->frames[f].function = copy_of(m, t, fr->function);
			if (fr->function && !st->frames[f].function)
				return -ENOMEM;
		}
		m->samples.n = m->y.n_stacks = k + 1;
	}
	return 0;
}

/* One more comment line of an answer (printf); -ENOMEM. */
static int answer_note(struct merged *m, const char *notes)
{
	return notes ? vm_samples_note(&m->samples, "%s", notes) : 0;
}

/*
 * Take the lock for one more answer, if one more may be built
 * (VM_HISTORY_MERGES_MAX); else -EBUSY with a sentence, unlocked.
 */
static int answer_begin(struct vm_history *h, struct vm_error *err)
{
	vm_history_lock(h);
	if (h->merges >= VM_HISTORY_MERGES_MAX) {
		vm_history_unlock(h);
		return vm_error_set(
			err, EBUSY,
			"%d merged answers are being built already; ask again when one is done",
			VM_HISTORY_MERGES_MAX);
	}
	h->merges++;
	return 0;
}

/*
 * Under the lock: hand m to fn without the lock (sealing, /healthz and
 * other queries wait for nothing while it encodes; m owns all it points
 * to), then end the answer and let the lock go.
 */
static int answer_end(struct vm_history *h, struct merged *m,
		      const struct vm_history_window *span,
		      vm_history_use_fn *fn, void *ctx, struct vm_error *err)
{
	int r = 0;

	if (fn) {
		m->samples.frequency = span->frequency;
		m->samples.time_nanos = span->start_ns;
		m->samples.duration_nanos = span->end_ns - span->start_ns;
		m->samples.lost_stacks = span->lost;
		vm_history_unlock(h);
		r = fn(&m->y, span, ctx, err);
		vm_history_lock(h);
	}
	h->merges--;
	vm_history_unlock(h);
	merged_free(m);
	return r;
}

/*
 * Whether w overlaps [from, until), w taken to the second as the index
 * shows it: a query with a window's start and end from the index gets
 * that window, not a sliver of its neighbours too.  A window shorter than
 * that (the last one, sealed at shutdown) counts as its whole second.
 */
static bool overlaps(const struct vm_history_window *w, uint64_t from,
		     uint64_t until)
{
	uint64_t start = w->start_ns / 1000000000u * 1000000000u;
	uint64_t end = w->end_ns / 1000000000u * 1000000000u;

	if (end <= start)
		end = start + 1000000000u;
	return start < until && end > from;
}

int vm_history_merge(struct vm_history *h, uint64_t from_ns, uint64_t until_ns,
		     vm_history_use_fn *fn, void *ctx, struct vm_error *err)
{
	struct vm_history_window span = { 0 };
	struct merged m = { 0 };
	struct out_entry *out = NULL;
	uint64_t *counts = NULL, *objects = NULL;
	size_t n_used = 0, n_windows = 0;
	int r;

	r = answer_begin(h, err);
	if (r < 0)
		return r;
	counts = calloc(h->t.n_stacks ? h->t.n_stacks : 1, sizeof(*counts));
	objects = calloc(h->t.n_stacks ? h->t.n_stacks : 1, sizeof(*objects));
	if (!counts || !objects) {
		r = vm_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < h->n_windows; i++) {
		const struct hwindow *w = &h->windows[i];

		if (!overlaps(&w->w, from_ns, until_ns))
			continue;
		if (!n_windows++) {
			span = w->w;
			span.samples = span.lost = 0;
		}
		span.end_ns = w->w.end_ns;
		span.samples = vm_sat_add_u64(span.samples, w->w.samples);
		span.lost = vm_sat_add_u64(span.lost, w->w.lost);
		for (size_t e = 0; e < w->n; e++) {
			uint32_t sid = w->v[e].stack;

			if (!counts[sid] && !objects[sid])
				n_used++;
			counts[sid] =
				vm_sat_add_u64(counts[sid], w->v[e].count);
			objects[sid] += w->v[e].objects;
		}
	}
	if (!n_windows) {
		r = vm_error_set(
			err, ENOENT,
			"no profile window is stored between the times given");
		goto out;
	}
	out = calloc(n_used ? n_used : 1, sizeof(*out));
	if (!out) {
		r = vm_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	n_used = 0;
	for (size_t sid = 0; sid < h->t.n_stacks; sid++) {
		if (!counts[sid] && !objects[sid])
			continue;
		out[n_used].stack = (uint32_t)sid;
		if (h->cfg.kind == VM_KIND_MEMORY) {
			out[n_used].value = counts[sid];
			out[n_used].count = objects[sid];
		} else {
			out[n_used].count = counts[sid];
		}
		/* A faults window keeps its faults: its bytes are pages. */
		if (h->cfg.kind == VM_KIND_FAULTS)
			out[n_used].value =
				vm_sat_mul_u64(counts[sid], h->cfg.page_size);
		n_used++;
	}
	free(counts);
	free(objects);
	counts = objects = NULL;
	if (build_merged(h, out, n_used, false, &m) < 0 ||
	    (h->cfg.kind == VM_KIND_FAULTS &&
	     vm_samples_note(
		     &m.samples,
		     "vmtools: faults windows merged: one sample every %u page faults; bytes are faults x %u-byte pages",
		     h->cfg.fault_period, h->cfg.page_size) < 0)) {
		r = vm_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	free(out);
	return answer_end(h, &m, &span, fn, ctx, err);
out:
	free(counts);
	free(objects);
	free(out);
	answer_end(h, &m, &span, NULL, NULL, err);
	return r;
}

/* The window nearest at: the one holding it, else the closest in time. */
static size_t nearest(const struct vm_history *h, uint64_t at)
{
	size_t best = 0;
	uint64_t best_d = UINT64_MAX;

	for (size_t i = 0; i < h->n_windows; i++) {
		const struct vm_history_window *w = &h->windows[i].w;
		uint64_t d = at < w->start_ns ? w->start_ns - at :
			     at > w->end_ns   ? at - w->end_ns :
						0;

		if (d < best_d) {
			best_d = d;
			best = i;
		}
	}
	return best;
}

int vm_history_nearest(struct vm_history *h, uint64_t at_ns,
		       vm_history_use_fn *fn, void *ctx, struct vm_error *err)
{
	struct merged m = { 0 };
	struct vm_history_window span;
	const struct hwindow *w;
	struct out_entry *out;
	char when[32];
	int r;

	r = answer_begin(h, err);
	if (r < 0)
		return r;
	if (!h->n_windows) {
		r = vm_error_set(err, ENOENT, "no snapshot is stored yet");
		answer_end(h, &m, NULL, NULL, NULL, err);
		return r;
	}
	w = &h->windows[nearest(h, at_ns)];
	span = w->w;
	out = calloc(w->n ? w->n : 1, sizeof(*out));
	for (size_t e = 0; out && e < w->n; e++) {
		bool memory = h->cfg.kind == VM_KIND_MEMORY;

		out[e] = (struct out_entry){
			.stack = w->v[e].stack,
			.count = memory ? w->v[e].objects : w->v[e].count,
			.value = memory ? w->v[e].count : 0,
		};
	}
	vm_history_format_rfc3339(w->w.start_ns, when);
	if (!out || build_merged(h, out, w->n, false, &m) < 0 ||
	    vm_samples_note(
		    &m.samples,
		    "vmtools: the snapshot taken at %s, the nearest to the time asked",
		    when) < 0 ||
	    answer_note(&m, w->notes) < 0) {
		free(out);
		answer_end(h, &m, NULL, NULL, NULL, err);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	free(out);
	return answer_end(h, &m, &span, fn, ctx, err);
}

/* One stack of two snapshots, signed: -1 the earlier's, +1 the later's. */
struct side_entry {
	uint32_t stack;
	int sign;
	int64_t bytes, objects;
};

/* Same pid, same context path (frames), whatever the labels. */
static int cmp_path(const void *a, const void *b, void *arg)
{
	const struct tables *t = arg;
	const struct side_entry *ea = a, *eb = b;
	const struct hstack *x = t->stacks[ea->stack],
			    *y = t->stacks[eb->stack];

	CMP(x->pid, y->pid);
	CMP(x->n, y->n);
	return memcmp(x->frames, y->frames, x->n * sizeof(x->frames[0]));
}

static int64_t clamp_signed(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/*
 * The later window minus the earlier, per pid and path: out[] gets one
 * entry per path that changed, its labels from the later window when the
 * path is in it.  Returns how many, or -ENOMEM.
 */
static ssize_t difference(const struct vm_history *h, const struct hwindow *a,
			  const struct hwindow *b, struct out_entry **out)
{
	size_t n = a->n + b->n, k = 0;
	struct side_entry *v = calloc(n ? n : 1, sizeof(*v));

	*out = calloc(n ? n : 1, sizeof(**out));
	if (!v || !*out) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct hentry *e = i < a->n ? &a->v[i] : &b->v[i - a->n];
		int sign = i < a->n ? -1 : 1;

		v[i] = (struct side_entry){ e->stack, sign,
					    sign * clamp_signed(e->count),
					    sign * (int64_t)e->objects };
	}
	qsort_r(v, n, sizeof(*v), cmp_path, (void *)&h->t);
	for (size_t i = 0; i < n;) {
		int64_t bytes = 0, objects = 0;
		uint32_t label_of = v[i].stack;
		size_t j = i;

		for (; j < n && cmp_path(&v[i], &v[j], (void *)&h->t) == 0;
		     j++) {
			bytes = vm_sat_add_i64(bytes, v[j].bytes);
			objects += v[j].objects;
			if (v[j].sign > 0)
				label_of = v[j].stack;
		}
		if (bytes || objects)
			(*out)[k++] = (struct out_entry){ label_of,
							  (uint64_t)objects,
							  (uint64_t)bytes };
		i = j;
	}
	free(v);
	return (ssize_t)k;
}

int vm_history_growth(struct vm_history *h, uint64_t from_ns, uint64_t until_ns,
		      vm_history_use_fn *fn, void *ctx, struct vm_error *err)
{
	struct merged m = { 0 };
	struct vm_history_window span;
	const struct hwindow *a, *b;
	struct out_entry *out = NULL;
	char ta[32], tb[32];
	ssize_t n;
	int r;

	r = answer_begin(h, err);
	if (r < 0)
		return r;
	a = h->n_windows ? &h->windows[nearest(h, from_ns)] : NULL;
	b = h->n_windows ? &h->windows[nearest(h, until_ns)] : NULL;
	if (a)
		vm_history_format_rfc3339(a->w.start_ns, ta);
	if (!a || a == b) {
		r = a ? vm_error_set(
				err, ENOENT,
				"one snapshot only (taken at %s) is the nearest to both times: ask for times further apart, or wait for the next snapshot",
				ta) :
			vm_error_set(err, ENOENT, "no snapshot is stored yet");
		answer_end(h, &m, NULL, NULL, NULL, err);
		return r;
	}
	vm_history_format_rfc3339(b->w.start_ns, tb);
	span = a->w;
	span.end_ns = b->w.end_ns;
	n = difference(h, a, b, &out);
	if (n < 0 || build_merged(h, out, (size_t)n, true, &m) < 0 ||
	    vm_samples_note(
		    &m.samples,
		    "vmtools: growth: the snapshot taken at %s (the nearest to from) subtracted from the one taken at %s (the nearest to until), per pid and context path; a negative value is memory given back; paths that did not change are left out",
		    ta, tb) < 0 ||
	    answer_note(&m, b->notes) < 0) {
		free(out);
		answer_end(h, &m, NULL, NULL, NULL, err);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	free(out);
	m.samples.signed_values = true;
	return answer_end(h, &m, &span, fn, ctx, err);
}
