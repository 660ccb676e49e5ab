// SPDX-License-Identifier: Apache-2.0
/*
 * unwind_cache.c - unwind tables built once per binary and kept
 * (unwind_cache.h).
 *
 * One lock guards the list; it is never held while a file is read.  An
 * ask for a binary not in the list reads its build id and builds its
 * table on an I/O pool worker (the caller waits at most VM_IOPOOL_READ_MS),
 * then takes the lock again to insert it: two that raced keep the first
 * and free the second.  A binary without call frame information is kept
 * too, as an empty entry, so it is not read again.
 */
#include "agent/unwind/unwind_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/iopool/iopool.h"
#include "common/array.h"

#define BUILD_ID_MAX 64
#define NT_GNU_BUILD_ID_TYPE 3

/* What a binary is known by. */
struct key {
	uint8_t id[BUILD_ID_MAX];
	uint8_t id_len; /* 0: none, the file's identity instead */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

struct entry {
	struct key key;
	struct vm_unwind_table *t; /* NULL: the binary has none */
	size_t bytes;
	uint64_t refs; /* sessions holding it */
	uint64_t used; /* when last asked, in asks */
};

static struct {
	pthread_mutex_t lock;
	struct entry *v;
	size_t n, cap;
	size_t bytes, max_bytes;
	uint64_t builds, hits, skipped, clock;
	char last_skipped[256];
} cache = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.max_bytes = VM_UNWIND_CACHE_MAX_BYTES,
};

static bool same_key(const struct key *a, const struct key *b)
{
	if (a->id_len || b->id_len)
		return a->id_len == b->id_len &&
		       !memcmp(a->id, b->id, a->id_len);
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* The GNU build id of e from its PT_NOTE segments, into k. */
static void build_id_of(Elf *e, struct key *k)
{
	size_t n;

	if (elf_getphdrnum(e, &n))
		return;
	for (size_t i = 0; i < n && i < 64; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz,
					 ELF_T_NHDR);
		while (d && (off = gelf_getnote(d, off, &nh, &name_off,
						&desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID_TYPE &&
			    nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + name_off, "GNU", 4) &&
			    nh.n_descsz > 0 && nh.n_descsz <= BUILD_ID_MAX) {
				memcpy(k->id, (char *)d->d_buf + desc_off,
				       nh.n_descsz);
				k->id_len = (uint8_t)nh.n_descsz;
				return;
			}
		}
	}
}

/* Reading a binary: its key, then its table unless the cache has it. */
struct build_job {
	struct vm_iopool_job job;
	int fd; /* the job's own */
	char *what;
	struct key key;
	struct vm_unwind_table *t;
};

static int key_run(struct vm_iopool_job *job)
{
	struct build_job *j = vm_iopool_owner(job, struct build_job);
	struct stat st;
	Elf *e;

	if (fstat(j->fd, &st) < 0)
		return -errno;
	j->key.dev = st.st_dev;
	j->key.ino = st.st_ino;
	j->key.size = st.st_size;
	j->key.mtime = st.st_mtim;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	e = elf_begin(j->fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -EINVAL;
	build_id_of(e, &j->key);
	elf_end(e);
	return 0;
}

static int build_run(struct vm_iopool_job *job)
{
	struct build_job *j = vm_iopool_owner(job, struct build_job);

	j->t = calloc(1, sizeof(*j->t));
	if (!j->t)
		return -ENOMEM;
	if (vm_unwind_table_build_fd(j->fd, j->t, j->what, NULL) < 0 ||
	    !j->t->n) {
		vm_unwind_table_free(j->t);
		free(j->t);
		j->t = NULL;
	} else if (j->t->cap > j->t->n) {
		/* Kept for long: no room left for rows that never come. */
		struct vm_unwind_row *rows =
			realloc(j->t->rows, j->t->n * sizeof(*rows));

		if (rows) {
			j->t->rows = rows;
			j->t->cap = j->t->n;
		}
	}
	return 0;
}

static void job_free(struct vm_iopool_job *job)
{
	struct build_job *j = vm_iopool_owner(job, struct build_job);

	if (j->t) {
		vm_unwind_table_free(j->t);
		free(j->t);
	}
	if (j->fd >= 0)
		close(j->fd);
	free(j->what);
	free(j);
}

/* Run j's step: 0, or a negative errno (j is then freed). */
static int run(struct build_job *j, int (*step)(struct vm_iopool_job *))
{
	int r;

	j->job.run = step;
	j->job.started = j->job.finished = j->job.abandoned = false;
	r = vm_iopool_run(&j->job, VM_IOPOOL_READ_MS);
	if (r < 0)
		return r; /* the I/O pool frees it */
	if (j->job.result < 0) {
		r = j->job.result;
		job_free(&j->job);
		return r;
	}
	return 0;
}

/* The entry with key k (under the lock), or NULL. */
static struct entry *find(const struct key *k)
{
	for (size_t i = 0; i < cache.n; i++)
		if (same_key(&cache.v[i].key, k))
			return &cache.v[i];
	return NULL;
}

static void drop(size_t i)
{
	if (cache.v[i].t) {
		vm_unwind_table_free(cache.v[i].t);
		free(cache.v[i].t);
	}
	cache.bytes -= cache.v[i].bytes;
	cache.v[i] = cache.v[--cache.n];
}

/*
 * Drop the least recently used entry no session holds (under the lock),
 * only among those with a table when with_table: false when there is none.
 */
static bool evict_oldest(bool with_table)
{
	size_t oldest = cache.n;

	for (size_t i = 0; i < cache.n; i++)
		if (!cache.v[i].refs && (!with_table || cache.v[i].t) &&
		    (oldest == cache.n ||
		     cache.v[i].used < cache.v[oldest].used))
			oldest = i;
	if (oldest == cache.n)
		return false;
	drop(oldest);
	return true;
}

/*
 * Room for one more entry of bytes (under the lock): unheld entries
 * evicted, least recently used first.  Entries are bounded in number too
 * (VM_UNWIND_CACHE_MAX_ENTRIES): those of binaries without a table take
 * no bytes, but a process can map many.
 */
static bool make_room(size_t bytes)
{
	while (cache.n >= VM_UNWIND_CACHE_MAX_ENTRIES)
		if (!evict_oldest(false))
			return false;
	while (cache.bytes + bytes > cache.max_bytes)
		if (!evict_oldest(true))
			return false;
	return true;
}

/* Hand e out (under the lock). */
static const struct vm_unwind_table *take(struct entry *e)
{
	e->used = ++cache.clock;
	if (!e->t)
		return NULL;
	e->refs++;
	return e->t;
}

static const struct vm_unwind_table *insert(struct build_job *j)
{
	const struct vm_unwind_table *t = NULL;
	size_t bytes = j->t ? vm_unwind_table_bytes(j->t) : 0;
	struct entry *e;

	pthread_mutex_lock(&cache.lock);
	e = find(&j->key);
	if (e) {
		/* Another built it meanwhile: keep theirs. */
		t = take(e);
	} else if (!make_room(bytes)) {
		cache.skipped++;
		snprintf(
			cache.last_skipped, sizeof(cache.last_skipped),
			"%s: its unwind table (%zu bytes) would pass the bound of %zu bytes or %d binaries",
			j->what, bytes, cache.max_bytes,
			VM_UNWIND_CACHE_MAX_ENTRIES);
	} else if (!vm_grow(cache.v, &cache.cap, cache.n + 1)) {
		e = &cache.v[cache.n++];
		*e = (struct entry){ .key = j->key, .t = j->t, .bytes = bytes };
		j->t = NULL;
		cache.bytes += bytes;
		cache.builds++;
		t = take(e);
	}
	pthread_mutex_unlock(&cache.lock);
	job_free(&j->job);
	return t;
}

const struct vm_unwind_table *vm_unwind_cache_get(int fd, const char *what)
{
	const struct vm_unwind_table *t;
	struct build_job *j = calloc(1, sizeof(*j));
	struct entry *e;

	if (!j)
		return NULL;
	j->job.free = job_free;
	j->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	j->what = strdup(what ? what : "a binary");
	if (j->fd < 0 || !j->what) {
		job_free(&j->job);
		return NULL;
	}
	if (run(j, key_run) < 0)
		return NULL;
	pthread_mutex_lock(&cache.lock);
	e = find(&j->key);
	if (e) {
		cache.hits++;
		t = take(e);
		pthread_mutex_unlock(&cache.lock);
		job_free(&j->job);
		return t;
	}
	pthread_mutex_unlock(&cache.lock);
	if (run(j, build_run) < 0)
		return NULL;
	return insert(j);
}

void vm_unwind_cache_put(const struct vm_unwind_table *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&cache.lock);
	for (size_t i = 0; i < cache.n; i++)
		if (cache.v[i].t == t && cache.v[i].refs) {
			cache.v[i].refs--;
			break;
		}
	pthread_mutex_unlock(&cache.lock);
}

void vm_unwind_cache_stats(struct vm_unwind_cache_stats *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&cache.lock);
	for (size_t i = 0; i < cache.n; i++)
		out->tables += cache.v[i].t != NULL;
	out->bytes = cache.bytes;
	out->max_bytes = cache.max_bytes;
	out->builds = cache.builds;
	out->hits = cache.hits;
	out->skipped = cache.skipped;
	memcpy(out->last_skipped, cache.last_skipped,
	       sizeof(out->last_skipped));
	pthread_mutex_unlock(&cache.lock);
}

void vm_unwind_cache_set_limit(size_t max_bytes)
{
	pthread_mutex_lock(&cache.lock);
	cache.max_bytes = max_bytes;
	pthread_mutex_unlock(&cache.lock);
}

void vm_unwind_cache_clear(void)
{
	pthread_mutex_lock(&cache.lock);
	for (size_t i = cache.n; i-- > 0;)
		if (!cache.v[i].refs)
			drop(i);
	if (!cache.n) {
		free(cache.v);
		cache.v = NULL;
		cache.cap = 0;
	}
	pthread_mutex_unlock(&cache.lock);
}
