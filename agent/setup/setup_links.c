// SPDX-License-Identifier: Apache-2.0
/*
 * setup_links.c - checking and applying setup's link plan.  The check is
 * read-only and complete (every conflict is collected), so a refusal
 * changes nothing; applying creates missing parent directories top-down
 * and records each change in the journal for rollback and for the state
 * file.
 */
#include "agent/setup/setup_links.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

int vm_link_plan_add(struct vm_link_plan *p, const char *path,
		     const char *target, bool optional)
{
	struct vm_link l = { .optional = optional };
	void *n;

	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->links[i].path, path))
			return 0;
	l.path = strdup(path);
	l.target = strdup(target);
	n = realloc(p->links, (p->n + 1) * sizeof(l));
	if (!l.path || !l.target || !n) {
		free(l.path);
		free(l.target);
		if (n)
			p->links = n;
		return -ENOMEM;
	}
	p->links = n;
	p->links[p->n++] = l;
	return 0;
}

void vm_link_plan_clear(struct vm_link_plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->links[i].path);
		free(p->links[i].target);
		free(p->links[i].current);
		free(p->links[i].blocker);
	}
	free(p->links);
	p->links = NULL;
	p->n = 0;
}

bool vm_path_is_under(const char *target, const char *owner)
{
	size_t n = strlen(owner);

	while (n > 1 && owner[n - 1] == '/')
		n--;
	return !strncmp(target, owner, n) &&
	       (target[n] == '\0' || target[n] == '/');
}

static int read_link(const char *path, char **out)
{
	char buf[PATH_MAX];
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	*out = strdup(buf);
	return *out ? 0 : -ENOMEM;
}

int vm_link_is_ours(const char *path, const char *owner, char **current)
{
	_cleanup_free_ char *cur = NULL;
	struct stat st;
	int r;

	if (lstat(path, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	if (!S_ISLNK(st.st_mode))
		return 0;
	r = read_link(path, &cur);
	if (r < 0)
		return r;
	if (!vm_path_is_under(cur, owner))
		return 0;
	if (current)
		*current = TAKE_PTR(cur);
	return 1;
}

static const char *kind_of(mode_t m)
{
	if (S_ISDIR(m))
		return "a real directory";
	if (S_ISREG(m))
		return "a real file";
	if (S_ISLNK(m))
		return "a symlink";
	return "a special file";
}

/*
 * For an absent path: the nearest existing ancestor must be a directory
 * (following symlinks, e.g. /lib -> usr/lib); NULL when fine, else what is
 * in the way.
 */
static char *check_parents(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	char *slash, *msg = NULL;
	struct stat st;

	if (!dir)
		return NULL;
	while ((slash = strrchr(dir, '/')) && slash != dir) {
		*slash = '\0';
		if (lstat(dir, &st) < 0) {
			if (errno == ENOENT)
				continue;
			if (asprintf(&msg, "cannot look at %s: %s", dir,
				     strerror(errno)) < 0)
				msg = NULL;
			return msg;
		}
		if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
			return NULL;
		if (asprintf(&msg, "%s, a parent of %s, is %s", dir, path,
			     stat(dir, &st) < 0 ? "a dangling symlink" :
						  kind_of(st.st_mode)) < 0)
			msg = NULL;
		return msg;
	}
	return NULL;
}

static int check_one(struct vm_link *l, const char *owner)
{
	_cleanup_free_ char *cur = NULL;
	struct stat st;
	int r;

	if (lstat(l->path, &st) < 0) {
		if (errno != ENOENT && errno != ENOTDIR) {
			if (asprintf(&l->blocker, "cannot look at %s: %s",
				     l->path, strerror(errno)) < 0)
				return -ENOMEM;
			l->state = VM_LINK_BLOCKED;
			return 0;
		}
		l->blocker = check_parents(l->path);
		l->state = l->blocker ? VM_LINK_BLOCKED : VM_LINK_ABSENT;
		return 0;
	}
	if (!S_ISLNK(st.st_mode)) {
		l->state = VM_LINK_BLOCKED;
		return asprintf(&l->blocker, "%s is %s", l->path,
				kind_of(st.st_mode)) < 0 ?
			       -ENOMEM :
			       0;
	}
	r = read_link(l->path, &cur);
	if (r < 0)
		return r;
	if (!strcmp(cur, l->target)) {
		l->state = VM_LINK_PRESENT;
		return 0;
	}
	if (vm_path_is_under(cur, owner)) {
		l->state = VM_LINK_STALE;
		l->current = TAKE_PTR(cur);
		return 0;
	}
	l->state = VM_LINK_BLOCKED;
	return asprintf(&l->blocker,
			"%s is a symlink to %s, which setup did not make",
			l->path, cur) < 0 ?
		       -ENOMEM :
		       0;
}

int vm_links_check(struct vm_link_plan *p, const char *owner,
		   struct vm_error *err)
{
	_cleanup_free_ char *msg = NULL;
	size_t blocked = 0;

	for (size_t i = 0; i < p->n; i++) {
		struct vm_link *l = &p->links[i];
		char *n;
		int r;

		free(l->blocker);
		free(l->current);
		l->blocker = l->current = NULL;
		r = check_one(l, owner);
		if (r < 0)
			return vm_error_errno(err, -r, "cannot check %s",
					      l->path);
		if (l->state != VM_LINK_BLOCKED || l->optional)
			continue;
		if (asprintf(&n, "%s%s%s", msg ? msg : "", msg ? "; " : "",
			     l->blocker) < 0)
			return vm_error_errno(err, ENOMEM,
					      "cannot check links");
		free(msg);
		msg = n;
		blocked++;
	}
	if (blocked)
		return vm_error_set(
			err, EEXIST,
			"refusing to link the tools into place: %s. Setup never replaces a file, directory or link it did not make; move %s away and run setup again",
			msg, blocked > 1 ? "them" : "it");
	return 0;
}

int vm_mkdir_parents(const char *path, struct vm_journal *j,
		     struct vm_error *err)
{
	_cleanup_free_ char *dir = strdup(path);
	char *slash;
	size_t i, n = 0;
	struct stat st;
	char *missing[64];
	int r = 0;

	if (!dir)
		return vm_error_errno(err, ENOMEM, "cannot create %s", path);
	while ((slash = strrchr(dir, '/')) && slash != dir) {
		*slash = '\0';
		if (lstat(dir, &st) == 0)
			break;
		if (n == ARRAY_SIZE(missing)) {
			r = vm_error_set(err, ENAMETOOLONG,
					 "%s is nested too deep", path);
			goto out;
		}
		missing[n] = strdup(dir);
		if (!missing[n]) {
			r = vm_error_errno(err, ENOMEM, "cannot create %s",
					   path);
			goto out;
		}
		n++;
	}
	for (i = n; i-- > 0;) {
		if (mkdir(missing[i], 0755) < 0) {
			if (errno == EEXIST)
				continue;
			r = vm_error_errno(err, errno,
					   "cannot create the directory %s",
					   missing[i]);
			goto out;
		}
		if (vm_journal_add(j, VM_CHANGE_MKDIR, missing[i], NULL, NULL) <
		    0) {
			rmdir(missing[i]);
			r = vm_error_errno(err, ENOMEM, "cannot create %s",
					   path);
			goto out;
		}
	}
out:
	for (i = 0; i < n; i++)
		free(missing[i]);
	return r;
}

int vm_links_apply(struct vm_link_plan *p, struct vm_journal *j,
		   struct vm_error *err)
{
	for (size_t i = 0; i < p->n; i++) {
		struct vm_link *l = &p->links[i];
		int r;

		switch (l->state) {
		case VM_LINK_PRESENT:
		case VM_LINK_BLOCKED: /* only optional ones get here */
			break;
		case VM_LINK_ABSENT:
			r = vm_mkdir_parents(l->path, j, err);
			if (r < 0)
				return r;
			if (symlink(l->target, l->path) < 0)
				return vm_error_errno(
					err, errno,
					"cannot create the link %s -> %s",
					l->path, l->target);
			if (vm_journal_add(j, VM_CHANGE_SYMLINK, l->path,
					   l->target, NULL) < 0) {
				unlink(l->path);
				return vm_error_errno(
					err, ENOMEM, "cannot link %s", l->path);
			}
			break;
		case VM_LINK_STALE:
			r = vm_symlink_replace(l->target, l->path);
			if (r < 0)
				return vm_error_errno(
					err, -r,
					"cannot point the link %s at %s",
					l->path, l->target);
			if (vm_journal_add(j, VM_CHANGE_RETARGET, l->path,
					   l->target, l->current) < 0) {
				vm_symlink_replace(l->current, l->path);
				return vm_error_errno(
					err, ENOMEM, "cannot link %s", l->path);
			}
			break;
		}
	}
	return 0;
}
