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
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "agent/symbolize/debuginfod.h"
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
static size_t n_files;
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
 * A file's symbols outgrew their bound (EFBIG): say which bound in the
 * list /healthz shows.
 */
static void skip_symbols(const char *file, const struct vm_elf_info *info)
{
	char reason[160];

	if (info->max_bytes < file_max_bytes)
		snprintf(reason, sizeof(reason),
			 "its symbols outgrow the %zu MiB the symbol cache "
			 "has left of %zu MiB",
			 info->max_bytes >> 20, max_bytes >> 20);
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
	n_files = 0;
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

/* Read the debug file at path into f if it is one for f's binary. */
static bool try_debug_file(struct vm_symfile *f, const char *path,
			   bool check_crc)
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
	if (r == -EFBIG)
		skip_symbols(path, &f->info);
	vm_elf_info_free(&dbg);
	return ok || r == -EFBIG;
}

static void find_debug_file(struct vm_symfile *f, const char *path,
			    const char *root)
{
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
			    try_debug_file(f, p, false))
				return;
		}
		if (!f->info.debuglink || !slash)
			continue;
		if (path_fmt(p, sizeof(p), "%s%s/%s", roots[r], dir,
			     f->info.debuglink) &&
		    strcmp(p + strlen(roots[r]), path) &&
		    try_debug_file(f, p, true))
			return;
		if (path_fmt(p, sizeof(p), "%s%s/.debug/%s", roots[r], dir,
			     f->info.debuglink) &&
		    try_debug_file(f, p, true))
			return;
		if (path_fmt(p, sizeof(p), "%s%s%s/%s", roots[r], debug_dir,
			     dir, f->info.debuglink) &&
		    try_debug_file(f, p, true))
			return;
	}
	if (tools_dir[0] && f->info.build_id_len >= 2 &&
	    path_fmt(p, sizeof(p), "%s/usr/lib/debug/.build-id/%.2s/%s.debug",
		     tools_dir, hex, hex + 2) &&
	    try_debug_file(f, p, false))
		return;
	/* Last: a server may have it; its answer arrives later. */
	vm_debuginfod_request(f->info.build_id, f->info.build_id_len);
}

void vm_symcache_debug_file_found(const uint8_t *id, size_t len,
				  const char *path)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n_files; i++) {
		struct vm_symfile *f = files[i];

		if (!f->debug_path && f->info.build_id_len == len &&
		    !memcmp(f->info.build_id, id, len))
			try_debug_file(f, path, false);
	}
	pthread_mutex_unlock(&lock);
}

int vm_symcache_get(const char *open_path, const char *path, const char *root,
		    const struct vm_symfile **out, struct vm_error *err)
{
	_cleanup_close_ int fd = vm_open_regular(open_path);
	struct vm_symfile *f;
	struct stat st;
	void *nv;
	int r;

	if (fd == -EINVAL)
		return vm_error_set(err, EINVAL, "%s is not a regular file",
				    path ? path : open_path);
	if (fd < 0)
		return vm_error_errno(err, -fd, "cannot open %s", open_path);
	if (fstat(fd, &st))
		return vm_error_errno(err, errno, "cannot stat %s", open_path);
	if (!S_ISREG(st.st_mode))
		return vm_error_set(err, EINVAL, "%s is not a regular file",
				    path ? path : open_path);
	for (size_t i = 0; i < n_files; i++) {
		f = files[i];
		if (f->dev == st.st_dev && f->ino == st.st_ino &&
		    f->size == (uint64_t)st.st_size &&
		    f->mtime_ns == st.st_mtim.tv_sec * 1000000000LL +
					   st.st_mtim.tv_nsec) {
			f->last_used = run;
			hits++;
			*out = f;
			return 0;
		}
	}
	misses++;
	f = calloc(1, sizeof(*f));
	if (!f)
		return vm_error_set(err, ENOMEM, "out of memory");
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->size = st.st_size;
	f->mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	f->last_used = run;
	f->info.max_bytes = room_for_one();
	r = vm_elf_read_fd(fd, &f->info, path ? path : open_path, err);
	if (r == -EFBIG) {
		/* Kept without symbols, so it is not read again each profile. */
		size_t limit = f->info.max_bytes;

		skip_symbols(path ? path : open_path, &f->info);
		vm_elf_info_free(&f->info);
		f->info.max_bytes = limit;
		f->skipped = true;
	} else if (r < 0) {
		symfile_free(f);
		return r;
	} else if (!f->info.has_symtab) {
		find_debug_file(f, path, root ? root : "");
	}
	if (n_files >= SYMCACHE_MAX)
		evict_one();
	nv = reallocarray(files, n_files + 1, sizeof(*files));
	if (!nv) {
		symfile_free(f);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	files = nv;
	files[n_files++] = f;
	*out = f;
	return 0;
}

/* The size of our vDSO mapping, from /proc/self/maps. */
static size_t vdso_size(uintptr_t base)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/maps", "re");
	char line[512];

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long start, end;

		if (strstr(line, "[vdso]") &&
		    sscanf(line, "%llx-%llx", &start, &end) == 2 &&
		    start == base)
			return end - start;
	}
	return 0;
}

int vm_symcache_get_vdso(const struct vm_symfile **out)
{
	static struct vm_symfile vdso;
	static int state; /* 0 not tried, 1 read, -1 failed */
	uintptr_t base = getauxval(AT_SYSINFO_EHDR);
	size_t size;

	if (state == 0) {
		state = -1;
		size = base ? vdso_size(base) : 0;
		if (size && vm_elf_read_mem((const void *)base, size,
					    &vdso.info, "[vdso]", NULL) == 0)
			state = 1;
	}
	if (state < 0)
		return -ENOENT;
	*out = &vdso;
	return 0;
}
