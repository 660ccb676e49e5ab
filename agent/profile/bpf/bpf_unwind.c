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
 * every later profile as they are.  A profile that starts with the store
 * more than half full and no other profile running empties it first.
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
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "agent/iopool/iopool.h"
#include "agent/samples/proc.h"
#include "agent/unwind/unwind_cache.h"
#include "agent/unwind/unwind_pack.h"
#include "agent/unwind/vdso.h"
#include "common/array.h"
#include "common/cleanup.h"

_Static_assert(VM_BPF_UNWIND_ROWS <= UNWIND_COUNT_MASK,
	       "an index entry counts any binary's rows");

struct vm_bpf_unwind_bin {
	uint64_t dev, ino; /* as the maps line said (the vDSO: 0, 0) */
	const struct vm_unwind_table *t; /* NULL: it has none */
	bool cached; /* the store's: t is held in home, to put back */
	struct vm_binaries *home;
	struct vm_binary *held;
	uint32_t first, count; /* its rows in the store */
	uint32_t index, pages, shift; /* its index there (bpf/unwind.h) */
};

/*
 * The store (bpf/unwind.h) and the binaries whose rows it holds, each
 * with its table (held in its home, when `cached`), or none:
 * a binary without one is known not to have it.
 */
struct vm_bpf_unwind_store {
	pthread_mutex_t lock;
	int fd; /* -1: not made yet */
	uint32_t n_rows; /* rows used */
	struct vm_bpf_unwind_bin *bins;
	size_t n_bins, cap_bins;
	unsigned users; /* profiles open */
	/* What /healthz says of the sessions that used it. */
	pthread_mutex_t said_lock;
	char refusal[256];
	/* Binaries every session left without tables. */
	uint64_t skipped_total;
	char skipped_last[256];
	/* Processes past the maps' bounds, the same. */
	uint64_t procs_skipped_total;
	char procs_skipped_last[256];
};

struct vm_bpf_unwind_store *vm_bpf_unwind_store_new(void)
{
	struct vm_bpf_unwind_store *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
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

/* The store's binaries and rows let go (under its lock). */
static void store_empty(struct vm_bpf_unwind_store *s)
{
	for (size_t i = 0; i < s->n_bins; i++)
		if (s->bins[i].cached)
			vm_binaries_put(s->bins[i].home, s->bins[i].held);
	s->n_bins = 0;
	s->n_rows = 0;
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
	pthread_cond_init(&u->wake, NULL);
	pthread_mutex_lock(&store->lock);
	if (store->fd < 0)
		store->fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_rows",
					   sizeof(uint32_t),
					   sizeof(struct unwind_row),
					   VM_BPF_UNWIND_ROWS, &mmapable);
	else if (!store->users && store->n_rows > VM_BPF_UNWIND_ROWS / 2)
		store_empty(store);
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
 * Copy t's rows and index into the store (under its lock) for b: NULL, or
 * why they cannot go.
 */
static const char *store_rows(struct vm_bpf_unwind_store *s,
			      const struct vm_unwind_table *t,
			      struct vm_bpf_unwind_bin *b)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint32_t pages, shift, at = s->n_rows;
	size_t from, to, total = vm_unwind_pack_size(t, &shift, &pages);
	struct unwind_row *rows;
	char *map;
	bool fit;

	if (total > VM_BPF_UNWIND_ROWS - at)
		return "past the unwind tables' store";
	/*
	 * Only the pages written are mapped, and only while written: the
	 * store stays kernel memory (counted as the maps' own), not the
	 * agent's RSS.
	 */
	from = at * sizeof(*rows) / page * page;
	to = ((at + total) * sizeof(*rows) + page - 1) / page * page;
	map = mmap(NULL, to - from, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd,
		   (off_t)from);
	if (map == MAP_FAILED)
		return "the unwind tables' store cannot be written";
	rows = (struct unwind_row *)(map + (at * sizeof(*rows) - from));
	fit = vm_unwind_pack(t, shift, pages, rows);
	munmap(map, to - from);
	if (!fit)
		return "its code spans 4 GiB or more";
	b->first = at;
	b->count = (uint32_t)t->n;
	b->index = at + (uint32_t)t->n;
	b->pages = pages;
	b->shift = shift;
	s->n_rows += (uint32_t)total;
	return NULL;
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

/* The binary dev/ino among n bins, or NULL. */
static struct vm_bpf_unwind_bin *bin_in(struct vm_bpf_unwind_bin *bins,
					size_t n, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (bins[i].dev == dev && bins[i].ino == ino)
			return &bins[i];
	return NULL;
}

/*
 * The binary dev/ino of store s into *out: found there, or its table
 * (t, held in home as held when `cached`, which the store keeps or puts
 * back) written into it now.  NULL, or why it has no rows.
 */
static const char *store_bin(struct vm_bpf_unwind_store *s, uint64_t dev,
			     uint64_t ino, const struct vm_unwind_table *t,
			     bool cached, struct vm_binaries *home,
			     struct vm_binary *held,
			     struct vm_bpf_unwind_bin *out)
{
	struct vm_bpf_unwind_bin *b,
		nb = { .dev = dev, .ino = ino, .home = home, .held = held };
	const char *why = NULL;

	pthread_mutex_lock(&s->lock);
	b = bin_in(s->bins, s->n_bins, dev, ino);
	if (!b && t && t->n)
		why = store_rows(s, t, &nb);
	if (!b && !why && !vm_grow(s->bins, &s->cap_bins, s->n_bins + 1)) {
		nb.t = t && t->n ? t : NULL;
		nb.cached = nb.t && cached;
		b = &s->bins[s->n_bins++];
		*b = nb;
		cached = cached && !nb.cached; /* the store has it */
	}
	/* Rows written but not recorded stay unused until the store empties. */
	*out = b ? *b : nb;
	out->cached = false;
	if (!b)
		out->t = NULL;
	pthread_mutex_unlock(&s->lock);
	if (cached)
		vm_binaries_put(home, held);
	return why;
}

/*
 * The binary of mapping m of pid, with its rows in the store if it has a
 * table: the session's record of it, made the first time it is seen.
 */
static const struct vm_bpf_unwind_bin *bin_of(struct vm_bpf_unwind *u,
					      uint32_t pid,
					      const struct vm_mapping *m,
					      uint64_t ino)
{
	struct vm_bpf_unwind_bin *b, nb;
	const struct vm_unwind_table *t = NULL;
	struct vm_binary *held = NULL;
	struct vm_error skip = { 0 };
	const char *why;
	bool cached = false;

	pthread_mutex_lock(&u->lock);
	b = bin_in(u->bins, u->n_bins, m->dev, ino);
	pthread_mutex_unlock(&u->lock);
	if (b)
		return b;
	pthread_mutex_lock(&u->store->lock);
	b = bin_in(u->store->bins, u->store->n_bins, m->dev, ino);
	pthread_mutex_unlock(&u->store->lock);
	/* Built outside the locks: the reader thread asks under them. */
	if (!b && !table_of(u, pid, m, &t, &cached, &held, &skip))
		return NULL; /* gone, or not readable now: asked again later */
	why = store_bin(u->store, m->dev, ino, t, cached, u->home, held, &nb);
	pthread_mutex_lock(&u->lock);
	if (why)
		skipped(u, m->path, why);
	else if (skip.code)
		session_skipped(u, m->path, skip.msg);
	b = vm_grow(u->bins, &u->cap_bins, u->n_bins + 1) ?
		    NULL :
		    &u->bins[u->n_bins++];
	if (b)
		*b = nb;
	pthread_mutex_unlock(&u->lock);
	return b;
}

/* pid's executable mappings into p: false when there are too many. */
static bool read_mappings(struct vm_bpf_unwind *u, uint32_t pid,
			  struct unwind_proc *p)
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
		const struct vm_bpf_unwind_bin *b = NULL;
		struct unwind_map *e;
		struct vm_mapping m = { 0 };
		uint64_t ino, bias;

		if (vm_proc_parse_maps_line(line, &m, &m.dev, &ino) != 1)
			continue;
		if (p->n == UNWIND_MAX_MAPS) {
			all = false;
			break;
		}
		e = &p->m[p->n++];
		*e = (struct unwind_map){ .start = m.start, .end = m.end };
		if (m.path && (m.path[0] == '/' || vm_vdso_path(m.path)))
			b = bin_of(u, pid, &m, ino);
		if (b && b->t && vm_unwind_bias(b->t, &m, &bias)) {
			e->bias = bias;
			e->first = b->first;
			e->count = b->count;
			e->index = b->index;
			e->pages = b->pages;
			e->shift = b->shift;
		}
	}
	fclose(f);
	return all;
}

/*
 * pid walked by frame pointer, wholly (past VM_BPF_UNWIND_PROCS) or in
 * the mappings past UNWIND_MAX_MAPS (!all): counted for the profile and
 * for /healthz, with why, once however often its mappings are read.
 */
static void procs_skipped(struct vm_bpf_unwind *u, uint32_t pid, bool all)
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
	if (all)
		snprintf(u->last_skipped, sizeof(u->last_skipped),
			 "process %" PRIu32 " (%s): past the %d processes the "
			 "unwind tables serve, walked by frame pointer",
			 pid, comm, VM_BPF_UNWIND_PROCS);
	else
		snprintf(u->last_skipped, sizeof(u->last_skipped),
			 "process %" PRIu32 " (%s): more than %d executable "
			 "mappings, those past them walked by frame pointer",
			 pid, comm, UNWIND_MAX_MAPS);
	pthread_mutex_lock(&u->store->said_lock);
	u->store->procs_skipped_total++;
	snprintf(u->store->procs_skipped_last,
		 sizeof(u->store->procs_skipped_last), "%s", u->last_skipped);
	pthread_mutex_unlock(&u->store->said_lock);
	pthread_mutex_unlock(&u->lock);
}

void vm_bpf_unwind_feed(struct vm_bpf_unwind *u, uint32_t pid, uint32_t ppid)
{
	static __thread struct unwind_proc p, parent;
	bool all;

	if (u->procs_fd < 0)
		return;
	memset(&p, 0, sizeof(p));
	all = read_mappings(u, pid, &p);
	if (ppid && !bpf_map_lookup_elem(u->procs_fd, &ppid, &parent) &&
	    parent.n == p.n && !memcmp(parent.m, p.m, p.n * sizeof(p.m[0])))
		return; /* its parent's serve */
	if (bpf_map_update_elem(u->procs_fd, &pid, &p, BPF_ANY) || !all)
		procs_skipped(u, pid, all);
	/* It may ask again when a pc falls outside (never when too many). */
	if (all)
		bpf_map_delete_elem(u->asked_fd, &pid);
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

void vm_bpf_unwind_forget(struct vm_bpf_unwind *u, uint32_t pid)
{
	if (u->procs_fd < 0)
		return;
	bpf_map_delete_elem(u->procs_fd, &pid);
	bpf_map_delete_elem(u->asked_fd, &pid);
}

void vm_bpf_unwind_stats(struct vm_bpf_unwind *u,
			 struct vm_bpf_unwind_stats *out)
{
	pthread_mutex_lock(&u->store->lock);
	out->bins = 0;
	for (size_t i = 0; i < u->store->n_bins; i++)
		out->bins += u->store->bins[i].t != NULL;
	out->rows = u->store->n_rows;
	pthread_mutex_unlock(&u->store->lock);
	pthread_mutex_lock(&u->lock);
	out->bins_skipped = u->bins_skipped;
	out->procs_skipped = u->procs_skipped;
	pthread_mutex_unlock(&u->lock);
}

void vm_bpf_unwind_release(struct vm_bpf_unwind_store *s)
{
	pthread_mutex_lock(&s->lock);
	if (!s->users && s->fd >= 0) {
		store_empty(s);
		free(s->bins);
		s->bins = NULL;
		s->cap_bins = 0;
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
	free(u->bins);
	free(u->queue);
	free(u->skipped_pids);
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
	pthread_cond_destroy(&u->wake);
	memset(u, 0, sizeof(*u));
	u->rows_fd = u->procs_fd = u->asked_fd = -1;
}
