// SPDX-License-Identifier: Apache-2.0
/*
 * safe_path.c - the component-by-component walk of safe_path.h (each step
 * here, the walk common/beneath.h's), and the link, unlink, rename and
 * rmdir setup does at its end, each relative to the directory the walk
 * opened.
 */
#include "agent/setup/safe_path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/beneath.h"
#include "common/cleanup.h"

static const char *kind(mode_t m)
{
	if (S_ISREG(m))
		return "a real file";
	if (S_ISLNK(m))
		return "a symlink";
	return "a special file";
}

bool vm_path_is_under(const char *target, const char *owner)
{
	size_t n = strlen(owner);

	while (n > 1 && owner[n - 1] == '/')
		n--;
	return !strncmp(target, owner, n) &&
	       (target[n] == '\0' || target[n] == '/');
}

/* The target of the symlink name in dfd, malloc'ed; NULL with errno. */
static char *read_at(int dfd, const char *name)
{
	char buf[PATH_MAX];
	ssize_t n = readlinkat(dfd, name, buf, sizeof(buf) - 1);

	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return strdup(buf);
}

/*
 * One step of the walk: open the directory name in dfd (prefix is the
 * path so far, for messages), creating it with j.  Returns the fd.
 */
static int step(int dfd, const char *name, const char *prefix, const char *path,
		const struct vm_guard *g, struct vm_journal *j,
		struct vm_error *err)
{
	struct stat st;
	int fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return vm_error_errno(err, errno, "cannot look at %s",
					      prefix);
		if (!j)
			return vm_error_set(err, ENOENT, "%s does not exist",
					    prefix);
		if (mkdirat(dfd, name, 0755) < 0) {
			if (errno != EEXIST)
				return vm_error_errno(
					err, errno,
					"cannot create the directory %s",
					prefix);
			/* Made meanwhile: look again, not ours. */
			return step(dfd, name, prefix, path, g, NULL, err);
		}
		if (vm_journal_add(j, VM_CHANGE_MKDIR, prefix, NULL, NULL) <
		    0) {
			unlinkat(dfd, name, AT_REMOVEDIR);
			return vm_error_errno(err, ENOMEM, "cannot create %s",
					      prefix);
		}
		st.st_mode = S_IFDIR;
	}
	if (S_ISLNK(st.st_mode)) {
		_cleanup_free_ char *to = read_at(dfd, name);

		if (!to)
			return vm_error_errno(err, errno, "cannot read %s",
					      prefix);
		if (g->owner && vm_path_is_under(to, g->owner))
			return vm_error_set(
				err, ELOOP,
				"%s is a link into the tools disk (-> %s); setup never creates or removes anything through it, so it cannot make %s",
				prefix, to, path);
		/* The guest's own link (/lib -> usr/lib): followed. */
		fd = openat(dfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
			return vm_error_set(
				err, ENOTDIR,
				"%s, a parent of %s, is a symlink to %s, which is %s",
				prefix, path, to,
				errno == ENOENT ? "dangling" :
						  "not a directory");
	} else if (S_ISDIR(st.st_mode)) {
		fd = openat(dfd, name,
			    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	} else {
		return vm_error_set(err, ENOTDIR, "%s, a parent of %s, is %s",
				    prefix, path, kind(st.st_mode));
	}
	if (fd < 0)
		return vm_error_errno(err, errno,
				      "cannot open the directory %s", prefix);
	if (g->has_dev && fstat(fd, &st) == 0 && st.st_dev == g->dev) {
		close(fd);
		return vm_error_set(
			err, ELOOP,
			"%s is on the tools disk; setup never creates or removes anything there, so it cannot make %s",
			prefix, path);
	}
	return fd;
}

/* Whether path's last component is a name (not "", "." or ".."). */
static bool ends_in_name(const char *path)
{
	size_t e = strlen(path), b;

	while (e > 0 && path[e - 1] == '/')
		e--;
	b = e;
	while (b > 0 && path[b - 1] != '/')
		b--;
	return e > b && !(e - b == 1 && path[b] == '.') &&
	       !(e - b == 2 && path[b] == '.' && path[b + 1] == '.');
}

static int walk(const char *path, const struct vm_guard *g,
		struct vm_journal *j, const char **last, struct vm_error *err);

void vm_walk_cache_clear(struct vm_walk_cache *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->dir);
	c->dir = NULL;
	c->fd = -1;
}

/* The directory of path's last component from the cache, or -1. */
static int cached(const struct vm_guard *g, const char *path, const char **last)
{
	const char *slash = strrchr(path, '/');
	size_t n;

	if (!g->cache || !g->cache->dir || !slash || !slash[1])
		return -1;
	n = (size_t)(slash - path);
	if (strlen(g->cache->dir) != n || memcmp(g->cache->dir, path, n))
		return -1;
	*last = slash + 1;
	return fcntl(g->cache->fd, F_DUPFD_CLOEXEC, 0);
}

static void remember(const struct vm_guard *g, const char *path,
		     const char *last, int dfd)
{
	struct vm_walk_cache *c = g->cache;

	if (!c)
		return;
	vm_walk_cache_clear(c);
	c->dir = strndup(path, (size_t)(last - path - 1));
	c->fd = c->dir ? fcntl(dfd, F_DUPFD_CLOEXEC, 0) : -1;
	if (c->fd < 0)
		vm_walk_cache_clear(c);
}

int vm_safe_parent(const char *path, const struct vm_guard *g,
		   struct vm_journal *j, const char **last,
		   struct vm_error *err)
{
	int hit;

	/* Refused as written, before the cache or a step makes anything. */
	if (!ends_in_name(path))
		return vm_error_set(err, EINVAL, "%s does not end in a name",
				    path);
	hit = cached(g, path, last);
	if (hit >= 0)
		return hit;
	hit = walk(path, g, j, last, err);
	if (hit >= 0)
		remember(g, path, *last, hit);
	return hit;
}

/* What the walk's steps share: step()'s arguments besides dfd and name. */
struct walk_arg {
	const char *path;
	const struct vm_guard *g;
	struct vm_journal *j;
	struct vm_error *err;
	bool said; /* step() refused, err says why */
};

static int walk_step(int dfd, const char *name, const char *prefix, void *arg)
{
	struct walk_arg *a = arg;
	int fd = step(dfd, name, prefix, a->path, a->g, a->j, a->err);

	a->said = fd < 0;
	return fd;
}

/*
 * The walk itself (safe_path.h), on common/beneath.h's walk, which
 * refuses what is refused as written before a step makes any directory.
 */
static int walk(const char *path, const struct vm_guard *g,
		struct vm_journal *j, const char **last, struct vm_error *err)
{
	struct walk_arg a = { .path = path, .g = g, .j = j, .err = err };
	_cleanup_close_ int root = -1;
	int dfd;

	if (path[0] != '/')
		return vm_error_set(err, EINVAL, "%s is not an absolute path",
				    path);
	root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return vm_error_errno(err, errno, "cannot open /");
	dfd = vm_beneath_walk(root, path, walk_step, &a, last);
	if (dfd < 0 && a.said)
		return dfd;
	if (dfd == -EXDEV || dfd == -ENAMETOOLONG) /* "..", or too long */
		return vm_error_set(err, EINVAL, "%s cannot be used as a path",
				    path);
	if (dfd < 0)
		return vm_error_errno(err, -dfd, "cannot reach %s", path);
	return dfd;
}

/* The parent of path, or -ENOENT when it is absent or not a directory. */
static int parent_if_any(const char *path, const struct vm_guard *g,
			 const char **last, struct vm_error *err)
{
	struct vm_error e = { 0 };
	int dfd = vm_safe_parent(path, g, NULL, last, &e);

	if (dfd == -ENOENT || dfd == -ENOTDIR)
		return -ENOENT;
	if (dfd < 0)
		return vm_error_set(err, e.code, "%s", e.msg);
	return dfd;
}

int vm_safe_readlink(const char *path, const struct vm_guard *g, char **current,
		     struct vm_error *err)
{
	const char *last;
	_cleanup_close_ int dfd = parent_if_any(path, g, &last, err);
	struct stat st;
	char *to;

	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0)
		return dfd;
	if (fstatat(dfd, last, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		return vm_error_errno(err, errno, "cannot look at %s", path);
	}
	if (!S_ISLNK(st.st_mode))
		return 0;
	to = read_at(dfd, last);
	if (!to)
		return vm_error_errno(err, errno, "cannot read %s", path);
	if (current)
		*current = to;
	else
		free(to);
	return 1;
}

int vm_safe_symlink(const char *target, const char *path,
		    const struct vm_guard *g, struct vm_error *err)
{
	const char *last;
	_cleanup_close_ int dfd = vm_safe_parent(path, g, NULL, &last, err);

	if (dfd < 0)
		return dfd;
	if (symlinkat(target, dfd, last) < 0)
		return vm_error_errno(err, errno,
				      "cannot create the link %s -> %s", path,
				      target);
	return 0;
}

int vm_safe_unlink_link(const char *path, const char *target,
			const struct vm_guard *g, struct vm_error *err)
{
	const char *last;
	_cleanup_close_ int dfd = parent_if_any(path, g, &last, err);
	_cleanup_free_ char *to = NULL;

	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0)
		return dfd;
	to = read_at(dfd, last);
	if (!to || strcmp(to, target))
		return 0; /* gone, or no longer the link setup made */
	if (unlinkat(dfd, last, 0) < 0)
		return vm_error_errno(err, errno, "cannot remove the link %s",
				      path);
	return 1;
}

int vm_safe_symlink_replace(const char *target, const char *path,
			    const struct vm_guard *g, struct vm_error *err)
{
	const char *last;
	_cleanup_close_ int dfd = vm_safe_parent(path, g, NULL, &last, err);
	_cleanup_free_ char *tmp = NULL;

	if (dfd < 0)
		return dfd;
	if (asprintf(&tmp, "%s.vmtools-new.%d", last, (int)getpid()) < 0)
		return vm_error_errno(err, ENOMEM, "cannot link %s", path);
	unlinkat(dfd, tmp, 0);
	if (symlinkat(target, dfd, tmp) < 0)
		return vm_error_errno(err, errno,
				      "cannot point the link %s at %s", path,
				      target);
	if (renameat(dfd, tmp, dfd, last) < 0) {
		int e = errno;

		unlinkat(dfd, tmp, 0);
		return vm_error_errno(err, e, "cannot point the link %s at %s",
				      path, target);
	}
	return 0;
}

int vm_safe_rmdir(const char *path, const struct vm_guard *g,
		  struct vm_error *err)
{
	const char *last;
	_cleanup_close_ int dfd = vm_safe_parent(path, g, NULL, &last, err);

	if (dfd < 0)
		return dfd;
	if (unlinkat(dfd, last, AT_REMOVEDIR) < 0)
		return vm_error_errno(err, errno, "cannot remove %s", path);
	return 0;
}
