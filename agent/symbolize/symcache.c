// SPDX-License-Identifier: Apache-2.0
/*
 * symcache.c - per-binary symbol tables kept across profiles, with the
 * search for separate debug files the way gdb does it (see symcache.h):
 *
 *   DEBUG/.build-id/xx/yyyy….debug            by GNU build id
 *   DIR/NAME, DIR/.debug/NAME, DEBUG/DIR/NAME  by .gnu_debuglink NAME,
 *                                              checked against its CRC32
 *
 * each first under the process's root, then under ours; then by build id
 * on the tools disk (MOUNTPOINT/usr/lib/debug/.build-id/xx/yyyy.debug,
 * where `vmtools-image build --debug-dir` puts them).
 */
#include "agent/symbolize/symcache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "agent/iopool/iopool.h"
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

static void symfile_free_facet(void *data)
{
	symfile_free(data);
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

/* snprintf that says whether the whole path fitted. */
__attribute__((format(printf, 3, 4))) static bool
path_fmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < size;
}

static bool crc_matches(int fd, uint32_t want)
{
	struct stat st;
	void *p;
	uLong crc;

	if (fstat(fd, &st) || st.st_size <= 0)
		return false;
	p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return false;
	crc = crc32(0L, Z_NULL, 0);
	/* zlib's crc32 takes uInt lengths: feed large files in pieces. */
	for (off_t off = 0; off < st.st_size;) {
		size_t len = st.st_size - off > (1 << 30) ? 1 << 30 :
							    st.st_size - off;

		crc = crc32(crc, (const Bytef *)p + off, (uInt)len);
		off += len;
	}
	munmap(p, st.st_size);
	return (uint32_t)crc == want;
}

/*
 * Reading one binary, as two I/O pool jobs (agent/iopool/iopool.h): it is a
 * file of the target's, on whatever mount it runs from.  The first opens
 * and stats it (the cache is then searched), the second reads its
 * symbols and its debug file's into f.  They touch nothing the lock
 * guards: the directories are copied, a skipped file is only noted here.
 */
struct read_job {
	struct vm_iopool_job job;
	int fd;
	struct stat st;
	struct vm_symfile *f; /* NULL: open and stat; else read into it */
	struct vm_error err;
	char skipped[PATH_MAX]; /* a debug file over the bound, or "" */
	char debug_dir[PATH_MAX], tools_dir[PATH_MAX];
	char *open_path, *path, *root;
	struct vm_symcache *sc; /* told of debuginfod's answers only */
	struct vm_iopool *iopool; /* what runs it */
};

/* Read the debug file at path into f if it is one for f's binary. */
static bool try_debug_file(struct vm_symcache *sc, struct vm_symfile *f,
			   const char *path, bool check_crc,
			   struct read_job *job)
{
	_cleanup_close_ int fd = vm_open_regular(path);
	struct vm_elf_info dbg = { .max_bytes = f->info.max_bytes };
	bool ok = false;
	int r;

	if (fd < 0)
		return false;
	if (check_crc && !crc_matches(fd, f->info.debuglink_crc))
		return false;
	r = vm_elf_read_fd(fd, &dbg, path, NULL);
	if (r == 0 && dbg.n_syms &&
	    (!f->info.build_id_len || !dbg.build_id_len ||
	     (dbg.build_id_len == f->info.build_id_len &&
	      !memcmp(dbg.build_id, f->info.build_id, dbg.build_id_len)))) {
		r = vm_elf_merge_symbols(&f->info, &dbg, true);
		ok = r == 0;
		if (ok)
			f->debug_path = strdup(path);
	}
	/* Too big: the binary keeps its own symbols, and the list says so. */
	if (r == -EFBIG && job)
		snprintf(job->skipped, sizeof(job->skipped), "%s", path);
	else if (r == -EFBIG)
		skip_symbols(sc, path, f->info.max_bytes);
	vm_elf_info_free(&dbg);
	return ok || r == -EFBIG;
}

static void debug_file_found(void *arg, const uint8_t *id, size_t len,
			     const char *path);

static void find_debug_file(struct vm_symfile *f, const char *path,
			    const char *root, struct read_job *job)
{
	const char *debug_dir = job->debug_dir, *tools_dir = job->tools_dir;
	const char *roots[2] = { root, "" };
	char p[PATH_MAX], hex[2 * VM_BUILD_ID_MAX + 1], dir[PATH_MAX];
	char *slash;

	for (size_t i = 0; i < f->info.build_id_len; i++)
		sprintf(hex + 2 * i, "%02x", f->info.build_id[i]);
	snprintf(dir, sizeof(dir), "%s", path ? path : "");
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';

	for (size_t r = 0; r < 2; r++) {
		if (r == 1 && !strcmp(roots[0], ""))
			break;
		if (f->info.build_id_len >= 2) {
			if (path_fmt(p, sizeof(p),
				     "%s%s/.build-id/%.2s/%s.debug", roots[r],
				     debug_dir, hex, hex + 2) &&
			    try_debug_file(NULL, f, p, false, job))
				return;
		}
		if (!f->info.debuglink || !slash)
			continue;
		if (path_fmt(p, sizeof(p), "%s%s/%s", roots[r], dir,
			     f->info.debuglink) &&
		    strcmp(p + strlen(roots[r]), path) &&
		    try_debug_file(NULL, f, p, true, job))
			return;
		if (path_fmt(p, sizeof(p), "%s%s/.debug/%s", roots[r], dir,
			     f->info.debuglink) &&
		    try_debug_file(NULL, f, p, true, job))
			return;
		if (path_fmt(p, sizeof(p), "%s%s%s/%s", roots[r], debug_dir,
			     dir, f->info.debuglink) &&
		    try_debug_file(NULL, f, p, true, job))
			return;
	}
	if (tools_dir[0] && f->info.build_id_len >= 2 &&
	    path_fmt(p, sizeof(p), "%s/usr/lib/debug/.build-id/%.2s/%s.debug",
		     tools_dir, hex, hex + 2) &&
	    try_debug_file(NULL, f, p, false, job))
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
 * with their build id and no debug file yet (with the lock held).
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
		struct vm_symfile *f = held[i]->facet[VM_BINARY_SYMBOLS];

		for (size_t k = 0; k < n_found && !f->debug_path; k++)
			if (f->info.build_id_len == found[k].len &&
			    !memcmp(f->info.build_id, found[k].id,
				    found[k].len) &&
			    try_debug_file(sc, f, found[k].path, false, NULL))
				vm_binary_resize(sc->home, held[i],
						 VM_BINARY_SYMBOLS,
						 vm_elf_info_bytes(&f->info));
		vm_binaries_put(sc->home, held[i]);
	}
	free(held);
	for (size_t k = 0; k < n_found; k++)
		free(found[k].path);
	free(found);
}

static int read_run(struct vm_iopool_job *job)
{
	struct read_job *j = vm_iopool_owner(job, struct read_job);
	const char *name = j->path ? j->path : j->open_path;
	struct vm_symfile *f = j->f;
	int r;

	if (!f) {
		j->fd = vm_open_regular(j->open_path);
		if (j->fd == -EINVAL)
			return vm_error_set(&j->err, EINVAL,
					    "%s is not a regular file", name);
		if (j->fd < 0)
			return vm_error_errno(&j->err, -j->fd, "cannot open %s",
					      j->open_path);
		if (fstat(j->fd, &j->st))
			return vm_error_errno(&j->err, errno, "cannot stat %s",
					      j->open_path);
		__atomic_store_n(&job->dev, (uint64_t)j->st.st_dev,
				 __ATOMIC_RELAXED);
		return 0;
	}
	r = vm_elf_read_fd(j->fd, &f->info, name, &j->err);
	if (r == -EFBIG) {
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
	if (!f->info.has_symtab)
		find_debug_file(f, j->path, j->root ? j->root : "", j);
	return 0;
}

static void read_free(struct vm_iopool_job *job)
{
	struct read_job *j = vm_iopool_owner(job, struct read_job);

	if (j->fd >= 0)
		close(j->fd);
	if (j->f)
		symfile_free(j->f);
	free(j->open_path);
	free(j->path);
	free(j->root);
	free(j);
}

static struct read_job *read_job_new(struct vm_symcache *sc,
				     const char *open_path, const char *path,
				     const char *root)
{
	struct read_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->fd = -1;
	j->job = (struct vm_iopool_job){ .run = read_run, .free = read_free };
	j->open_path = strdup(open_path);
	j->path = path ? strdup(path) : NULL;
	j->root = root ? strdup(root) : NULL;
	j->sc = sc;
	j->iopool = sc->iopool;
	snprintf(j->debug_dir, sizeof(j->debug_dir), "%s", sc->debug_dir);
	snprintf(j->tools_dir, sizeof(j->tools_dir), "%s", sc->tools_dir);
	if (!j->open_path || (path && !j->path) || (root && !j->root)) {
		read_free(&j->job);
		return NULL;
	}
	return j;
}

/*
 * Run j: 0, or what the I/O pool or the job said, in err.  On an error the
 * job is freed, by the I/O pool or here.
 */
static int read_step(struct read_job *j, unsigned timeout_ms,
		     struct vm_error *err)
{
	const char *name = j->path ? j->path : j->open_path;
	char what[256];
	int r;

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

int vm_symcache_get(struct vm_symcache *sc, const char *open_path,
		    const char *path, const char *root, uint64_t dev,
		    const struct vm_symfile **out, struct vm_error *err)
{
	struct read_job *j = read_job_new(sc, open_path, path, root);
	struct vm_binary_key key;
	struct vm_binary *b;
	struct vm_symfile *f;
	void *got;
	int r;

	if (!j)
		return vm_error_set(err, ENOMEM, "out of memory");
	j->job.dev = dev;
	r = read_step(j, VM_IOPOOL_OPEN_MS, err);
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
		*out = got;
		read_free(&j->job);
		return 0;
	}
	__atomic_fetch_add(&sc->misses, 1, __ATOMIC_RELAXED);
	f = j->f = calloc(1, sizeof(*f));
	if (!f) {
		read_free(&j->job);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	f->dev = j->st.st_dev;
	f->ino = j->st.st_ino;
	/* Nothing fits: reading stops at the first symbol. */
	f->info.max_bytes = vm_binaries_room(sc->home, sc->file_max_bytes);
	if (!f->info.max_bytes)
		f->info.max_bytes = 1;
	r = read_step(j, VM_IOPOOL_READ_MS, err);
	if (r < 0)
		return r; /* f with it */
	if (j->skipped[0])
		skip_symbols(sc, j->skipped, f->info.max_bytes);
	j->f = NULL; /* the home's now, or freed by it */
	read_free(&j->job);
	r = vm_binary_fill(sc->home, b, VM_BINARY_SYMBOLS, f,
			   vm_elf_info_bytes(&f->info), symfile_free_facet,
			   "symbols", path ? path : open_path, &got);
	if (!got)
		return vm_error_set(err, -r, "no room for the symbols of %s",
				    path ? path : open_path);
	*out = got;
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
