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
#include "common/escape.h"
#include "common/fdio.h"

#define SYMCACHE_MAX 512 /* binaries; oldest unused dropped beyond */
#define SKIPPED_KEPT 8 /* the last binaries skipped, for /healthz */

struct skipped {
	char file[256];
	char reason[160];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct vm_symfile **files;
static size_t n_files, cap_files;
static uint64_t run, hits, misses;
static char debug_dir[PATH_MAX] = "/usr/lib/debug";
static char tools_dir[PATH_MAX]; /* the tools disk's mountpoint, or "" */
static size_t max_bytes = VM_SYMCACHE_MAX_BYTES,
	      file_max_bytes = VM_ELF_SYMBOLS_MAX_BYTES;
static struct skipped skipped[SKIPPED_KEPT];
static uint64_t n_skipped;

void vm_symcache_set_limits(size_t total, size_t per_file)
{
	pthread_mutex_lock(&lock);
	max_bytes = total;
	file_max_bytes = per_file;
	pthread_mutex_unlock(&lock);
}

/* What every entry holds. */
static size_t total_bytes(void)
{
	size_t sum = 0;

	for (size_t i = 0; i < n_files; i++)
		sum += vm_elf_info_bytes(&files[i]->info);
	return sum;
}

static void note_skipped(const char *file, const char *reason)
{
	struct skipped *k = &skipped[n_skipped++ % SKIPPED_KEPT];

	/* Any process names the file: valid UTF-8 for /healthz's JSON. */
	vm_escape(k->file, sizeof(k->file), file, strlen(file), VM_ESCAPE_TEXT);
	snprintf(k->reason, sizeof(k->reason), "%s", reason);
}

/*
 * A file's symbols outgrew their bound, limit (EFBIG): say which bound in
 * the list /healthz shows.  With the lock held.
 */
static void skip_symbols(const char *file, size_t limit)
{
	char reason[160];

	if (limit < file_max_bytes)
		snprintf(reason, sizeof(reason),
			 "its symbols outgrow the %zu MiB the symbol cache "
			 "has left of %zu MiB",
			 limit >> 20, max_bytes >> 20);
	else
		snprintf(reason, sizeof(reason),
			 "its symbols take more than %zu MiB, the most one "
			 "binary may have",
			 file_max_bytes >> 20);
	note_skipped(file, reason);
}

void vm_symcache_skipped(struct vm_symcache_skip *out, size_t max,
			 size_t *n_out, uint64_t *total)
{
	size_t n = 0;

	pthread_mutex_lock(&lock);
	*total = n_skipped;
	/* Newest first. */
	for (uint64_t i = n_skipped;
	     i > 0 && n_skipped - i < SKIPPED_KEPT && n < max; i--, n++) {
		const struct skipped *k = &skipped[(i - 1) % SKIPPED_KEPT];

		snprintf(out[n].file, sizeof(out[n].file), "%s", k->file);
		snprintf(out[n].reason, sizeof(out[n].reason), "%s", k->reason);
	}
	*n_out = n;
	pthread_mutex_unlock(&lock);
}

void vm_symcache_lock(void)
{
	pthread_mutex_lock(&lock);
	run++;
}

void vm_symcache_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

void vm_symcache_set_tools_dir(const char *mountpoint)
{
	pthread_mutex_lock(&lock);
	snprintf(tools_dir, sizeof(tools_dir), "%s", mountpoint);
	pthread_mutex_unlock(&lock);
}

void vm_symcache_set_debug_dir(const char *dir)
{
	pthread_mutex_lock(&lock);
	snprintf(debug_dir, sizeof(debug_dir), "%s", dir);
	pthread_mutex_unlock(&lock);
}

static void symfile_free(struct vm_symfile *f)
{
	vm_elf_info_free(&f->info);
	free(f->debug_path);
	free(f);
}

void vm_symcache_clear(void)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n_files; i++)
		symfile_free(files[i]);
	free(files);
	files = NULL;
	n_files = cap_files = 0;
	hits = misses = n_skipped = 0;
	pthread_mutex_unlock(&lock);
}

void vm_symcache_stats(uint64_t *entries, uint64_t *h, uint64_t *m,
		       uint64_t *bytes)
{
	pthread_mutex_lock(&lock);
	*entries = n_files;
	*h = hits;
	*m = misses;
	*bytes = total_bytes();
	pthread_mutex_unlock(&lock);
}

/*
 * Drop the least recently used entry not used in this run; false when
 * every one is in use.
 */
static bool evict_one(void)
{
	size_t victim = n_files;

	for (size_t i = 0; i < n_files; i++)
		if (files[i]->last_used != run &&
		    (victim == n_files ||
		     files[i]->last_used < files[victim]->last_used))
			victim = i;
	if (victim == n_files)
		return false;
	symfile_free(files[victim]);
	files[victim] = files[--n_files];
	return true;
}

/*
 * What a new entry may take: one file's bound, less when the cache is
 * near its own, after dropping entries this run has not used to make room.
 */
static size_t room_for_one(void)
{
	size_t used = total_bytes();

	while (used + file_max_bytes > max_bytes && evict_one())
		used = total_bytes();
	if (used >= max_bytes)
		return 1; /* nothing fits: reading stops at the first symbol */
	return max_bytes - used < file_max_bytes ? max_bytes - used :
						   file_max_bytes;
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
};

/* Read the debug file at path into f if it is one for f's binary. */
static bool try_debug_file(struct vm_symfile *f, const char *path,
			   bool check_crc, struct read_job *job)
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
		skip_symbols(path, f->info.max_bytes);
	vm_elf_info_free(&dbg);
	return ok || r == -EFBIG;
}

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
			    try_debug_file(f, p, false, job))
				return;
		}
		if (!f->info.debuglink || !slash)
			continue;
		if (path_fmt(p, sizeof(p), "%s%s/%s", roots[r], dir,
			     f->info.debuglink) &&
		    strcmp(p + strlen(roots[r]), path) &&
		    try_debug_file(f, p, true, job))
			return;
		if (path_fmt(p, sizeof(p), "%s%s/.debug/%s", roots[r], dir,
			     f->info.debuglink) &&
		    try_debug_file(f, p, true, job))
			return;
		if (path_fmt(p, sizeof(p), "%s%s%s/%s", roots[r], debug_dir,
			     dir, f->info.debuglink) &&
		    try_debug_file(f, p, true, job))
			return;
	}
	if (tools_dir[0] && f->info.build_id_len >= 2 &&
	    path_fmt(p, sizeof(p), "%s/usr/lib/debug/.build-id/%.2s/%s.debug",
		     tools_dir, hex, hex + 2) &&
	    try_debug_file(f, p, false, job))
		return;
	/* Last: a server may have it; its answer arrives later. */
	vm_debuginfod_request(f->info.build_id, f->info.build_id_len,
			      vm_symcache_debug_file_found);
}

void vm_symcache_debug_file_found(const uint8_t *id, size_t len,
				  const char *path)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n_files; i++) {
		struct vm_symfile *f = files[i];

		if (!f->debug_path && f->info.build_id_len == len &&
		    !memcmp(f->info.build_id, id, len))
			try_debug_file(f, path, false, NULL);
	}
	pthread_mutex_unlock(&lock);
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

static struct read_job *read_job_new(const char *open_path, const char *path,
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
	snprintf(j->debug_dir, sizeof(j->debug_dir), "%s", debug_dir);
	snprintf(j->tools_dir, sizeof(j->tools_dir), "%s", tools_dir);
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
	r = vm_iopool_run(&j->job, timeout_ms);
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

static struct vm_symfile *cached(const struct stat *st)
{
	for (size_t i = 0; i < n_files; i++) {
		struct vm_symfile *f = files[i];

		if (f->dev == st->st_dev && f->ino == st->st_ino &&
		    f->size == (uint64_t)st->st_size &&
		    f->mtime_ns == st->st_mtim.tv_sec * 1000000000LL +
					   st->st_mtim.tv_nsec)
			return f;
	}
	return NULL;
}

int vm_symcache_get(const char *open_path, const char *path, const char *root,
		    uint64_t dev, const struct vm_symfile **out,
		    struct vm_error *err)
{
	struct read_job *j = read_job_new(open_path, path, root);
	struct vm_symfile *f;
	int r;

	if (!j)
		return vm_error_set(err, ENOMEM, "out of memory");
	j->job.dev = dev;
	r = read_step(j, VM_IOPOOL_OPEN_MS, err);
	if (r < 0)
		return r;
	f = cached(&j->st);
	if (f) {
		f->last_used = run;
		hits++;
		*out = f;
		read_free(&j->job);
		return 0;
	}
	misses++;
	f = j->f = calloc(1, sizeof(*f));
	if (!f) {
		read_free(&j->job);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	f->dev = j->st.st_dev;
	f->ino = j->st.st_ino;
	f->size = j->st.st_size;
	f->mtime_ns =
		j->st.st_mtim.tv_sec * 1000000000LL + j->st.st_mtim.tv_nsec;
	f->last_used = run;
	f->info.max_bytes = room_for_one();
	r = read_step(j, VM_IOPOOL_READ_MS, err);
	if (r < 0)
		return r; /* f with it */
	if (j->skipped[0])
		skip_symbols(j->skipped, f->info.max_bytes);
	j->f = NULL; /* the cache's now */
	read_free(&j->job);
	if (n_files >= SYMCACHE_MAX)
		evict_one();
	if (vm_grow(files, &cap_files, n_files + 1) < 0) {
		symfile_free(f);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	files[n_files++] = f;
	*out = f;
	return 0;
}

bool vm_symcache_holds(uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < n_files; i++)
		if (files[i]->dev == dev && files[i]->ino == ino)
			return true;
	return false;
}

int vm_symcache_get_vdso(const struct vm_symfile **out)
{
	static struct vm_symfile vdso;
	static int state; /* 0 not tried, 1 read, -1 failed */
	const void *image;
	size_t size;

	if (state == 0) {
		state = -1;
		if (vm_vdso_image(&image, &size) &&
		    vm_elf_read_mem(image, size, &vdso.info, "[vdso]", NULL) ==
			    0)
			state = 1;
	}
	if (state < 0)
		return -ENOENT;
	*out = &vdso;
	return 0;
}
