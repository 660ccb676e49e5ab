// SPDX-License-Identifier: Apache-2.0
/*
 * pg_memctx.c - the walk of a PostgreSQL process's memory-context tree
 * over a callback that reads the target's memory (pg_memctx.h), and the
 * context tags of each major version.
 *
 * The walk goes a round at a time: every node pending (the root, then the
 * first children and next siblings of the nodes of the round before) is
 * read in one call of the reader, with the names and idents of the nodes
 * kept by the call before.  So a tree of n nodes costs about as many
 * calls as its depth plus its longest list of siblings, each reading many
 * nodes, never one call per node.  A node is kept when its address was a user-space, aligned
 * pointer, it could be read whole, its tag is one of the version's, its
 * parent and previous sibling are the ones it was reached from, and its
 * address was not seen before; else the tree changed under the walk (or is
 * not a tree), the rest of that list is not followed, and the whole walk
 * is made again, up to lim->tries times.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/samples/pg_memctx.h"
#include "common/array.h"
#include "common/escape.h"

/* Values read off each build: tests/integration/37-pg-memctx-tags.sh. */
static const struct vm_memctx_tags tags_by_major[] = {
	{ 15, { 0xdf, 0xe1, 0xe0, 0 } },
	{ 16, { 0x1c2, 0x1c3, 0x1c4, 0 } },
	{ 17, { 0x1d5, 0x1d6, 0x1d7, 0x1d8 } },
	{ 18, { 0x1da, 0x1db, 0x1dc, 0x1dd } },
};

const struct vm_memctx_tags *vm_memctx_tags(unsigned major)
{
	for (size_t i = 0; i < sizeof(tags_by_major) / sizeof(tags_by_major[0]);
	     i++)
		if (tags_by_major[i].major == major)
			return &tags_by_major[i];
	return NULL;
}

const char *vm_memctx_type_name(enum vm_memctx_type t)
{
	static const char *const names[VM_MEMCTX_TYPES] = {
		[VM_MEMCTX_ASET] = "AllocSet",
		[VM_MEMCTX_GENERATION] = "Generation",
		[VM_MEMCTX_SLAB] = "Slab",
		[VM_MEMCTX_BUMP] = "Bump",
	};
	return (unsigned)t < VM_MEMCTX_TYPES ? names[t] : "unknown";
}

/*
 * Where user space ends: below 2^47 on x86-64 (4-level tables), 2^48 on
 * arm64 (48-bit addresses with 4 KiB pages: its libraries and stacks are
 * mapped just below 2^48).
 */
#if defined(__aarch64__)
#define USER_END ((uint64_t)1 << 48)
#else
#define USER_END ((uint64_t)1 << 47)
#endif
#define PAGE 4096u
/* More than any process could have malloc'd: a node saying so is not one. */
#define MAX_ALLOCATED USER_END

static bool user_range(uint64_t addr, uint64_t len)
{
	return addr >= PAGE && addr < USER_END && len <= USER_END - addr;
}

/* A node's address: in user space and aligned as malloc aligns. */
static bool node_pointer(uint64_t addr)
{
	return user_range(addr, VM_MEMCTX_NODE_SIZE) && !(addr & 7);
}

/* A node still to read, and where it was reached from. */
struct pending {
	uint64_t addr;
	uint64_t parent_addr, prev_addr; /* what it must point back to */
	uint32_t parent; /* index of the parent, VM_MEMCTX_NONE: root */
	uint32_t depth;
};

/* The addresses seen in one walk: open addressing, load at most half. */
struct seen {
	uint64_t *v;
	size_t cap, n;
};

static size_t seen_slot(const struct seen *s, uint64_t addr)
{
	uint64_t h = addr * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 17) & (s->cap - 1);

	while (s->v[i] && s->v[i] != addr)
		i = (i + 1) & (s->cap - 1);
	return i;
}

/* 1: added; 0: seen before; -ENOMEM. */
static int seen_add(struct seen *s, uint64_t addr)
{
	if ((s->n + 1) * 2 > s->cap) {
		struct seen g = { .cap = s->cap ? s->cap * 2 : 1024 };

		g.v = calloc(g.cap, sizeof(*g.v));
		if (!g.v)
			return -ENOMEM;
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i])
				g.v[seen_slot(&g, s->v[i])] = s->v[i];
		g.n = s->n;
		free(s->v);
		*s = g;
	}
	size_t i = seen_slot(s, addr);

	if (s->v[i])
		return 0;
	s->v[i] = addr;
	s->n++;
	return 1;
}

/* One walk's state. */
struct walk {
	const struct vm_memctx_tags *tags;
	vm_memctx_read_fn read;
	void *arg;
	struct vm_memctx_limits lim;
	struct vm_memctx_tree *t;
	struct seen seen;
	struct pending *q; /* pending of this round, then of the next */
	size_t nq, cap_q;
	struct pending *next;
	size_t nnext, cap_next;
	struct vm_memctx_iov *iov;
	uint8_t *buf; /* VM_MEMCTX_BATCH nodes */
	/* The nodes kept whose names are not read yet: from names_first */
	size_t names_first;
	uint64_t *ptrs; /* their name and ident pointers */
	char (*text)[VM_MEMCTX_NAME_MAX]; /* what was read of each */
	size_t *len; /* the bytes of each read */
};

static uint64_t get64(const uint8_t *p, size_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

static uint32_t get32(const uint8_t *p, size_t off)
{
	uint32_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

/* Note the first thing refused on this try, for the comment. */
__attribute__((format(printf, 2, 3))) static void refuse(struct walk *w,
							 const char *fmt, ...)
{
	va_list ap;

	w->t->bad++;
	if (w->t->why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(w->t->why, sizeof(w->t->why), fmt, ap);
	va_end(ap);
}

static int push(struct walk *w, uint64_t addr, uint64_t parent_addr,
		uint64_t prev_addr, uint32_t parent, uint32_t depth)
{
	if (!node_pointer(addr)) {
		refuse(w,
		       "a context pointer 0x%llx is not an aligned user-space address",
		       (unsigned long long)addr);
		return 0;
	}
	if (vm_grow(w->next, &w->cap_next, w->nnext + 1))
		return -ENOMEM;
	w->next[w->nnext++] =
		(struct pending){ addr, parent_addr, prev_addr, parent, depth };
	return 0;
}

static int tag_type(const struct vm_memctx_tags *tags, uint32_t tag)
{
	for (int i = 0; i < VM_MEMCTX_TYPES; i++)
		if (tags->tag[i] && tags->tag[i] == tag)
			return i;
	return -1;
}

/*
 * Append s[0..len) escaped to the tree's names, cut marking it so, within
 * the bound: its offset, or VM_MEMCTX_NONE when the bound is reached.
 */
static uint32_t keep_name(struct walk *w, const char *s, size_t len, bool cut)
{
	struct vm_memctx_tree *t = w->t;
	size_t need = len * 4 + sizeof("...");
	size_t off = t->names_len;

	if (off + need > w->lim.name_bytes || off + need >= VM_MEMCTX_NONE) {
		t->cut_names++;
		return VM_MEMCTX_NONE;
	}
	if (vm_grow(t->names, &t->names_cap, off + need))
		return VM_MEMCTX_NONE;
	size_t n = vm_escape(t->names + off, need, s, len, VM_ESCAPE_TEXT);

	if (cut) {
		memcpy(t->names + off + n, "...", 4);
		n += 3;
		t->cut_names++;
	}
	t->names_len += n + 1;
	return (uint32_t)off;
}

/*
 * The reads of the names and idents of nodes [w->names_first, t->n),
 * into v: each up to the end of its page.  They go to the reader with the
 * next round's nodes, one call for both.  Their count.
 */
static size_t name_reads(struct walk *w, struct vm_memctx_iov *v)
{
	size_t n = (w->t->n - w->names_first) * 2, k = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t a = w->ptrs[i];
		size_t l = PAGE - (a & (PAGE - 1));

		w->len[i] = 0;
		if (!a || !user_range(a, 1))
			continue;
		if (l > VM_MEMCTX_NAME_MAX)
			l = VM_MEMCTX_NAME_MAX;
		v[k++] = (struct vm_memctx_iov){ a, w->text[i], l, 0 };
	}
	return k;
}

/*
 * The names read by v (as name_reads made them) kept: when no NUL ended
 * one at its page's end, the rest up to VM_MEMCTX_NAME_MAX is read from
 * the next page first (v2, room for as many).
 */
static int keep_names(struct walk *w, struct vm_memctx_iov *v,
		      struct vm_memctx_iov *v2)
{
	struct vm_memctx_tree *t = w->t;
	size_t first = w->names_first, n = (t->n - first) * 2, k2 = 0;
	char(*text)[VM_MEMCTX_NAME_MAX] = w->text;
	const uint64_t *ptrs = w->ptrs;
	size_t *len = w->len;
	int err;

	w->names_first = t->n;
	for (size_t i = 0, j = 0; i < n; i++) {
		if (!ptrs[i] || !user_range(ptrs[i], 1))
			continue;
		len[i] = v[j].got;
		if (v[j].got == v[j].len && v[j].len < VM_MEMCTX_NAME_MAX &&
		    !memchr(text[i], 0, v[j].len) &&
		    user_range(v[j].addr + v[j].len, 1))
			v2[k2++] = (struct vm_memctx_iov){
				v[j].addr + v[j].len, text[i] + v[j].len,
				VM_MEMCTX_NAME_MAX - v[j].len, 0
			};
		j++;
	}
	if (k2 && (err = w->read(w->arg, v2, k2)) < 0)
		return err;
	for (size_t i = 0, j = 0; i < n && j < k2; i++)
		if (v2[j].buf == text[i] + len[i])
			len[i] += v2[j++].got;
	for (size_t i = 0; i < n; i++) {
		struct vm_memctx_node *node = &t->v[first + i / 2];
		uint32_t *to = i % 2 ? &node->ident : &node->name;
		char *end;

		if (!ptrs[i])
			continue;
		end = memchr(text[i], 0, len[i]);
		if (!end && len[i] < VM_MEMCTX_NAME_MAX) {
			/* Not readable to its end: said, not guessed. */
			t->cut_names++;
			if (i % 2 == 0)
				*to = keep_name(w, "[unreadable]", 12, false);
			continue;
		}
		*to = keep_name(w, text[i],
				end ? (size_t)(end - text[i]) : len[i], !end);
	}
	return 0;
}

/* The names of the last nodes kept, read on their own. */
static int flush_names(struct walk *w)
{
	size_t k;
	int err;

	if (w->names_first >= w->t->n)
		return 0;
	k = name_reads(w, w->iov);
	if (k && (err = w->read(w->arg, w->iov, k)) < 0)
		return err;
	return keep_names(w, w->iov, w->iov + k);
}

/* One round: read every pending node, keep those that pass. */
static int round_of(struct walk *w)
{
	struct vm_memctx_tree *t = w->t;
	uint64_t *ptrs = w->ptrs;
	size_t done = 0;
	int err;

	while (done < w->nq) {
		size_t n = w->nq - done, kept = 0, k;

		if (n > VM_MEMCTX_BATCH)
			n = VM_MEMCTX_BATCH;
		for (size_t i = 0; i < n; i++)
			w->iov[i] = (struct vm_memctx_iov){
				w->q[done + i].addr,
				w->buf + i * VM_MEMCTX_NODE_SIZE,
				VM_MEMCTX_NODE_SIZE, 0
			};
		/* The names of the nodes kept before, in the same call. */
		k = name_reads(w, w->iov + n);
		if ((err = w->read(w->arg, w->iov, n + k)) < 0)
			return err;
		if ((err = keep_names(w, w->iov + n, w->iov + n + k)) < 0)
			return err;
		for (size_t i = 0; i < n; i++) {
			const struct pending *p = &w->q[done + i];
			const uint8_t *b = w->buf + i * VM_MEMCTX_NODE_SIZE;
			int type;

			if (w->iov[i].got < VM_MEMCTX_NODE_SIZE) {
				refuse(w,
				       "the context at 0x%llx could not be read",
				       (unsigned long long)p->addr);
				continue;
			}
			type = tag_type(w->tags, get32(b, VM_MEMCTX_OFF_TYPE));
			if (type < 0) {
				refuse(w,
				       "the context at 0x%llx has tag %u, not one of PostgreSQL %u's",
				       (unsigned long long)p->addr,
				       get32(b, VM_MEMCTX_OFF_TYPE),
				       w->tags->major);
				continue;
			}
			if (get64(b, VM_MEMCTX_OFF_PARENT) != p->parent_addr ||
			    get64(b, VM_MEMCTX_OFF_PREVCHILD) != p->prev_addr) {
				refuse(w,
				       "the context at 0x%llx does not point back to its parent or sibling",
				       (unsigned long long)p->addr);
				continue;
			}
			if (get64(b, VM_MEMCTX_OFF_MEM_ALLOCATED) >=
			    MAX_ALLOCATED) {
				refuse(w,
				       "the context at 0x%llx claims more bytes than an address space",
				       (unsigned long long)p->addr);
				continue;
			}
			if (t->n >= w->lim.max_nodes) {
				t->cut_nodes++;
				continue;
			}
			if ((err = seen_add(&w->seen, p->addr)) <= 0) {
				if (err < 0)
					return err;
				refuse(w,
				       "the context at 0x%llx was reached twice (a cycle)",
				       (unsigned long long)p->addr);
				continue;
			}
			if (vm_grow(t->v, &t->cap, t->n + 1))
				return -ENOMEM;
			uint64_t first_child =
				get64(b, VM_MEMCTX_OFF_FIRSTCHILD);
			uint64_t next = get64(b, VM_MEMCTX_OFF_NEXTCHILD);
			uint32_t at = (uint32_t)t->n;

			t->v[t->n++] = (struct vm_memctx_node){
				.addr = p->addr,
				.name = VM_MEMCTX_NONE,
				.ident = VM_MEMCTX_NONE,
				.mem_allocated =
					get64(b, VM_MEMCTX_OFF_MEM_ALLOCATED),
				.parent = p->parent,
				.depth = p->depth,
				.type = (uint8_t)type,
			};
			t->total += t->v[at].mem_allocated;
			ptrs[kept * 2] = get64(b, VM_MEMCTX_OFF_NAME);
			ptrs[kept * 2 + 1] = get64(b, VM_MEMCTX_OFF_IDENT);
			kept++;
			if (first_child && p->depth + 1 >= w->lim.max_depth)
				t->cut_depth++;
			else if (first_child &&
				 (err = push(w, first_child, p->addr, 0, at,
					     p->depth + 1)) < 0)
				return err;
			/* The root has no siblings: one would be a forgery. */
			if (next && p->parent == VM_MEMCTX_NONE)
				refuse(w, "TopMemoryContext has a sibling");
			else if (next &&
				 (err = push(w, next, p->parent_addr, p->addr,
					     p->parent, p->depth)) < 0)
				return err;
		}
		done += n;
	}
	return 0;
}

static void tree_clear(struct vm_memctx_tree *t)
{
	t->n = 0;
	t->names_len = 0;
	t->total = 0;
	t->cut_nodes = t->cut_depth = t->cut_names = t->bad = 0;
	t->why[0] = '\0';
}

/* One try from the root: 0, -EAGAIN when something was refused. */
static int walk_once(struct walk *w, uint64_t root)
{
	int err;

	tree_clear(w->t);
	if (w->seen.v)
		memset(w->seen.v, 0, w->seen.cap * sizeof(*w->seen.v));
	w->seen.n = 0;
	w->nnext = 0;
	if ((err = push(w, root, 0, 0, VM_MEMCTX_NONE, 0)) < 0)
		return err;
	w->names_first = 0;
	while (w->nnext) {
		struct pending *q = w->q;
		size_t cap = w->cap_q;

		w->q = w->next;
		w->cap_q = w->cap_next;
		w->nq = w->nnext;
		w->next = q;
		w->cap_next = cap;
		w->nnext = 0;
		if ((err = round_of(w)) < 0)
			return err;
	}
	if ((err = flush_names(w)) < 0)
		return err;
	return w->t->bad ? -EAGAIN : 0;
}

static int read_root(struct walk *w, uint64_t top_ptr, uint64_t *root)
{
	uint8_t b[8];
	struct vm_memctx_iov v = { top_ptr, b, sizeof(b), 0 };
	int err = w->read(w->arg, &v, 1);

	if (err < 0)
		return err;
	if (v.got < sizeof(b)) {
		snprintf(w->t->why, sizeof(w->t->why),
			 "TopMemoryContext at 0x%llx could not be read",
			 (unsigned long long)top_ptr);
		return -EFAULT;
	}
	*root = get64(b, 0);
	return *root ? 0 : -ENOENT;
}

int vm_memctx_walk(const struct vm_memctx_tags *tags, uint64_t top_ptr,
		   vm_memctx_read_fn read, void *arg,
		   const struct vm_memctx_limits *lim,
		   struct vm_memctx_tree *out)
{
	struct walk w = { .tags = tags, .read = read, .arg = arg, .t = out };
	uint64_t root = 0;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (lim)
		w.lim = *lim;
	if (!w.lim.max_nodes || w.lim.max_nodes > VM_MEMCTX_MAX_NODES)
		w.lim.max_nodes = VM_MEMCTX_MAX_NODES;
	if (!w.lim.max_depth)
		w.lim.max_depth = VM_MEMCTX_MAX_DEPTH;
	if (!w.lim.name_bytes)
		w.lim.name_bytes = VM_MEMCTX_NAME_BYTES;
	if (!w.lim.tries)
		w.lim.tries = VM_MEMCTX_TRIES;
	if (!user_range(top_ptr, 8)) {
		snprintf(
			out->why, sizeof(out->why),
			"TopMemoryContext's address 0x%llx is not in user space",
			(unsigned long long)top_ptr);
		return -EFAULT;
	}
	/* A batch of nodes, the names before them, their continuations. */
	w.iov = calloc(VM_MEMCTX_BATCH * 5, sizeof(*w.iov));
	w.buf = malloc((size_t)VM_MEMCTX_BATCH * VM_MEMCTX_NODE_SIZE);
	w.text = malloc((size_t)VM_MEMCTX_BATCH * 2 * VM_MEMCTX_NAME_MAX);
	w.ptrs = calloc(VM_MEMCTX_BATCH * 2, sizeof(*w.ptrs));
	w.len = calloc(VM_MEMCTX_BATCH * 2, sizeof(*w.len));
	if (!w.iov || !w.buf || !w.text || !w.ptrs || !w.len) {
		err = -ENOMEM;
		goto out;
	}
	for (out->tries = 1; out->tries <= w.lim.tries; out->tries++) {
		if ((err = read_root(&w, top_ptr, &root)) < 0)
			goto out;
		err = walk_once(&w, root);
		if (err != -EAGAIN)
			break;
	}
	if (out->tries > w.lim.tries)
		out->tries = w.lim.tries;
	if (err == -ETIME) {
		/* The reader's time is up: what passed is kept, said so. */
		snprintf(out->why, sizeof(out->why),
			 "the walk's time ran out after %zu contexts", out->n);
		out->time_up = true;
		err = -EAGAIN;
	}
	if (err == -EAGAIN) {
		out->partial = true;
		err = out->n ? 0 : -EFAULT;
	}
out:
	free(w.seen.v);
	free(w.q);
	free(w.next);
	free(w.iov);
	free(w.buf);
	free(w.text);
	free(w.ptrs);
	free(w.len);
	return err;
}

void vm_memctx_tree_free(struct vm_memctx_tree *t)
{
	free(t->v);
	free(t->names);
	memset(t, 0, sizeof(*t));
}

const char *vm_memctx_str(const struct vm_memctx_tree *t, uint32_t off)
{
	return off == VM_MEMCTX_NONE || off >= t->names_len ? "" :
							      t->names + off;
}
