// SPDX-License-Identifier: Apache-2.0
/*
 * symcache.c - per-binary symbol tables kept across profiles, merged with
 * the binary's separate debug file (see symcache.h).  The places are
 * debugfile.h's: first under the process's root, then under ours, then
 * by build id on the tools disk (MOUNTPOINT/usr/lib/debug/.build-id/xx/
 * yyyy.debug, where `vmtools-image build --debug-dir` puts them), then
 * debuginfod.  What ours, the tools disk and debuginfod give is the
 * facet's first entry; the file a process's root shows first, when it is
 * another, an entry of its own (struct symset).
 */
#include "agent/symbolize/symcache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/iopool/iopool.h"
#include "agent/symbolize/debugfile.h"
#include "agent/symbolize/debuginfod.h"
#include "agent/unwind/vdso.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/fdio.h"

/* A debug file debuginfod fetched, merged at the next run. */
struct found {
	uint8_t id[VM_BUILD_ID_MAX];
	size_t len;
	char *path;
};

/*
 * The symbols facet: v[0] the binary with the agent's own debug file (or
 * none), v[1..] with the other debug files processes' roots showed, each
 * known by its debug_key; the debug files refused, not read again; and
 * how many other debug files were read (at most
 * VM_SYMCACHE_OTHER_DEBUG_READS, so that roots showing ever new ones
 * cost a bounded number of reads).
 */
struct symset {
	struct vm_symfile *v[1 + VM_SYMCACHE_OTHER_DEBUG_FILES];
	size_t n;
	struct vm_binary_key refused[VM_SYMCACHE_OTHER_DEBUG_FILES];
	size_t n_refused; /* ever: the next goes at n_refused % its size */
	unsigned other_reads;
	bool said_full; /* that other debug files are no longer read */
};

struct vm_symcache {
	pthread_mutex_t lock; /* held for a whole run */
	struct vm_binaries *home;
	struct vm_binary **held; /* what this run holds */
	size_t n_held, cap_held;
	uint64_t hits, misses;
	size_t file_max_bytes;
	struct vm_debuginfod *debuginfod; /* NULL: no lookups */
	struct vm_iopool *iopool;
	bool own_iopool; /* made for it, freed with it */
	char debug_dir[PATH_MAX];
	char tools_dir[PATH_MAX]; /* the tools disk's mountpoint, or "" */
	struct vm_symfile vdso;
	int vdso_state; /* 0 not tried, 1 read, -1 failed */
	struct vm_kallsyms_cache kernel;
	/* Debug files arrived from debuginfod's thread, not merged yet. */
	pthread_mutex_t found_lock;
	struct found *found;
	size_t n_found, cap_found;
};

struct vm_symcache *vm_symcache_new(struct vm_binaries *home,
				    const struct vm_symcache_config *cfg)
{
	struct vm_symcache *sc = calloc(1, sizeof(*sc));

	if (!sc)
		return NULL;
	pthread_mutex_init(&sc->lock, NULL);
	pthread_mutex_init(&sc->found_lock, NULL);
	sc->home = home;
	sc->debuginfod = cfg ? cfg->debuginfod : NULL;
	sc->iopool = cfg ? cfg->iopool : NULL;
	if (!sc->iopool) {
		sc->iopool = vm_iopool_new();
		sc->own_iopool = true;
	}
	if (!sc->iopool) {
		free(sc);
		return NULL;
	}
	sc->file_max_bytes = cfg && cfg->per_file_max_bytes ?
				     cfg->per_file_max_bytes :
				     VM_ELF_SYMBOLS_MAX_BYTES;
	snprintf(sc->debug_dir, sizeof(sc->debug_dir), "%s",
		 cfg && cfg->debug_dir ? cfg->debug_dir : "/usr/lib/debug");
	snprintf(sc->tools_dir, sizeof(sc->tools_dir), "%s",
		 cfg && cfg->tools_dir ? cfg->tools_dir : "");
	return sc;
}

static void symfile_free(struct vm_symfile *f)
{
	vm_elf_info_free(&f->info);
	free(f->debug_path);
	free(f);
}

static void symset_free(void *data)
{
	struct symset *set = data;

	for (size_t i = 0; i < set->n; i++)
		symfile_free(set->v[i]);
	free(set);
}

static size_t symset_bytes(const struct symset *set)
{
	size_t bytes = sizeof(*set);

	for (size_t i = 0; i < set->n; i++)
		bytes += vm_elf_info_bytes(&set->v[i]->info);
	return bytes;
}

void vm_symcache_free(struct vm_symcache *sc)
{
	if (!sc)
		return;
	for (size_t i = 0; i < sc->n_held; i++)
		vm_binaries_put(sc->home, sc->held[i]);
	free(sc->held);
	for (size_t i = 0; i < sc->n_found; i++)
		free(sc->found[i].path);
	free(sc->found);
	vm_elf_info_free(&sc->vdso.info);
	vm_kallsyms_cache_free(&sc->kernel);
	if (sc->own_iopool)
		vm_iopool_free(sc->iopool);
	pthread_mutex_destroy(&sc->found_lock);
	pthread_mutex_destroy(&sc->lock);
	free(sc);
}

/*
 * A file's symbols outgrew their bound, limit (EFBIG): say which bound in
 * the list /healthz shows.
 */
static void skip_symbols(struct vm_symcache *sc, const char *file, size_t limit)
{
	struct vm_binaries_stats st;
	char reason[160];

	vm_binaries_stats(sc->home, &st);
	if (limit < sc->file_max_bytes)
		snprintf(reason, sizeof(reason),
			 "its symbols outgrow the %zu MiB the symbol cache "
			 "has left of %zu MiB",
			 limit >> 20, (size_t)st.max_bytes >> 20);
	else
		snprintf(reason, sizeof(reason),
			 "its symbols take more than %zu MiB, the most one "
			 "binary may have",
			 sc->file_max_bytes >> 20);
	vm_binaries_skip(sc->home, VM_BINARY_SYMBOLS, file, reason);
}

static void merge_found(struct vm_symcache *sc);

void vm_symcache_lock(struct vm_symcache *sc)
{
	pthread_mutex_lock(&sc->lock);
	merge_found(sc);
}

void vm_symcache_unlock(struct vm_symcache *sc)
{
	for (size_t i = 0; i < sc->n_held; i++)
		vm_binaries_put(sc->home, sc->held[i]);
	sc->n_held = 0;
	pthread_mutex_unlock(&sc->lock);
}

void vm_symcache_stats(struct vm_symcache *sc, struct vm_symcache_stats *out)
{
	struct vm_binaries_stats st;

	vm_binaries_stats(sc->home, &st);
	out->hits = __atomic_load_n(&sc->hits, __ATOMIC_RELAXED);
	out->misses = __atomic_load_n(&sc->misses, __ATOMIC_RELAXED);
	out->kernel_reads =
		__atomic_load_n(&sc->kernel.reads, __ATOMIC_RELAXED);
	out->entries = st.facet[VM_BINARY_SYMBOLS].filled;
	out->bytes = st.facet[VM_BINARY_SYMBOLS].bytes;
}

int vm_symcache_kernel(struct vm_symcache *sc, const struct vm_kallsyms **out)
{
	return vm_kallsyms_get(&sc->kernel, out, NULL);
}

enum read_step {
	READ_OPEN, /* open and stat the binary */
	READ_OWN, /* read it into f, with the agent's own debug file */
	READ_FIND, /* open the first debug file the places under a root show */
	READ_OTHER, /* read it again into f, with that debug file */
};

/*
 * Reading one binary, as I/O pool jobs (agent/iopool/iopool.h): its files
 * are a target's, on whatever mount it runs from.  Each step is a job;
 * the cache is searched between them.  They touch nothing the lock
 * guards: what they need is copied in, a skipped or refused file only
 * noted here.
 */
struct read_job {
	struct vm_iopool_job job;
	enum read_step step;
	int fd;
	struct stat st;
	struct vm_symfile *f; /* what READ_OWN and READ_OTHER read into */
	struct vm_error err;
	char skipped[PATH_MAX]; /* a debug file over the bound, or "" */
	char refused[PATH_MAX]; /* a debug file not the binary's, or "" */
	struct vm_binary_key refused_key; /* its identity */
	char why[160]; /* why it was refused */
	char debug_dir[PATH_MAX], tools_dir[PATH_MAX];
	char *open_path, *path;
	/* READ_FIND's places, and the one it opened (dbg_fd; -1: none) */
	struct vm_debugfile_place places[VM_DEBUGFILE_PLACES];
	size_t n_places, dbg_place;
	int dbg_fd;
	struct stat dbg_st;
	struct vm_symcache *sc; /* told of debuginfod's answers only */
	struct vm_iopool *iopool; /* what runs it */
};

/*
 * A debug file at path refused as not the binary's: why goes with it in
 * the skipped list /healthz shows, from here or (on a job) from the run.
 */
static void note_refused(struct vm_symcache *sc, struct read_job *job,
			 const char *path, const struct stat *st,
			 const char *why)
{
	if (job) {
		snprintf(job->refused, sizeof(job->refused), "%s", path);
		vm_binary_key_of(st, &job->refused_key);
		snprintf(job->why, sizeof(job->why), "%s", why);
	} else {
		vm_binaries_skip(sc->home, VM_BINARY_SYMBOLS, path, why);
	}
}

/*
 * Merge the debug file fd (at path) into f if it is one for f's binary
 * (debugfile.h's check; by_debuglink: its CRC too).  Whether the search
 * ends: it was taken, or it was the one but too big.
 */
static bool use_debug_file(struct vm_symcache *sc, struct vm_symfile *f, int fd,
			   const char *path, bool by_debuglink,
			   struct read_job *job)
{
	struct vm_elf_info dbg = { .max_bytes = f->info.max_bytes };
	char why[160];
	struct stat st;
	bool ok = false;
	int r;

	if (by_debuglink &&
	    !vm_debugfile_crc_matches(fd, f->info.debuglink_crc))
		return false;
	r = vm_elf_read_fd(fd, &dbg, path, NULL);
	if (r == 0 && dbg.n_syms && fstat(fd, &st))
		r = -errno;
	if (r == 0 && dbg.n_syms &&
	    vm_debugfile_check(&f->info, &dbg, why, sizeof(why)) < 0) {
		note_refused(sc, job, path, &st, why);
	} else if (r == 0 && dbg.n_syms) {
		r = vm_elf_merge_symbols(&f->info, &dbg, true);
		ok = r == 0;
		if (ok) {
			f->debug_path = strdup(path);
			vm_binary_key_of(&st, &f->debug_key);
		}
	}
	/* Too big: the binary keeps its own symbols, and the list says so. */
	if (r == -EFBIG && job)
		snprintf(job->skipped, sizeof(job->skipped), "%s", path);
	else if (r == -EFBIG)
		skip_symbols(sc, path, f->info.max_bytes);
	vm_elf_info_free(&dbg);
	return ok || r == -EFBIG;
}

/* The same, opening path. */
static bool try_debug_file(struct vm_symcache *sc, struct vm_symfile *f,
			   const char *path, bool by_debuglink,
			   struct read_job *job)
{
	_cleanup_close_ int fd = vm_open_regular(path);

	return fd >= 0 && use_debug_file(sc, f, fd, path, by_debuglink, job);
}

static void debug_file_found(void *arg, const uint8_t *id, size_t len,
			     const char *path);

/*
 * The agent's own debug file for f, at path inside the process's root:
 * under our root, then on the tools disk, then (later) from debuginfod.
 */
static void find_own_debug_file(struct vm_symfile *f, const char *path,
				struct read_job *job)
{
	struct vm_debugfile_place *places = job->places;
	size_t n;

	n = vm_debugfile_places(&f->info, path, "", job->debug_dir, places);
	for (size_t i = 0; i < n; i++)
		if (try_debug_file(NULL, f, places[i].path,
				   places[i].by_debuglink, job))
			return;
	n = job->tools_dir[0] ?
		    vm_debugfile_places(&f->info, NULL, job->tools_dir,
					"/usr/lib/debug", places) :
		    0;
	for (size_t i = 0; i < n; i++)
		if (try_debug_file(NULL, f, places[i].path, false, job))
			return;
	/* Last: a server may have it; its answer arrives later. */
	vm_debuginfod_request(job->sc->debuginfod, f->info.build_id,
			      f->info.build_id_len, debug_file_found, job->sc);
}

/* Kept for the next run, which merges it (debuginfod's thread). */
static void debug_file_found(void *arg, const uint8_t *id, size_t len,
			     const char *path)
{
	struct vm_symcache *sc = arg;
	struct found *x;

	if (len > VM_BUILD_ID_MAX)
		return;
	pthread_mutex_lock(&sc->found_lock);
	if (!vm_grow(sc->found, &sc->cap_found, sc->n_found + 1)) {
		x = &sc->found[sc->n_found];
		memcpy(x->id, id, len);
		x->len = len;
		x->path = strdup(path);
		if (x->path)
			sc->n_found++;
	}
	pthread_mutex_unlock(&sc->found_lock);
}

/*
 * The debug files arrived since the last run merged into every binary
 * with their build id and no debug file of the agent's own yet (with the
 * lock held).
 */
static void merge_found(struct vm_symcache *sc)
{
	struct found *found;
	struct vm_binary **held;
	size_t n_found, n_held;

	pthread_mutex_lock(&sc->found_lock);
	found = sc->found;
	n_found = sc->n_found;
	sc->found = NULL;
	sc->n_found = sc->cap_found = 0;
	pthread_mutex_unlock(&sc->found_lock);
	if (!n_found)
		return;
	n_held = vm_binaries_hold_filled(sc->home, VM_BINARY_SYMBOLS, &held);
	for (size_t i = 0; i < n_held; i++) {
		struct symset *set = held[i]->facet[VM_BINARY_SYMBOLS];
		struct vm_symfile *f = set->v[0];

		for (size_t k = 0; k < n_found && !f->debug_path; k++)
			if (f->info.build_id_len == found[k].len &&
			    !memcmp(f->info.build_id, found[k].id,
				    found[k].len) &&
			    try_debug_file(sc, f, found[k].path, false, NULL))
				vm_binary_resize(sc->home, held[i],
						 VM_BINARY_SYMBOLS,
						 symset_bytes(set));
		vm_binaries_put(sc->home, held[i]);
	}
	free(held);
	for (size_t k = 0; k < n_found; k++)
		free(found[k].path);
	free(found);
}

/* READ_OPEN: the binary opened and its identity in j->st. */
static int open_binary(struct read_job *j)
{
	const char *name = j->path ? j->path : j->open_path;

	j->fd = vm_open_regular(j->open_path);
	if (j->fd == -EINVAL)
		return vm_error_set(&j->err, EINVAL, "%s is not a regular file",
				    name);
	if (j->fd < 0)
		return vm_error_errno(&j->err, -j->fd, "cannot open %s",
				      j->open_path);
	if (fstat(j->fd, &j->st))
		return vm_error_errno(&j->err, errno, "cannot stat %s",
				      j->open_path);
	__atomic_store_n(&j->job.dev, (uint64_t)j->st.st_dev, __ATOMIC_RELAXED);
	return 0;
}

/* READ_FIND: the first of j->places that opens, in j->dbg_fd. */
static void find_in_root(struct read_job *j)
{
	for (size_t i = 0; i < j->n_places && j->dbg_fd < 0; i++) {
		int fd = vm_open_regular(j->places[i].path);

		if (fd < 0)
			continue;
		if (fstat(fd, &j->dbg_st)) {
			close(fd);
			continue;
		}
		j->dbg_fd = fd;
		j->dbg_place = i;
	}
}

static int read_run(struct vm_iopool_job *job)
{
	struct read_job *j = vm_iopool_owner(job, struct read_job);
	const char *name = j->path ? j->path : j->open_path;
	struct vm_symfile *f = j->f;
	int r;

	if (j->step == READ_OPEN)
		return open_binary(j);
	if (j->step == READ_FIND) {
		find_in_root(j);
		return 0;
	}
	r = vm_elf_read_fd(j->fd, &f->info, name, &j->err);
	if (r == -EFBIG && j->step == READ_OWN) {
		/* Kept without symbols, so it is not read again each profile. */
		size_t limit = f->info.max_bytes;

		snprintf(j->skipped, sizeof(j->skipped), "%s", name);
		vm_elf_info_free(&f->info);
		f->info.max_bytes = limit;
		f->skipped = true;
		return 0;
	}
	if (r < 0)
		return r;
	if (j->step == READ_OTHER)
		use_debug_file(NULL, f, j->dbg_fd, j->places[j->dbg_place].path,
			       j->places[j->dbg_place].by_debuglink, j);
	else if (!f->info.has_symtab)
		find_own_debug_file(f, j->path, j);
	return 0;
}

static void read_free(struct vm_iopool_job *job)
{
	struct read_job *j = vm_iopool_owner(job, struct read_job);

	if (j->fd >= 0)
		close(j->fd);
	if (j->dbg_fd >= 0)
		close(j->dbg_fd);
	if (j->f)
		symfile_free(j->f);
	free(j->open_path);
	free(j->path);
	free(j);
}

static struct read_job *read_job_new(struct vm_symcache *sc,
				     const char *open_path, const char *path)
{
	struct read_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->fd = j->dbg_fd = -1;
	j->job = (struct vm_iopool_job){ .run = read_run, .free = read_free };
	vm_iopool_owner_path(&j->job, open_path);
	j->open_path = strdup(open_path);
	j->path = path ? strdup(path) : NULL;
	j->sc = sc;
	j->iopool = sc->iopool;
	snprintf(j->debug_dir, sizeof(j->debug_dir), "%s", sc->debug_dir);
	snprintf(j->tools_dir, sizeof(j->tools_dir), "%s", sc->tools_dir);
	if (!j->open_path || (path && !j->path)) {
		read_free(&j->job);
		return NULL;
	}
	return j;
}

/*
 * Run j's step: 0, or what the I/O pool or the job said, in err.  On an
 * error the job is freed, by the I/O pool or here.
 */
static int read_step(struct read_job *j, enum read_step step,
		     unsigned timeout_ms, struct vm_error *err)
{
	const char *name = j->path ? j->path : j->open_path;
	char what[256];
	int r;

	j->step = step;
	snprintf(what, sizeof(what), "%s", name);
	r = vm_iopool_run(j->iopool, &j->job, timeout_ms);
	if (r == -ETIMEDOUT)
		return vm_error_set(err, ETIMEDOUT,
				    "reading %s did not finish within %u ms "
				    "(a frozen mount?)",
				    what, timeout_ms);
	if (r < 0)
		return vm_error_errno(err, -r, "cannot read %s", what);
	r = j->job.result;
	if (r < 0) {
		if (err)
			*err = j->err;
		read_free(&j->job);
	}
	return r;
}

/* Keep b held until the run ends. */
static int hold_for_run(struct vm_symcache *sc, struct vm_binary *b)
{
	if (vm_grow(sc->held, &sc->cap_held, sc->n_held + 1)) {
		vm_binaries_put(sc->home, b);
		return -ENOMEM;
	}
	sc->held[sc->n_held++] = b;
	return 0;
}

/* A new symbol file for the binary j opened, bounded by the room left. */
static struct vm_symfile *new_symfile(struct vm_symcache *sc,
				      const struct read_job *j)
{
	struct vm_symfile *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->dev = j->st.st_dev;
	f->ino = j->st.st_ino;
	/* Nothing fits: reading stops at the first symbol. */
	f->info.max_bytes = vm_binaries_room(sc->home, sc->file_max_bytes);
	if (!f->info.max_bytes)
		f->info.max_bytes = 1;
	return f;
}

/* What a job left to say, said with the lock held. */
static void say_skipped(struct vm_symcache *sc, struct read_job *j)
{
	if (j->skipped[0])
		skip_symbols(sc, j->skipped, j->f->info.max_bytes);
	if (j->refused[0])
		vm_binaries_skip(sc->home, VM_BINARY_SYMBOLS, j->refused,
				 j->why);
}

/* Remember a debug file refused (its identity), not to read it again. */
static void remember_refused(struct symset *set,
			     const struct vm_binary_key *key)
{
	const size_t max = sizeof(set->refused) / sizeof(set->refused[0]);

	set->refused[set->n_refused++ % max] = *key;
}

/* The held entry b's facet, read and filled on j (not freed here). */
static int read_own(struct vm_symcache *sc, struct read_job *j,
		    struct vm_binary *b, struct symset **out,
		    struct vm_error *err)
{
	const char *name = j->path ? j->path : j->open_path;
	struct symset *set;
	void *got;
	int r;

	j->f = new_symfile(sc, j);
	if (!j->f) {
		read_free(&j->job);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	r = read_step(j, READ_OWN, VM_IOPOOL_READ_MS, err);
	if (r < 0)
		return r; /* j->f with it */
	say_skipped(sc, j);
	set = calloc(1, sizeof(*set));
	if (!set) {
		read_free(&j->job);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	set->v[set->n++] = j->f;
	j->f = NULL; /* the home's now, or freed by it */
	r = vm_binary_fill(sc->home, b, VM_BINARY_SYMBOLS, set,
			   symset_bytes(set), symset_free, "symbols", name,
			   &got);
	if (!got) {
		r = vm_error_set(err, -r, "no room for the symbols of %s",
				 name);
		read_free(&j->job);
		return r;
	}
	if (j->refused[0])
		remember_refused(got, &j->refused_key);
	*out = got;
	return 0;
}

static bool same_key(const struct vm_binary_key *a,
		     const struct vm_binary_key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns;
}

/*
 * What the I/O pool knows the debug files under root (/proc/PID/root) by:
 * not the binary's device, which a timeout would mark (the user of a
 * mount namespace of its own may mount a file system that never answers
 * where debug files are looked for, and the binaries every process maps
 * must still be read), but the process's mount namespace: its inode with
 * bit 63 set, which no device number has.  0 when not known.
 */
static uint64_t root_key(const char *root)
{
	size_t len = strlen(root);
	char path[PATH_MAX];
	struct stat st;

	if (len < 5 || strcmp(root + len - 5, "/root") ||
	    snprintf(path, sizeof(path), "%.*s/ns/mnt", (int)(len - 5), root) >=
		    (int)sizeof(path) ||
	    stat(path, &st))
		return 0;
	return 1ULL << 63 | st.st_ino;
}

/*
 * The symbols for a process whose root is root: those with the first
 * debug file found under it, when that is another file than the agent's
 * own and the binary's, else set's first.  Frees j.
 */
static struct vm_symfile *for_root(struct vm_symcache *sc, struct read_job *j,
				   struct vm_binary *b, struct symset *set,
				   const char *root)
{
	const size_t n_refused = sizeof(set->refused) / sizeof(set->refused[0]);
	const size_t max = sizeof(set->v) / sizeof(set->v[0]);
	struct vm_symfile *own = set->v[0], *f;
	struct vm_binary_key key;

	if (!root || !root[0] || own->skipped || own->info.has_symtab)
		goto own;
	j->n_places = vm_debugfile_places(&own->info, j->path, root,
					  j->debug_dir, j->places);
	__atomic_store_n(&j->job.dev, root_key(root), __ATOMIC_RELAXED);
	if (read_step(j, READ_FIND, VM_IOPOOL_OPEN_MS, NULL) < 0)
		return own; /* j freed */
	if (j->dbg_fd < 0)
		goto own;
	vm_binary_key_of(&j->dbg_st, &key);
	if (same_key(&key, &own->debug_key))
		goto own;
	for (size_t i = 1; i < set->n; i++)
		if (same_key(&key, &set->v[i]->debug_key)) {
			read_free(&j->job);
			return set->v[i];
		}
	for (size_t i = 0; i < set->n_refused && i < n_refused; i++)
		if (same_key(&key, &set->refused[i]))
			goto own;
	if (set->n == max ||
	    set->other_reads >= VM_SYMCACHE_OTHER_DEBUG_READS) {
		if (!set->said_full)
			vm_binaries_skip(sc->home, VM_BINARY_SYMBOLS,
					 j->places[j->dbg_place].path,
					 "its binary has the debug files of "
					 "other roots it may keep already: the "
					 "agent's own names its frames");
		set->said_full = true;
		goto own;
	}
	set->other_reads++;
	j->f = new_symfile(sc, j);
	if (!j->f)
		goto own;
	if (read_step(j, READ_OTHER, VM_IOPOOL_READ_MS, NULL) < 0)
		return own; /* j freed, j->f with it */
	say_skipped(sc, j);
	if (!j->f->debug_path) {
		remember_refused(set, &key);
		goto own;
	}
	f = set->v[set->n++] = j->f;
	j->f = NULL;
	vm_binary_resize(sc->home, b, VM_BINARY_SYMBOLS, symset_bytes(set));
	read_free(&j->job);
	return f;
own:
	read_free(&j->job);
	return own;
}

int vm_symcache_get(struct vm_symcache *sc, const char *open_path,
		    const char *path, const char *root, uint64_t dev,
		    const struct vm_symfile **out, struct vm_error *err)
{
	struct read_job *j = read_job_new(sc, open_path, path);
	struct vm_binary_key key;
	struct vm_binary *b;
	struct symset *set = NULL;
	void *got;
	int r;

	if (!j)
		return vm_error_set(err, ENOMEM, "out of memory");
	j->job.dev = dev;
	r = read_step(j, READ_OPEN, VM_IOPOOL_OPEN_MS, err);
	if (r < 0)
		return r;
	vm_binary_key_of(&j->st, &key);
	b = vm_binaries_hold(sc->home, &key);
	if (!b || hold_for_run(sc, b) < 0) {
		read_free(&j->job);
		return vm_error_set(err, ENOMEM,
				    "no room for another binary: every one "
				    "the agent remembers is in use");
	}
	if (vm_binary_facet(sc->home, b, VM_BINARY_SYMBOLS, &got) && got) {
		__atomic_fetch_add(&sc->hits, 1, __ATOMIC_RELAXED);
		set = got;
	} else {
		__atomic_fetch_add(&sc->misses, 1, __ATOMIC_RELAXED);
		r = read_own(sc, j, b, &set, err);
		if (r < 0)
			return r;
	}
	*out = for_root(sc, j, b, set, root);
	return 0;
}

void vm_symcache_wait_lookups(struct vm_symcache *sc, unsigned max_ms)
{
	vm_debuginfod_wait(sc->debuginfod, max_ms);
}

bool vm_symcache_holds(struct vm_symcache *sc, uint64_t dev, uint64_t ino)
{
	return vm_binaries_has(sc->home, VM_BINARY_SYMBOLS, dev, ino);
}

int vm_symcache_get_vdso(struct vm_symcache *sc, const struct vm_symfile **out)
{
	const void *image;
	size_t size;

	if (sc->vdso_state == 0) {
		sc->vdso_state = -1;
		if (vm_vdso_image(&image, &size) &&
		    vm_elf_read_mem(image, size, &sc->vdso.info, "[vdso]",
				    NULL) == 0)
			sc->vdso_state = 1;
	}
	if (sc->vdso_state < 0)
		return -ENOENT;
	*out = &sc->vdso;
	return 0;
}
