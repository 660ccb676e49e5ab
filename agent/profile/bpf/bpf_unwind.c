// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_unwind.c - the unwind tables of one BPF profile (bpf_unwind.h).
 *
 * The store is a BPF array the agent maps into its own memory and writes
 * rows into directly, made at the first profile and kept for the next
 * ones by the backend's state for the agent's life (bpf_kept.h; every
 * profile's programs read the same map): a binary's rows are
 * copied from the agent's home of binaries (agent/unwind/unwind_cache.c,
 * built once per file), packed (agent/unwind/unwind_pack.c), the first
 * time a target maps it, and serve
 * every later profile as they are.  Files whose tables are equal (copies
 * of one binary: rows and segments compared whole, found by a digest)
 * share one run.  Each mapping of a process entry holds a reference to
 * its run; a run no entry has pointed at for VM_BPF_UNWIND_GRACE_MS
 * goes back to the store's free rows (bpf_unwind_rows.c) the next time
 * any process's mappings are read -- an entry is unpublished before its
 * references go, so the programs never read a run given to another
 * binary.  The runs a uid's processes stored may take at most its share
 * of the store.
 * A process's entry lists its executable mappings in address order, each
 * with where its binary's rows are and the bias that turns a pc into a
 * row address; a child whose mappings are its parent's gets none (the
 * programs use the parent's).  Entries are written before the programs
 * attach for the targets already running, and after, on the feeder
 * thread, when the programs announce a process, an exec, or a pc in no
 * mapping of its entry (a library dlopen()ed since).  Files are opened
 * through /proc/PID/map_files (the very file mapped, even if replaced
 * since) by the I/O pool (agent/iopool/iopool.h): a file on a frozen mount
 * costs its table, never the session.  The vDSO, which no file holds,
 * has the table of the agent's own (agent/unwind/vdso.h), its rows in
 * the store once like any binary's.
 */
#include "agent/profile/bpf/bpf_unwind.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "agent/iopool/iopool.h"
#include "agent/samples/proc.h"
#include "agent/unwind/unwind_cache.h"
#include "agent/unwind/unwind_pack.h"
#include "agent/unwind/vdso.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"

_Static_assert(VM_BPF_UNWIND_ROWS <= UNWIND_COUNT_MASK,
	       "an index entry counts any binary's rows");

/*
 * A run of rows in the store: one table's, shared by every file found to
 * have that table (copies of one binary), kept while a process entry
 * points at it.
 */
struct vm_bpf_unwind_bin {
	bool used; /* a slot of the store's array in use */
	const struct vm_unwind_table *t; /* its rows' table */
	bool cached; /* t is held in home as held, to put back */
	struct vm_binaries *home;
	struct vm_binary *held;
	uint64_t digest; /* of t's rows and segments */
	uint32_t first, count; /* its rows in the store */
	uint32_t index, pages, shift; /* its index there (bpf/unwind.h) */
	uint32_t total; /* rows and index */
	uint32_t owner; /* the uid of the process that stored it */
	uint32_t refs; /* mappings in process entries that point at it */
	uint64_t idle_since; /* ms (CLOCK_MONOTONIC), when refs fell to 0 */
	struct vm_bpf_unwind_name {
		uint64_t dev, ino; /* as a maps line says (the vDSO: 0, 0) */
	} * names; /* the files found to have t */
	size_t n_names, cap_names;
};

/*
 * The store (bpf/unwind.h) and the runs of rows it holds, each with its
 * table (held in its home, when `cached`).
 */
struct vm_bpf_unwind_store {
	pthread_mutex_t lock;
	int fd; /* -1: not made yet */
	struct vm_bpf_rows rows; /* which are free */
	uint32_t share; /* rows one owner may take */
	uint64_t freed; /* runs given back so far */
	struct vm_bpf_unwind_bin *bins;
	size_t n_bins, cap_bins;
	unsigned users; /* profiles open */
	/* What /healthz says of the sessions that used it. */
	pthread_mutex_t said_lock;
	char refusal[256];
	/* Binaries every session left without tables. */
	uint64_t skipped_total;
	char skipped_last[256];
	/* Processes past the maps' bounds or their owner's share, the same. */
	uint64_t procs_skipped_total;
	char procs_skipped_last[256];
	uint64_t walks_cut; /* walks the sessions' programs cut short */
};

/*
 * A binary a session gave no rows: none to give (no table), or none it
 * could (past the store, when the store had given back `freed` runs:
 * asked again once it has given back more).  Counted once.
 */
struct vm_bpf_unwind_none {
	uint64_t dev, ino;
	uint64_t freed; /* UINT64_MAX: never asked again */
};

struct vm_bpf_unwind_store *vm_bpf_unwind_store_new(uint32_t rows,
						    uint32_t share)
{
	struct vm_bpf_unwind_store *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (vm_bpf_rows_init(&s->rows, rows ? rows : VM_BPF_UNWIND_ROWS)) {
		free(s);
		return NULL;
	}
	s->share = share ? share : s->rows.size / VM_BPF_UNWIND_SHARE;
	s->fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->said_lock, NULL);
	return s;
}

void vm_bpf_unwind_store_free(struct vm_bpf_unwind_store *s)
{
	if (!s)
		return;
	vm_bpf_unwind_release(s);
	vm_bpf_rows_destroy(&s->rows);
	free(s->bins);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->said_lock);
	free(s);
}

void vm_bpf_unwind_skipped(struct vm_bpf_unwind_store *s, uint64_t *n,
			   char *last, size_t size)
{
	pthread_mutex_lock(&s->said_lock);
	*n = s->skipped_total;
	snprintf(last, size, "%s", s->skipped_last);
	pthread_mutex_unlock(&s->said_lock);
}

void vm_bpf_unwind_procs_skipped(struct vm_bpf_unwind_store *s, uint64_t *n,
				 char *last, size_t size)
{
	pthread_mutex_lock(&s->said_lock);
	*n = s->procs_skipped_total;
	snprintf(last, size, "%s", s->procs_skipped_last);
	pthread_mutex_unlock(&s->said_lock);
}

void vm_bpf_unwind_cut(struct vm_bpf_unwind_store *s, uint64_t n)
{
	pthread_mutex_lock(&s->said_lock);
	s->walks_cut += n;
	pthread_mutex_unlock(&s->said_lock);
}

uint64_t vm_bpf_unwind_cuts(struct vm_bpf_unwind_store *s)
{
	uint64_t n;

	pthread_mutex_lock(&s->said_lock);
	n = s->walks_cut;
	pthread_mutex_unlock(&s->said_lock);
	return n;
}

void vm_bpf_unwind_refused(struct vm_bpf_unwind_store *s, const char *why)
{
	pthread_mutex_lock(&s->said_lock);
	snprintf(s->refusal, sizeof(s->refusal), "%s",
		 why && *why ? why : "refused");
	pthread_mutex_unlock(&s->said_lock);
}

void vm_bpf_unwind_refusal(struct vm_bpf_unwind_store *s, char *buf,
			   size_t size)
{
	pthread_mutex_lock(&s->said_lock);
	snprintf(buf, size, "%s", s->refusal);
	pthread_mutex_unlock(&s->said_lock);
}

static uint64_t now_ms(void)
{
	return vm_clock_ns(CLOCK_MONOTONIC) / 1000000;
}

/* Run b let go: its rows free, its table put back (under the lock). */
static void bin_drop(struct vm_bpf_unwind_store *s, struct vm_bpf_unwind_bin *b)
{
	/* Out of memory: its rows stay taken, never given twice. */
	vm_bpf_rows_give(&s->rows, b->first, b->total);
	if (b->cached)
		vm_binaries_put(b->home, b->held);
	free(b->names);
	memset(b, 0, sizeof(*b));
	s->freed++;
}

/*
 * The runs no process entry has pointed at for VM_BPF_UNWIND_GRACE_MS let
 * go, and all of them when every is true (no profile uses the store).
 * Under the lock.  A run's last entry went (vm_bpf_unwind_forget, or
 * replaced by a new reading) before it counts as idle, and a walk that
 * found that entry before it went is over long before the grace ends,
 * so the programs never read a run given to another binary as this
 * one's.
 */
static void store_reclaim(struct vm_bpf_unwind_store *s, bool every)
{
	uint64_t now = now_ms();

	for (size_t i = 0; i < s->n_bins; i++) {
		struct vm_bpf_unwind_bin *b = &s->bins[i];

		if (b->used &&
		    (every || (!b->refs &&
			       now - b->idle_since >= VM_BPF_UNWIND_GRACE_MS)))
			bin_drop(s, b);
	}
	while (s->n_bins && !s->bins[s->n_bins - 1].used)
		s->n_bins--;
}

int vm_bpf_unwind_open(struct vm_bpf_unwind *u,
		       struct vm_bpf_unwind_store *store,
		       struct vm_binaries *home, struct vm_iopool *iopool,
		       struct vm_error *err)
{
	LIBBPF_OPTS(bpf_map_create_opts, mmapable, .map_flags = BPF_F_MMAPABLE);
	LIBBPF_OPTS(bpf_map_create_opts, no_prealloc,
		    .map_flags = BPF_F_NO_PREALLOC);
	memset(u, 0, sizeof(*u));
	u->rows_fd = u->procs_fd = u->asked_fd = -1;
	u->store = store;
	u->home = home;
	u->iopool = iopool;
	pthread_mutex_init(&u->lock, NULL);
	pthread_mutex_init(&u->entries_lock, NULL);
	pthread_cond_init(&u->wake, NULL);
	pthread_mutex_lock(&store->lock);
	if (store->fd < 0)
		store->fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_rows",
					   sizeof(uint32_t),
					   sizeof(struct unwind_row),
					   store->rows.size, &mmapable);
	else
		store_reclaim(store, false);
	if (store->fd >= 0) {
		u->rows_fd = store->fd;
		store->users++;
	}
	pthread_mutex_unlock(&store->lock);
	if (u->rows_fd < 0)
		return vm_error_errno(err, errno,
				      "cannot create the unwind tables' store");
	u->procs_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "unwind_procs",
				     sizeof(uint32_t),
				     sizeof(struct unwind_proc),
				     VM_BPF_UNWIND_PROCS, &no_prealloc);
	u->asked_fd = bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "unwind_asked",
				     sizeof(uint32_t), sizeof(uint8_t),
				     VM_BPF_UNWIND_ASKED, NULL);
	if (u->procs_fd < 0 || u->asked_fd < 0)
		return vm_error_errno(err, errno,
				      "cannot create the unwind tables' maps");
	return 0;
}

int vm_bpf_unwind_use(struct vm_bpf_unwind *u, struct bpf_object *obj)
{
	static const char *const names[] = { "unwind_rows", "unwind_procs",
					     "unwind_asked" };
	const int fds[] = { u->rows_fd, u->procs_fd, u->asked_fd };

	for (size_t i = 0; i < 3; i++) {
		int r = bpf_map__reuse_fd(
			bpf_object__find_map_by_name(obj, names[i]), fds[i]);

		if (r)
			return r;
	}
	return 0;
}

/*
 * A binary this session left without rows or some of them, and why (a
 * sentence cut at 200 bytes, so that the path keeps room).
 */
static void session_skipped(struct vm_bpf_unwind *u, const char *path,
			    const char *why)
{
	u->bins_skipped++;
	snprintf(u->last_skipped, sizeof(u->last_skipped), "%s: %.200s", path,
		 why);
}

/* One left out of the store (said in /healthz too). */
static void skipped(struct vm_bpf_unwind *u, const char *path, const char *why)
{
	session_skipped(u, path, why);
	pthread_mutex_lock(&u->store->said_lock);
	u->store->skipped_total++;
	snprintf(u->store->skipped_last, sizeof(u->store->skipped_last), "%s",
		 u->last_skipped);
	pthread_mutex_unlock(&u->store->said_lock);
}

/*
 * Copy t's rows and index into the store's rows at (under its lock) for
 * b: false when its code spans 4 GiB or more or the store cannot be
 * written (*why says which).
 */
static bool store_rows(struct vm_bpf_unwind_store *s,
		       const struct vm_unwind_table *t, uint32_t at,
		       uint32_t shift, uint32_t pages, size_t total,
		       struct vm_bpf_unwind_bin *b, const char **why)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t from, to;
	struct unwind_row *rows;
	char *map;
	bool fit;

	/*
	 * Only the pages written are mapped, and only while written: the
	 * store stays kernel memory (counted as the maps' own), not the
	 * agent's RSS.
	 */
	from = at * sizeof(*rows) / page * page;
	to = ((at + total) * sizeof(*rows) + page - 1) / page * page;
	map = mmap(NULL, to - from, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd,
		   (off_t)from);
	if (map == MAP_FAILED) {
		*why = "the unwind tables' store cannot be written";
		return false;
	}
	rows = (struct unwind_row *)(map + (at * sizeof(*rows) - from));
	fit = vm_unwind_pack(t, shift, pages, rows);
	munmap(map, to - from);
	if (!fit) {
		*why = "its code spans 4 GiB or more";
		return false;
	}
	b->first = at;
	b->count = (uint32_t)t->n;
	b->index = at + (uint32_t)t->n;
	b->pages = pages;
	b->shift = shift;
	b->total = (uint32_t)total;
	return true;
}

/*
 * The table of mapping m of pid into *t (NULL: it has none), held in
 * home as *held (*cached) or the vDSO's; false when the file cannot be
 * opened now.  skip: why its build passed a bound, when it did now.
 */
static bool table_of(struct vm_bpf_unwind *u, uint32_t pid,
		     const struct vm_mapping *m,
		     const struct vm_unwind_table **t, bool *cached,
		     struct vm_binary **held, struct vm_error *skip)
{
	char path[64];
	int fd;

	*cached = false;
	if (vm_vdso_path(m->path)) {
		/* None: not our image (a 32-bit process's); cheap to ask. */
		*t = vm_vdso_unwind_table(m->start, m->end);
		return *t != NULL;
	}
	snprintf(path, sizeof(path),
		 "/proc/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, pid,
		 m->start, m->end);
	fd = vm_iopool_open_regular(u->iopool, path, m->dev, VM_IOPOOL_OPEN_MS);
	if (fd < 0)
		return false;
	*t = vm_unwind_cache_get(u->iopool, u->home, fd, m->path, held, skip);
	*cached = *t != NULL;
	close(fd);
	return true;
}

/* A digest of what t's run in the store is made of: rows and segments. */
static uint64_t table_digest(const struct vm_unwind_table *t)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

#define MIX(v)                                                            \
	do {                                                              \
		uint64_t x_ = (uint64_t)(v);                              \
		for (int k_ = 0; k_ < 64; k_ += 8)                        \
			h = (h ^ ((x_ >> k_) & 0xff)) * 0x100000001b3ull; \
	} while (0)
	MIX(t->n);
	for (size_t i = 0; i < t->n; i++) {
		MIX(t->rows[i].addr);
		MIX(vm_unwind_rule(&t->rows[i]) | (uint64_t)t->rows[i].signal
							  << 32);
	}
	MIX(t->n_segs);
	for (size_t i = 0; i < t->n_segs; i++) {
		MIX(t->segs[i].vaddr);
		MIX(t->segs[i].offset);
		MIX(t->segs[i].filesz);
	}
#undef MIX
	return h;
}

/*
 * a and b would be stored alike, row for row, and map pcs to rows alike:
 * checked whole, never taken from the digest (which a file's owner may
 * aim at another's).
 */
static bool same_table(const struct vm_unwind_table *a,
		       const struct vm_unwind_table *b)
{
	if (a->n != b->n || a->n_segs != b->n_segs)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->rows[i].addr != b->rows[i].addr ||
		    vm_unwind_rule(&a->rows[i]) !=
			    vm_unwind_rule(&b->rows[i]) ||
		    a->rows[i].signal != b->rows[i].signal)
			return false;
	for (size_t i = 0; i < a->n_segs; i++)
		if (a->segs[i].vaddr != b->segs[i].vaddr ||
		    a->segs[i].offset != b->segs[i].offset ||
		    a->segs[i].filesz != b->segs[i].filesz)
			return false;
	return true;
}

/* The run of file dev/ino in s, or NULL (under its lock). */
static struct vm_bpf_unwind_bin *bin_named(struct vm_bpf_unwind_store *s,
					   uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < s->n_bins; i++)
		for (size_t k = 0; s->bins[i].used && k < s->bins[i].n_names;
		     k++)
			if (s->bins[i].names[k].dev == dev &&
			    s->bins[i].names[k].ino == ino)
				return &s->bins[i];
	return NULL;
}

/* The run of a table equal to t in s, or NULL (under its lock). */
static struct vm_bpf_unwind_bin *bin_alike(struct vm_bpf_unwind_store *s,
					   const struct vm_unwind_table *t,
					   uint64_t digest)
{
	for (size_t i = 0; i < s->n_bins; i++)
		if (s->bins[i].used && s->bins[i].digest == digest &&
		    same_table(s->bins[i].t, t))
			return &s->bins[i];
	return NULL;
}

/* Rows the runs that owner stored hold (under the lock). */
static uint64_t owner_rows(struct vm_bpf_unwind_store *s, uint32_t owner)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->n_bins; i++)
		if (s->bins[i].used && s->bins[i].owner == owner)
			n += s->bins[i].total;
	return n;
}

/* Entry e points at run b for mapping m: one reference more. */
static void point_at(struct vm_bpf_unwind_bin *b, const struct vm_mapping *m,
		     struct unwind_map *e)
{
	uint64_t bias;

	if (!vm_unwind_bias(b->t, m, &bias))
		return;
	*e = (struct unwind_map){ .start = e->start,
				  .end = e->end,
				  .bias = bias,
				  .first = b->first,
				  .count = b->count,
				  .index = b->index,
				  .pages = b->pages,
				  .shift = b->shift };
	b->refs++;
}

/* The references an entry's mappings hold let go. */
static void unpoint(struct vm_bpf_unwind_store *s, const struct unwind_proc *p)
{
	uint64_t now = now_ms();

	pthread_mutex_lock(&s->lock);
	for (uint32_t k = 0; k < p->n && k < UNWIND_MAX_MAPS; k++)
		for (size_t i = 0; p->m[k].count && i < s->n_bins; i++) {
			struct vm_bpf_unwind_bin *b = &s->bins[i];

			if (!b->used || b->first != p->m[k].first || !b->refs)
				continue;
			if (!--b->refs)
				b->idle_since = now;
			break;
		}
	pthread_mutex_unlock(&s->lock);
}

/*
 * Store t (held in home as held when cached; the store keeps it or puts
 * it back) for file dev/ino of a process of owner's, and point e at it
 * for mapping m.  NULL, or why it has no rows; *over when they would
 * take owner past its share.  Under the lock.
 */
static const char *store_bin(struct vm_bpf_unwind_store *s, uint64_t dev,
			     uint64_t ino, uint32_t owner,
			     const struct vm_unwind_table *t, bool cached,
			     struct vm_binaries *home, struct vm_binary *held,
			     const struct vm_mapping *m, struct unwind_map *e,
			     bool *over, bool *keep)
{
	uint64_t digest = table_digest(t);
	struct vm_bpf_unwind_bin *b = bin_alike(s, t, digest), nb = { 0 };
	uint32_t shift, pages, at;
	size_t total, slot;
	const char *why = NULL;

	*keep = false;
	if (!b) {
		total = vm_unwind_pack_size(t, &shift, &pages);
		if (total > s->rows.size)
			return "past the unwind tables' store";
		if (owner_rows(s, owner) + total > s->share) {
			*over = true;
			return NULL;
		}
		if (vm_bpf_rows_take(&s->rows, (uint32_t)total, &at)) {
			store_reclaim(s, false);
			if (vm_bpf_rows_take(&s->rows, (uint32_t)total, &at))
				return "past the unwind tables' store";
		}
		for (slot = 0; slot < s->n_bins && s->bins[slot].used; slot++)
			;
		if (slot == s->n_bins &&
		    vm_grow(s->bins, &s->cap_bins, s->n_bins + 1)) {
			vm_bpf_rows_give(&s->rows, at, (uint32_t)total);
			return "out of memory";
		}
		if (!store_rows(s, t, at, shift, pages, total, &nb, &why)) {
			vm_bpf_rows_give(&s->rows, at, (uint32_t)total);
			return why;
		}
		if (slot == s->n_bins)
			s->n_bins++;
		b = &s->bins[slot];
		nb.used = true;
		nb.t = t;
		nb.cached = cached;
		nb.home = home;
		nb.held = held;
		nb.digest = digest;
		nb.owner = owner;
		*b = nb;
		*keep = cached;
	}
	/* Out of memory: found again by content, not by name. */
	if (!bin_named(s, dev, ino) &&
	    !vm_grow(b->names, &b->cap_names, b->n_names + 1))
		b->names[b->n_names++] =
			(struct vm_bpf_unwind_name){ dev, ino };
	point_at(b, m, e);
	return NULL;
}

/* The session's note that dev/ino has no rows, or NULL (under u->lock). */
static struct vm_bpf_unwind_none *none_of(struct vm_bpf_unwind *u, uint64_t dev,
					  uint64_t ino)
{
	for (size_t i = 0; i < u->n_nones; i++)
		if (u->nones[i].dev == dev && u->nones[i].ino == ino)
			return &u->nones[i];
	return NULL;
}

/* Noted: dev/ino has no rows, until the store has given back more. */
static void note_none(struct vm_bpf_unwind *u, uint64_t dev, uint64_t ino,
		      uint64_t freed)
{
	struct vm_bpf_unwind_none *n;

	pthread_mutex_lock(&u->lock);
	n = none_of(u, dev, ino);
	if (!n && !vm_grow(u->nones, &u->cap_nones, u->n_nones + 1))
		n = &u->nones[u->n_nones++];
	if (n)
		*n = (struct vm_bpf_unwind_none){ dev, ino, freed };
	pthread_mutex_unlock(&u->lock);
}

static void entry_drop(struct vm_bpf_unwind *u, uint32_t pid);

/*
 * The entries of processes gone unannounced (an end the session did not
 * see) dropped, so that their rows go back too; at most once a grace,
 * when the store lacks room.
 */
static void sweep_gone(struct vm_bpf_unwind *u)
{
	uint64_t now = now_ms();
	uint32_t pid, next;
	bool first = true;

	pthread_mutex_lock(&u->lock);
	if (now - u->swept < VM_BPF_UNWIND_GRACE_MS) {
		pthread_mutex_unlock(&u->lock);
		return;
	}
	u->swept = now;
	pthread_mutex_unlock(&u->lock);
	for (int i = 0;
	     i < VM_BPF_UNWIND_PROCS &&
	     !bpf_map_get_next_key(u->procs_fd, first ? NULL : &pid, &next);
	     i++) {
		first = false;
		pid = next;
		if (kill((pid_t)pid, 0) && errno == ESRCH) {
			entry_drop(u, pid);
			first = true; /* from the start again: it went */
		}
	}
}

/*
 * Point e at the rows of mapping m of pid (a process of owner's), stored
 * now if they are not yet: the store's run of that file, or of a file
 * with the same table, taken with a reference.  *over: its rows would
 * take owner past its share of the store.
 */
static void locate(struct vm_bpf_unwind *u, uint32_t pid, uint32_t owner,
		   const struct vm_mapping *m, uint64_t ino,
		   struct unwind_map *e, bool *over)
{
	struct vm_bpf_unwind_store *s = u->store;
	const struct vm_unwind_table *t = NULL;
	struct vm_bpf_unwind_none *n;
	struct vm_bpf_unwind_bin *b;
	struct vm_binary *held = NULL;
	struct vm_error skip = { 0 };
	const char *why;
	bool cached = false, keep = false, retry;
	uint64_t freed;

	pthread_mutex_lock(&s->lock);
	store_reclaim(s, false);
	freed = s->freed;
	b = bin_named(s, m->dev, ino);
	if (b)
		point_at(b, m, e);
	pthread_mutex_unlock(&s->lock);
	if (b)
		return;
	pthread_mutex_lock(&u->lock);
	n = none_of(u, m->dev, ino);
	retry = n && n->freed != UINT64_MAX && n->freed != freed;
	pthread_mutex_unlock(&u->lock);
	if (n && !retry)
		return;
	/* Built outside the locks: the reader thread asks under them. */
	if (!table_of(u, pid, m, &t, &cached, &held, &skip))
		return; /* gone, or not readable now: asked again later */
	if (!t || !t->n) {
		if (cached)
			vm_binaries_put(u->home, held);
		if (!n) {
			note_none(u, m->dev, ino, UINT64_MAX);
			if (skip.code) {
				pthread_mutex_lock(&u->lock);
				session_skipped(u, m->path, skip.msg);
				pthread_mutex_unlock(&u->lock);
			}
		}
		return;
	}
	pthread_mutex_lock(&s->lock);
	why = store_bin(s, m->dev, ino, owner, t, cached, u->home, held, m, e,
			over, &keep);
	freed = s->freed;
	pthread_mutex_unlock(&s->lock);
	if (cached && !keep)
		vm_binaries_put(u->home, held);
	if (why || *over)
		sweep_gone(u);
	if (why) {
		note_none(u, m->dev, ino, freed);
		if (!n) {
			pthread_mutex_lock(&u->lock);
			skipped(u, m->path, why);
			pthread_mutex_unlock(&u->lock);
		}
	} else if (skip.code && !n) {
		pthread_mutex_lock(&u->lock);
		session_skipped(u, m->path, skip.msg);
		pthread_mutex_unlock(&u->lock);
	}
}

/*
 * pid's executable mappings into p, each with a reference to its rows:
 * false when there are too many.  *over: some binaries' rows would take
 * owner past its share of the store.
 */
static bool read_mappings(struct vm_bpf_unwind *u, uint32_t pid, uint32_t owner,
			  struct unwind_proc *p, bool *over)
{
	_cleanup_free_ char *line = NULL;
	char path[64];
	size_t cap = 0;
	bool all = true;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return true; /* gone: an empty entry, never used */
	while (getline(&line, &cap, f) > 0) {
		struct unwind_map *e;
		struct vm_mapping m = { 0 };
		uint64_t ino;

		if (vm_proc_parse_maps_line(line, &m, &m.dev, &ino) != 1)
			continue;
		if (p->n == UNWIND_MAX_MAPS) {
			p->partial = 1;
			all = false;
			break;
		}
		e = &p->m[p->n++];
		*e = (struct unwind_map){ .start = m.start, .end = m.end };
		if (m.path && (m.path[0] == '/' || vm_vdso_path(m.path)))
			locate(u, pid, owner, &m, ino, e, over);
	}
	fclose(f);
	return all;
}

/* Why a process is walked by frame pointer, in part or wholly. */
enum past {
	PAST_PROCS, /* past VM_BPF_UNWIND_PROCS */
	PAST_MAPS, /* past UNWIND_MAX_MAPS */
	PAST_SHARE, /* its owner's binaries past their share of the store */
};

/*
 * pid walked by frame pointer, for why: counted for the profile and for
 * /healthz, with why, once however often its mappings are read.
 */
static void procs_skipped(struct vm_bpf_unwind *u, uint32_t pid, uint32_t owner,
			  enum past why)
{
	char comm[VM_COMM_LEN] = "?";

	if (vm_proc_read_comm("/proc", pid, comm) < 0)
		snprintf(comm, sizeof(comm), "gone");
	pthread_mutex_lock(&u->lock);
	for (size_t i = 0; i < u->n_skipped_pids; i++)
		if (u->skipped_pids[i] == pid) {
			pthread_mutex_unlock(&u->lock);
			return;
		}
	/* Out of memory: counted again at its next reading. */
	if (!vm_grow(u->skipped_pids, &u->cap_skipped_pids,
		     u->n_skipped_pids + 1))
		u->skipped_pids[u->n_skipped_pids++] = pid;
	u->procs_skipped++;
	if (why == PAST_PROCS)
		snprintf(u->last_skipped, sizeof(u->last_skipped),
			 "process %" PRIu32 " (%s): past the %d processes the "
			 "unwind tables serve, walked by frame pointer",
			 pid, comm, VM_BPF_UNWIND_PROCS);
	else if (why == PAST_MAPS)
		snprintf(u->last_skipped, sizeof(u->last_skipped),
			 "process %" PRIu32 " (%s): more than %d executable "
			 "mappings, those past them walked by frame pointer",
			 pid, comm, UNWIND_MAX_MAPS);
	else
		snprintf(u->last_skipped, sizeof(u->last_skipped),
			 "process %" PRIu32
			 " (%s): the binaries of uid %" PRIu32
			 " past its share of the unwind tables' store (%" PRIu32
			 " rows), walked by frame pointer",
			 pid, comm, owner, u->store->share);
	pthread_mutex_lock(&u->store->said_lock);
	u->store->procs_skipped_total++;
	snprintf(u->store->procs_skipped_last,
		 sizeof(u->store->procs_skipped_last), "%s", u->last_skipped);
	pthread_mutex_unlock(&u->store->said_lock);
	pthread_mutex_unlock(&u->lock);
}

/*
 * The owner a process's rows are charged to: its uid (the owner of its
 * /proc directory), whatever files it maps, for it is the process that
 * chooses what it maps; the files' owners choose nothing.
 */
static uint32_t owner_of(uint32_t pid)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%" PRIu32, pid);
	return stat(path, &st) ? UINT32_MAX : (uint32_t)st.st_uid;
}

void vm_bpf_unwind_feed(struct vm_bpf_unwind *u, uint32_t pid, uint32_t ppid)
{
	static __thread struct unwind_proc p, parent, old;
	uint32_t owner;
	bool all, over = false, had;

	if (u->procs_fd < 0)
		return;
	memset(&p, 0, sizeof(p));
	owner = owner_of(pid);
	all = read_mappings(u, pid, owner, &p, &over);
	pthread_mutex_lock(&u->entries_lock);
	if (ppid && !bpf_map_lookup_elem(u->procs_fd, &ppid, &parent) &&
	    parent.n == p.n && !memcmp(parent.m, p.m, p.n * sizeof(p.m[0]))) {
		pthread_mutex_unlock(&u->entries_lock);
		unpoint(u->store, &p);
		return; /* its parent's serve */
	}
	had = !bpf_map_lookup_elem(u->procs_fd, &pid, &old);
	/* Published first, then the rows the entry it replaces held let go. */
	if (bpf_map_update_elem(u->procs_fd, &pid, &p, BPF_ANY)) {
		pthread_mutex_unlock(&u->entries_lock);
		unpoint(u->store, &p);
		procs_skipped(u, pid, owner, PAST_PROCS);
		return;
	}
	pthread_mutex_unlock(&u->entries_lock);
	if (had)
		unpoint(u->store, &old);
	if (!all)
		procs_skipped(u, pid, owner, PAST_MAPS);
	else if (over)
		procs_skipped(u, pid, owner, PAST_SHARE);
	/* It may ask again when a pc falls outside (never when too many). */
	if (all)
		bpf_map_delete_elem(u->asked_fd, &pid);
	/*
	 * Gone while its binaries were read (their tables built): its end
	 * may have been seen before the entry was written.
	 */
	if (kill((pid_t)pid, 0) && errno == ESRCH)
		entry_drop(u, pid);
}

static void *feeder(void *arg)
{
	struct vm_bpf_unwind *u = arg;

	pthread_mutex_lock(&u->lock);
	for (;;) {
		uint32_t pid, ppid;

		while (!u->n_queue && !u->stopping)
			pthread_cond_wait(&u->wake, &u->lock);
		if (u->stopping)
			break;
		pid = u->queue[0];
		ppid = u->queue[1];
		u->n_queue -= 2;
		memmove(u->queue, u->queue + 2, u->n_queue * sizeof(*u->queue));
		pthread_mutex_unlock(&u->lock);
		vm_bpf_unwind_feed(u, pid, ppid);
		pthread_mutex_lock(&u->lock);
	}
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

void vm_bpf_unwind_ask(struct vm_bpf_unwind *u, uint32_t pid, uint32_t ppid)
{
	if (u->procs_fd < 0)
		return;
	pthread_mutex_lock(&u->lock);
	for (size_t i = 0; i < u->n_queue; i += 2)
		if (u->queue[i] == pid)
			goto out;
	if (!u->started && !u->stopping) {
		if (pthread_create(&u->feeder, NULL, feeder, u))
			goto out;
		u->started = true;
	}
	/* Bounded: past it, the process is walked by frame pointer. */
	if (u->n_queue < 2 * VM_BPF_UNWIND_QUEUE &&
	    !vm_grow(u->queue, &u->cap_queue, u->n_queue + 2)) {
		u->queue[u->n_queue++] = pid;
		u->queue[u->n_queue++] = ppid;
		pthread_cond_signal(&u->wake);
	}
out:
	pthread_mutex_unlock(&u->lock);
}

/* pid's entry gone: unpublished first, then its rows let go. */
static void entry_drop(struct vm_bpf_unwind *u, uint32_t pid)
{
	static __thread struct unwind_proc old;
	bool had;

	pthread_mutex_lock(&u->entries_lock);
	had = !bpf_map_lookup_elem(u->procs_fd, &pid, &old) &&
	      !bpf_map_delete_elem(u->procs_fd, &pid);
	pthread_mutex_unlock(&u->entries_lock);
	if (had)
		unpoint(u->store, &old);
}

void vm_bpf_unwind_forget(struct vm_bpf_unwind *u, uint32_t pid)
{
	if (u->procs_fd < 0)
		return;
	entry_drop(u, pid);
	bpf_map_delete_elem(u->asked_fd, &pid);
}

void vm_bpf_unwind_store_usage(struct vm_bpf_unwind_store *s, uint64_t *runs,
			       uint64_t *rows)
{
	pthread_mutex_lock(&s->lock);
	*runs = 0;
	for (size_t i = 0; i < s->n_bins; i++)
		*runs += s->bins[i].used;
	*rows = s->rows.used;
	pthread_mutex_unlock(&s->lock);
}

void vm_bpf_unwind_stats(struct vm_bpf_unwind *u,
			 struct vm_bpf_unwind_stats *out)
{
	vm_bpf_unwind_store_usage(u->store, &out->bins, &out->rows);
	pthread_mutex_lock(&u->lock);
	out->bins_skipped = u->bins_skipped;
	out->procs_skipped = u->procs_skipped;
	pthread_mutex_unlock(&u->lock);
}

void vm_bpf_unwind_release(struct vm_bpf_unwind_store *s)
{
	pthread_mutex_lock(&s->lock);
	if (!s->users && s->fd >= 0) {
		store_reclaim(s, true);
		close(s->fd);
		s->fd = -1;
	}
	pthread_mutex_unlock(&s->lock);
}

void vm_bpf_unwind_close(struct vm_bpf_unwind *u)
{
	pthread_mutex_lock(&u->lock);
	u->stopping = true;
	pthread_cond_signal(&u->wake);
	pthread_mutex_unlock(&u->lock);
	if (u->started)
		pthread_join(u->feeder, NULL);
	free(u->nones);
	free(u->queue);
	free(u->skipped_pids);
	/* Every entry unpublished with the map, its rows let go. */
	if (u->procs_fd >= 0) {
		uint32_t pid;

		for (int i = 0; i < VM_BPF_UNWIND_PROCS &&
				!bpf_map_get_next_key(u->procs_fd, NULL, &pid);
		     i++)
			entry_drop(u, pid);
	}
	if (u->rows_fd >= 0) {
		pthread_mutex_lock(&u->store->lock);
		u->store->users--;
		pthread_mutex_unlock(&u->store->lock);
	}
	if (u->procs_fd >= 0)
		close(u->procs_fd);
	if (u->asked_fd >= 0)
		close(u->asked_fd);
	pthread_mutex_destroy(&u->lock);
	pthread_mutex_destroy(&u->entries_lock);
	pthread_cond_destroy(&u->wake);
	memset(u, 0, sizeof(*u));
	u->rows_fd = u->procs_fd = u->asked_fd = -1;
}
