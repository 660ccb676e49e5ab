// SPDX-License-Identifier: Apache-2.0
/*
 * history_dir.c - --history-dir (see history_dir.h).
 *
 * Names sort as times (cpu-YYYYMMDDTHHMMSSZ-...), so "oldest" is "first
 * by name".  A write goes to .tmp-NAME (O_CREAT | O_EXCL | O_NOFOLLOW: a
 * file or link someone else put there is removed, never written through),
 * is synced, then renamed over NAME: a reader sees a whole file or none.
 * When the disk is full the oldest window goes and the write is tried
 * again; the temporary files a crash left are removed at open.
 *
 * The window files are known from an index kept in memory (`files`),
 * read from the directory at open and every RELIST_EVERY writes, and
 * after any failure; in between a write adds its file and pruning removes
 * the oldest, so a window costs a few system calls however many the
 * directory holds (listing an hour's 360 files, each with fstatat, cost
 * every window more than writing it).  A file someone else adds or
 * removes is seen at the next listing.
 */
#include "agent/history/history_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/history/history_time.h"
#include "common/array.h"
#include "common/clock.h"
#include "common/fdio.h"

#define SPOOL "push"
#define TMP_PREFIX ".tmp-"
/* Files removed to make room for one window, at most. */
#define MAX_MAKE_ROOM 64
/* Writes between two listings of the directory. */
#define RELIST_EVERY 64

struct entry {
	char name[VM_HISTORY_FILE_NAME_MAX];
	uint64_t start_ns, end_ns;
	uint64_t size;
};

struct vm_history_dir {
	int fd, spool_fd;
	uint32_t max_seconds;
	uint64_t max_bytes;
	pthread_mutex_t lock;
	struct vm_history_dir_status st;
	/* The window files, oldest first; `listed` false: read it again. */
	struct entry *files;
	size_t n_files, cap_files;
	bool listed;
	unsigned writes_since_list;
};

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name,
		      ((const struct entry *)b)->name);
}

/* The window files of dir_fd, oldest first; temporary files removed. */
static int list(int dir_fd, bool remove_tmp, struct entry **out, size_t *n)
{
	struct entry *v = NULL;
	size_t cap = 0;
	struct dirent *de;
	int fd = dup(dir_fd);
	DIR *dir;

	*out = NULL;
	*n = 0;
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -errno;
	}
	rewinddir(dir);
	while ((de = readdir(dir))) {
		struct entry e = { 0 };
		struct stat sb;

		if (remove_tmp &&
		    !strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) {
			unlinkat(dir_fd, de->d_name, 0);
			continue;
		}
		if (strlen(de->d_name) >= sizeof(e.name) ||
		    vm_history_parse_file_name(de->d_name, &e.start_ns,
					       &e.end_ns) < 0)
			continue;
		if (fstatat(dir_fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(sb.st_mode))
			continue;
		memcpy(e.name, de->d_name, strlen(de->d_name) + 1);
		e.size = (uint64_t)sb.st_blocks * 512;
		if (vm_grow(v, &cap, *n + 1)) {
			closedir(dir);
			free(v);
			return -ENOMEM;
		}
		v[(*n)++] = e;
	}
	closedir(dir);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_entry);
	*out = v;
	return 0;
}

/* The index read from the directory again, when it may be stale. */
static void relist(struct vm_history_dir *d)
{
	struct entry *v;
	size_t n;

	if (d->listed && d->writes_since_list < RELIST_EVERY)
		return;
	if (list(d->fd, false, &v, &n) < 0)
		return; /* tried again at the next write */
	free(d->files);
	d->files = v;
	d->n_files = n;
	d->cap_files = n;
	d->listed = true;
	d->writes_since_list = 0;
}

/* e into the index at its place by name (replacing one of that name). */
static void index_add(struct vm_history_dir *d, const struct entry *e)
{
	size_t at = d->n_files;

	while (at > 0 && strcmp(d->files[at - 1].name, e->name) > 0)
		at--;
	if (at > 0 && !strcmp(d->files[at - 1].name, e->name)) {
		d->files[at - 1] = *e;
		return;
	}
	if (vm_grow(d->files, &d->cap_files, d->n_files + 1)) {
		d->listed = false;
		return;
	}
	memmove(&d->files[at + 1], &d->files[at],
		(d->n_files - at) * sizeof(*e));
	d->files[at] = *e;
	d->n_files++;
}

/* The first k files of the index removed from it (not from the disk). */
static void index_drop(struct vm_history_dir *d, size_t k)
{
	if (!k)
		return; /* files may be NULL: none was ever listed */
	memmove(d->files, d->files + k, (d->n_files - k) * sizeof(*d->files));
	d->n_files -= k;
}

int vm_history_dir_open(const char *path, uint32_t max_seconds,
			uint64_t max_bytes, struct vm_history_dir **out,
			struct vm_error *err)
{
	struct vm_history_dir *d;
	struct entry *v;
	size_t n;

	*out = NULL;
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return vm_error_errno(err, errno,
				      "cannot create the history directory %s",
				      path);
	d = calloc(1, sizeof(*d));
	if (!d)
		return vm_error_set(err, ENOMEM, "out of memory");
	d->spool_fd = -1;
	d->max_seconds = max_seconds;
	d->max_bytes = max_bytes;
	pthread_mutex_init(&d->lock, NULL);
	d->fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->fd < 0) {
		int e = errno;

		vm_history_dir_close(d);
		return vm_error_errno(
			err, e,
			"cannot open the history directory %s (it must be a directory, not a symbolic link)",
			path);
	}
	if (mkdirat(d->fd, SPOOL, 0700) < 0 && errno != EEXIST)
		d->spool_fd = -1;
	d->spool_fd = openat(d->fd, SPOOL,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* What a crash left half-written. */
	if (list(d->fd, true, &v, &n) == 0) {
		d->files = v;
		d->n_files = d->cap_files = n;
		d->listed = true;
	}
	*out = d;
	return 0;
}

void vm_history_dir_close(struct vm_history_dir *d)
{
	if (!d)
		return;
	if (d->fd >= 0)
		close(d->fd);
	if (d->spool_fd >= 0)
		close(d->spool_fd);
	pthread_mutex_destroy(&d->lock);
	free(d->files);
	free(d);
}

/* A whole regular file of at most VM_HISTORY_MAX_FILE bytes. */
static int read_file(int dir_fd, const char *name, void **data, size_t *len)
{
	return vm_read_file_at(dir_fd, name, VM_HISTORY_MAX_FILE, data, len);
}

size_t vm_history_dir_load(struct vm_history_dir *d, struct vm_history *h,
			   const atomic_bool *stop, vm_history_log_fn *log)
{
	struct entry *v;
	size_t n, loaded = 0;
	uint64_t now = vm_clock_ns(CLOCK_REALTIME);

	if (list(d->fd, false, &v, &n) < 0)
		return 0;
	for (size_t i = 0; i < n && !(stop && atomic_load(stop)); i++) {
		struct vm_history_window w = { .start_ns = v[i].start_ns,
					       .end_ns = v[i].end_ns };
		struct vm_error err = { 0 };
		void *data;
		size_t len;
		int r = read_file(d->fd, v[i].name, &data, &len);

		if (r < 0) {
			log("history: skipping %s: %s", v[i].name,
			    r == -EFBIG ? "larger than a window can be" :
					  strerror(-r));
			continue;
		}
		if (vm_history_add_pprof(h, &w, data, len, &err) < 0) {
			log("history: skipping %s: %s", v[i].name,
			    vm_error_str(&err));
		} else {
			loaded++;
			if (v[i].start_ns > now)
				log("history: %s is dated after now (written with the clock ahead?): kept, but the age of the others is counted from now",
				    v[i].name);
		}
		free(data);
	}
	free(v);
	return loaded;
}

static void remove_window(struct vm_history_dir *d, const char *name)
{
	unlinkat(d->fd, name, 0);
	if (d->spool_fd >= 0)
		unlinkat(d->spool_fd, name, 0);
	d->st.dropped++;
}

/*
 * Drop what is older than max_seconds before the newest or now, whichever
 * is earlier (a file dated after now never makes the rest look old), or
 * too much.
 */
static void prune(struct vm_history_dir *d)
{
	const struct entry *v;
	size_t n, first = 0;
	uint64_t bytes = 0, horizon = (uint64_t)d->max_seconds * 1000000000ULL;
	uint64_t now = vm_clock_ns(CLOCK_REALTIME);

	relist(d);
	v = d->files;
	n = d->n_files;
	while (n && first < n - 1 &&
	       vm_history_too_old(v[first].end_ns, v[n - 1].end_ns, now,
				  horizon))
		remove_window(d, v[first++].name);
	for (size_t i = first; i < n; i++)
		bytes += v[i].size;
	while (n && first < n - 1 && bytes > d->max_bytes) {
		bytes -= v[first].size;
		remove_window(d, v[first++].name);
	}
	index_drop(d, first);
	d->st.files = d->n_files;
	d->st.bytes = bytes;
}

/* Remove the oldest window file to make room; false when none is left. */
static bool make_room(struct vm_history_dir *d, const char *keep)
{
	d->listed = false; /* the disk is failing: trust only a listing */
	relist(d);
	if (!d->n_files || !strcmp(d->files[0].name, keep))
		return false;
	remove_window(d, d->files[0].name);
	index_drop(d, 1);
	return true;
}

/*
 * One attempt: the temporary file written whole, then renamed; e gets
 * the size it takes on the disk.
 */
static int write_once(struct vm_history_dir *d, const char *name,
		      const char *tmp, const void *data, size_t len,
		      struct entry *e)
{
	return vm_write_file_at(d->fd, name, tmp, data, len, &e->size);
}

int vm_history_dir_write(struct vm_history_dir *d, uint64_t start_ns,
			 uint64_t end_ns, const void *data, size_t len,
			 struct vm_error *err)
{
	char name[VM_HISTORY_FILE_NAME_MAX];
	char tmp[VM_HISTORY_FILE_NAME_MAX + sizeof(TMP_PREFIX)];
	struct entry e = { .start_ns = start_ns, .end_ns = end_ns };
	int r;

	vm_history_file_name(start_ns, end_ns, name);
	snprintf(e.name, sizeof(e.name), "%s", name);
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%s", name);
	pthread_mutex_lock(&d->lock);
	d->writes_since_list++;
	for (int tries = 0;; tries++) {
		r = write_once(d, name, tmp, data, len, &e);
		if (r == 0 || tries == MAX_MAKE_ROOM ||
		    (r != -ENOSPC && r != -EDQUOT && r != -EIO &&
		     r != -EFBIG) ||
		    !make_room(d, name))
			break;
	}
	if (r < 0) {
		d->listed = false;
		d->st.write_errors++;
		d->st.dropped++;
		snprintf(d->st.last_error, sizeof(d->st.last_error),
			 "cannot write %s: %s", name, strerror(-r));
	} else {
		d->st.last_error[0] = '\0';
		index_add(d, &e);
	}
	prune(d);
	pthread_mutex_unlock(&d->lock);
	if (r < 0)
		return vm_error_errno(
			err, -r, "cannot write the history window %s", name);
	return 0;
}

void vm_history_dir_status(struct vm_history_dir *d,
			   struct vm_history_dir_status *st)
{
	pthread_mutex_lock(&d->lock);
	*st = d->st;
	pthread_mutex_unlock(&d->lock);
}

int vm_history_dir_spool_add(struct vm_history_dir *d, uint64_t start_ns,
			     uint64_t end_ns)
{
	char name[VM_HISTORY_FILE_NAME_MAX];

	if (d->spool_fd < 0)
		return -ENOENT;
	vm_history_file_name(start_ns, end_ns, name);
	pthread_mutex_lock(&d->lock);
	unlinkat(d->spool_fd, name, 0);
	if (linkat(d->fd, name, d->spool_fd, name, 0) < 0) {
		pthread_mutex_unlock(&d->lock);
		return -errno;
	}
	pthread_mutex_unlock(&d->lock);
	return 0;
}

void vm_history_dir_spool_remove(struct vm_history_dir *d, uint64_t start_ns,
				 uint64_t end_ns)
{
	char name[VM_HISTORY_FILE_NAME_MAX];

	if (d->spool_fd < 0)
		return;
	vm_history_file_name(start_ns, end_ns, name);
	pthread_mutex_lock(&d->lock);
	unlinkat(d->spool_fd, name, 0);
	pthread_mutex_unlock(&d->lock);
}

int vm_history_dir_spool_read(struct vm_history_dir *d, const char *name,
			      void **data, size_t *len)
{
	if (d->spool_fd < 0)
		return -ENOENT;
	return read_file(d->spool_fd, name, data, len);
}

int vm_history_dir_spool_list(struct vm_history_dir *d, char ***names,
			      size_t *n)
{
	struct entry *v;
	size_t k;
	int r;

	*names = NULL;
	*n = 0;
	if (d->spool_fd < 0)
		return 0;
	r = list(d->spool_fd, true, &v, &k);
	if (r < 0)
		return r;
	*names = calloc(k ? k : 1, sizeof(char *));
	if (!*names) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < k; i++) {
		(*names)[i] = strdup(v[i].name);
		if (!(*names)[i]) {
			vm_history_dir_names_free(*names, i);
			free(v);
			return -ENOMEM;
		}
	}
	*n = k;
	free(v);
	return 0;
}

void vm_history_dir_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}
