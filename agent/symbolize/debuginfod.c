// SPDX-License-Identifier: Apache-2.0
/*
 * debuginfod.c - background lookups of debug files by build id through
 * libdebuginfod (see debuginfod.h).
 *
 * One thread runs the lookups one after the other, each with its own
 * libdebuginfod client (a client is not shared between threads).  Build
 * ids are remembered: one found or answered 404 is never asked again; one
 * that failed (server down, timeout, an answer that is not an ELF file
 * with that build id, which is removed from the cache) is forgotten, so a
 * later profile asks again.  A lookup is aborted through the progress
 * callback when the agent stops.  Lock order: the symbol cache's, then
 * ours.  The library's function table is the process's, loaded once;
 * everything else is the object's (struct vm_debuginfod), which the
 * agent's context holds.
 */
#include "agent/symbolize/debuginfod.h"

#include <dirent.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/samples/sample.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/dl.h"

#ifndef VM_DEBUGINFOD_SONAME
#error "VM_DEBUGINFOD_SONAME: the Makefile gives libdebuginfod's soname"
#endif

/* Build ids remembered at most; beyond, new ones are not looked up. */
#define MAX_IDS 4096
/* What libdebuginfod may take per transfer unless the environment says. */
#define DEFAULT_TIMEOUT_S "10"
#define DEFAULT_MAXSIZE "268435456"

static typeof(debuginfod_begin) *sym_begin;
static typeof(debuginfod_end) *sym_end;
static typeof(debuginfod_find_debuginfo) *sym_find_debuginfo;
static typeof(debuginfod_set_progressfn) *sym_set_progressfn;
static typeof(debuginfod_set_user_data) *sym_set_user_data;
static typeof(debuginfod_get_user_data) *sym_get_user_data;

static const struct vm_dl_func funcs[] = {
	VM_DL_FUNC(debuginfod_begin, sym_begin),
	VM_DL_FUNC(debuginfod_end, sym_end),
	VM_DL_FUNC(debuginfod_find_debuginfo, sym_find_debuginfo),
	VM_DL_FUNC(debuginfod_set_progressfn, sym_set_progressfn),
	VM_DL_FUNC(debuginfod_set_user_data, sym_set_user_data),
	VM_DL_FUNC(debuginfod_get_user_data, sym_get_user_data),
};

static struct vm_dl lib = {
	.soname = VM_DEBUGINFOD_SONAME,
	.funcs = funcs,
	.n_funcs = ARRAY_SIZE(funcs),
};

enum id_state { QUEUED, RUNNING, DONE };

struct id_entry {
	uint8_t id[VM_BUILD_ID_MAX];
	uint8_t len;
	enum id_state state;
	vm_debuginfod_found_fn found; /* the requester's, told of the file */
	void *found_arg;
};

struct vm_debuginfod {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* a lookup queued, or stop */
	pthread_cond_t done; /* a lookup finished (CLOCK_MONOTONIC) */
	struct id_entry ids[MAX_IDS];
	size_t n_ids;
	uint64_t pending, lookups[VM_DEBUGINFOD_OUTCOMES];
	bool enabled, started;
	atomic_bool stopping;
	pthread_t thread;
	char cache_dir[4096];
	char disabled_why[256];
	/* DEBUGINFOD_MAXSIZE as a number: the most one download may bring. */
	long max_bytes;
	/* The running lookup was cut for bringing more (one worker). */
	bool too_big;
};

static const char *const outcome_names[VM_DEBUGINFOD_OUTCOMES] = {
	[VM_DEBUGINFOD_FOUND] = "found",
	[VM_DEBUGINFOD_NOT_FOUND] = "not_found",
	[VM_DEBUGINFOD_FAILED] = "failed",
};

const char *vm_debuginfod_outcome_name(enum vm_debuginfod_outcome o)
{
	return o < VM_DEBUGINFOD_OUTCOMES ? outcome_names[o] : "unknown";
}

int vm_debuginfod_add_url(struct vm_debuginfod_options *o, const char *url,
			  struct vm_error *err)
{
	if ((strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) ||
	    strpbrk(url, " \t\r\n") || strlen(url) > VM_DEBUGINFOD_URL_MAX)
		return vm_error_set(
			err, EINVAL,
			"--debuginfod-url %.64s is not an http:// or https:// URL (without spaces, at most %d bytes)",
			url, VM_DEBUGINFOD_URL_MAX);
	if (o->n_urls == VM_DEBUGINFOD_MAX_URLS)
		return vm_error_set(err, EINVAL, "at most %d --debuginfod-url",
				    VM_DEBUGINFOD_MAX_URLS);
	o->urls[o->n_urls++] = url;
	return 0;
}

/*
 * Aborts the transfer when the agent stops, or when it has brought more
 * than max_bytes: libdebuginfod itself checks DEBUGINFOD_MAXSIZE only
 * against a Content-Length, which a server may leave out (libdebuginfod
 * calls this often, with the bytes received so far).
 */
static int progress(debuginfod_client *c, long got, long total)
{
	struct vm_debuginfod *d = sym_get_user_data(c);

	(void)total;
	if (d->max_bytes > 0 && got > d->max_bytes)
		d->too_big = true;
	return atomic_load(&d->stopping) || d->too_big ? 1 : 0;
}

struct cached {
	char name[256];
	time_t mtime;
	uint64_t bytes;
};

static int cmp_cached(const void *a, const void *b)
{
	const struct cached *x = a, *y = b;

	return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* The bytes of the regular files in the directory at dfd/name. */
static uint64_t dir_bytes(int dfd, const char *name, bool remove)
{
	int fd = openat(dfd, name,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_closedir_ DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	uint64_t sum = 0;
	struct dirent *e;
	struct stat st;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((e = readdir(d)))
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
			    0 &&
		    !S_ISDIR(st.st_mode)) {
			sum += (uint64_t)st.st_size;
			/* A symlink is removed itself, never followed. */
			if (remove)
				unlinkat(dirfd(d), e->d_name, 0);
		}
	return sum;
}

/* Keep the cache under VM_DEBUGINFOD_CACHE_MAX: the oldest go first. */
static void prune_cache(const char *cache_dir)
{
	int fd = open(cache_dir,
		      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_closedir_ DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	_cleanup_free_ struct cached *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *e;
	struct stat st;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= 256 ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISDIR(st.st_mode))
			continue;
		if (vm_grow(v, &cap, n + 1) < 0)
			return;
		snprintf(v[n].name, sizeof(v[n].name), "%s", e->d_name);
		v[n].mtime = st.st_mtime;
		v[n].bytes = dir_bytes(dirfd(d), e->d_name, false);
		total += v[n++].bytes;
	}
	qsort(v, n, sizeof(*v), cmp_cached);
	for (size_t i = 0; i < n && total > VM_DEBUGINFOD_CACHE_MAX; i++) {
		dir_bytes(dirfd(d), v[i].name, true);
		unlinkat(dirfd(d), v[i].name, AT_REMOVEDIR);
		total -= v[i].bytes;
	}
}

/* Whether the ELF file open on fd has the GNU build id id. */
static bool has_build_id(int fd, const uint8_t *id, size_t len)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	bool found = false;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF)
		goto out;
	while (!found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		GElf_Nhdr nh;
		Elf_Data *d;
		size_t off = 0, name_off, desc_off, next;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		while ((next = gelf_getnote(d, off, &nh, &name_off,
					    &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + name_off, "GNU", 4) &&
			    nh.n_descsz == len &&
			    !memcmp((char *)d->d_buf + desc_off, id, len)) {
				found = true;
				break;
			}
			off = next;
		}
	}
out:
	elf_end(e);
	return found;
}

/* One lookup, the lock not held; its outcome. */
static enum vm_debuginfod_outcome look_up(struct vm_debuginfod *d,
					  const struct id_entry *x)
{
	const char *cache_dir = d->cache_dir;
	debuginfod_client *c = sym_begin();
	char *path = NULL;
	int fd;

	if (!c)
		return VM_DEBUGINFOD_FAILED;
	sym_set_user_data(c, d);
	sym_set_progressfn(c, progress);
	d->too_big = false;
	fd = sym_find_debuginfo(c, x->id, x->len, &path);
	sym_end(c);
	if (d->too_big) {
		if (fd >= 0)
			close(fd);
		free(path);
		return VM_DEBUGINFOD_FAILED;
	}
	if (fd < 0)
		return fd == -ENOENT ? VM_DEBUGINFOD_NOT_FOUND :
				       VM_DEBUGINFOD_FAILED;
	/* A server may answer anything: only the file asked for counts. */
	if (!has_build_id(fd, x->id, x->len)) {
		close(fd);
		/* From our cache, so that it is not served again. */
		if (path && !strncmp(path, cache_dir, strlen(cache_dir)) &&
		    path[strlen(cache_dir)] == '/')
			unlink(path);
		free(path);
		return VM_DEBUGINFOD_FAILED;
	}
	close(fd);
	x->found(x->found_arg, x->id, x->len, path);
	free(path);
	prune_cache(cache_dir);
	return VM_DEBUGINFOD_FOUND;
}

static void *worker(void *arg)
{
	struct vm_debuginfod *d = arg;
	struct id_entry *ids = d->ids;

	pthread_mutex_lock(&d->lock);
	for (;;) {
		struct id_entry *x = NULL, copy;
		enum vm_debuginfod_outcome o;

		while (!atomic_load(&d->stopping)) {
			for (size_t i = 0; i < d->n_ids && !x; i++)
				if (ids[i].state == QUEUED)
					x = &ids[i];
			if (x)
				break;
			pthread_cond_wait(&d->wake, &d->lock);
		}
		if (!x)
			break;
		x->state = RUNNING;
		copy = *x;
		pthread_mutex_unlock(&d->lock);
		o = look_up(d, &copy);
		pthread_mutex_lock(&d->lock);
		d->lookups[o]++;
		d->pending--;
		for (size_t i = 0; i < d->n_ids; i++)
			if (ids[i].state == RUNNING) {
				/* Failed: forgotten, so a later profile asks again. */
				if (o == VM_DEBUGINFOD_FAILED)
					ids[i] = ids[--d->n_ids];
				else
					ids[i].state = DONE;
				break;
			}
		pthread_cond_broadcast(&d->done);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* mkdir -p, 0755 for parents and 0700 for the cache itself. */
static int make_cache_dir(const char *dir, struct vm_error *err)
{
	char p[sizeof(((struct vm_debuginfod *)0)->cache_dir)];
	struct stat st;

	if (dir[0] != '/' || strlen(dir) >= sizeof(p))
		return vm_error_set(
			err, EINVAL,
			"--debuginfod-cache %s is not an absolute path", dir);
	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return vm_error_errno(err, errno, "cannot create %s",
					      p);
		*s = '/';
	}
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return vm_error_errno(err, errno, "cannot create %s", p);
	/* Never a symlink someone else put there: the agent writes into it. */
	if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode))
		return vm_error_set(
			err, ENOTDIR,
			"the debuginfod cache %s is not a directory (a symlink is refused); remove it or choose another with --debuginfod-cache",
			p);
	return 0;
}

static int join_urls(const char *const *urls, size_t n, char **out,
		     struct vm_error *err)
{
	size_t len = 1;
	char *s;

	for (size_t i = 0; i < n; i++)
		len += strlen(urls[i]) + 1;
	s = calloc(1, len);
	if (!s)
		return vm_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, urls[i]);
	}
	*out = s;
	return 0;
}

static int disable(struct vm_debuginfod *d, int r, const struct vm_error *err)
{
	snprintf(d->disabled_why, sizeof(d->disabled_why), "%s",
		 vm_error_str(err));
	return r;
}

int vm_debuginfod_new(const struct vm_debuginfod_options *o,
		      struct vm_debuginfod **out, struct vm_error *err)
{
	_cleanup_free_ char *joined = NULL;
	const char *env = getenv("DEBUGINFOD_URLS");
	const char *cache = o && o->cache ? o->cache :
					    VM_DEBUGINFOD_DEFAULT_CACHE;
	struct vm_debuginfod *d = calloc(1, sizeof(*d));
	int r;

	*out = d;
	if (!d)
		return vm_error_set(err, ENOMEM, "out of memory");
	pthread_mutex_init(&d->lock, NULL);
	vm_cond_init_monotonic(&d->done);
	pthread_cond_init(&d->wake, NULL);
	if ((!o || o->n_urls == 0) && (!env || !env[0]))
		return 0; /* nothing configured: lookups stay off */
	if (o && o->n_urls && join_urls(o->urls, o->n_urls, &joined, err) < 0)
		return disable(d, -ENOMEM, err);
	r = make_cache_dir(cache, err);
	if (r < 0)
		return disable(d, r, err);
	snprintf(d->cache_dir, sizeof(d->cache_dir), "%s", cache);
	r = vm_dl_load(&lib, err);
	if (r < 0)
		return disable(d, r, err);
	if ((joined && setenv("DEBUGINFOD_URLS", joined, 1)) ||
	    setenv("DEBUGINFOD_CACHE_PATH", d->cache_dir, 1) ||
	    setenv("DEBUGINFOD_TIMEOUT", DEFAULT_TIMEOUT_S, 0) ||
	    setenv("DEBUGINFOD_MAXSIZE", DEFAULT_MAXSIZE, 0))
		return disable(d, vm_error_set(err, ENOMEM, "out of memory"),
			       err);
	d->max_bytes = strtol(getenv("DEBUGINFOD_MAXSIZE"), NULL, 10);
	r = pthread_create(&d->thread, NULL, worker, d);
	if (r)
		return disable(
			d,
			vm_error_errno(err, r,
				       "cannot start the debuginfod thread"),
			err);
	d->started = d->enabled = true;
	return 0;
}

void vm_debuginfod_free(struct vm_debuginfod *d)
{
	if (!d)
		return;
	if (d->started) {
		pthread_mutex_lock(&d->lock);
		atomic_store(&d->stopping, true);
		pthread_cond_broadcast(&d->wake);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->thread, NULL);
	}
	pthread_cond_destroy(&d->wake);
	pthread_cond_destroy(&d->done);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

void vm_debuginfod_request(struct vm_debuginfod *d, const uint8_t *id,
			   size_t len, vm_debuginfod_found_fn found, void *arg)
{
	struct id_entry *ids;

	if (!d || !d->enabled || !found || len == 0 || len > VM_BUILD_ID_MAX)
		return;
	ids = d->ids;
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->n_ids; i++)
		if (ids[i].len == len && !memcmp(ids[i].id, id, len))
			goto out;
	if (d->n_ids < MAX_IDS && !atomic_load(&d->stopping)) {
		struct id_entry *x = &ids[d->n_ids++];

		memcpy(x->id, id, len);
		x->len = len;
		x->found = found;
		x->found_arg = arg;
		x->state = QUEUED;
		d->pending++;
		pthread_cond_signal(&d->wake);
	}
out:
	pthread_mutex_unlock(&d->lock);
}

void vm_debuginfod_wait(struct vm_debuginfod *d, unsigned max_ms)
{
	uint64_t until;

	if (!d || !d->enabled)
		return;
	until = vm_clock_ns(CLOCK_MONOTONIC) + (uint64_t)max_ms * 1000000;
	pthread_mutex_lock(&d->lock);
	while (d->pending && !atomic_load(&d->stopping))
		if (vm_cond_wait_until(&d->done, &d->lock, until) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&d->lock);
}

void vm_debuginfod_stats(struct vm_debuginfod *d,
			 struct vm_debuginfod_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	out->enabled = d->enabled;
	memcpy(out->lookups, d->lookups, sizeof(d->lookups));
	out->pending = d->pending;
	snprintf(out->error, sizeof(out->error), "%s", d->disabled_why);
	pthread_mutex_unlock(&d->lock);
}
