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
#include <fcntl.h>
#include <json-c/linkhash.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/setup/safe_path.h"
#include "common/array.h"
#include "common/cleanup.h"

int vm_link_plan_add(struct vm_link_plan *p, const char *path,
		     const char *target, bool optional)
{
	struct vm_link l = { .optional = optional };

	if (!p->index && !(p->index = lh_kchar_table_new(64, NULL)))
		return -ENOMEM;
	if (lh_table_lookup_ex(p->index, path, NULL))
		return 0;
	if (vm_grow(p->links, &p->cap, p->n + 1) < 0)
		return -ENOMEM;
	l.path = strdup(path);
	l.target = strdup(target);
	/* The key is the entry's own copy, freed with the plan. */
	if (!l.path || !l.target ||
	    lh_table_insert(p->index, l.path, NULL) < 0) {
		free(l.path);
		free(l.target);
		return -ENOMEM;
	}
	p->links[p->n++] = l;
	return 0;
}

void vm_link_plan_clear(struct vm_link_plan *p)
{
	if (p->index)
		lh_table_free(p->index);
	for (size_t i = 0; i < p->n; i++) {
		free(p->links[i].path);
		free(p->links[i].target);
		free(p->links[i].current);
		free(p->links[i].blocker);
	}
	free(p->links);
	memset(p, 0, sizeof(*p));
}

int vm_link_is_ours(const char *path, const struct vm_guard *g, char **current)
{
	_cleanup_free_ char *cur = NULL;
	int r = vm_safe_readlink(path, g, &cur, NULL);

	if (r <= 0)
		return r;
	if (!vm_path_is_under(cur, g->owner))
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

static int blocked(struct vm_link *l, const char *msg)
{
	l->state = VM_LINK_BLOCKED;
	l->blocker = strdup(msg);
	return l->blocker ? 0 : -ENOMEM;
}

static int check_one(struct vm_link *l, const struct vm_guard *g)
{
	struct vm_error e = { 0 };
	_cleanup_close_ int dfd = -1;
	const char *last;
	struct stat st;
	ssize_t n;
	char buf[PATH_MAX];

	dfd = vm_safe_parent(l->path, g, NULL, &last, &e);
	if (dfd == -ENOENT) { /* a parent is missing: apply makes it */
		l->state = VM_LINK_ABSENT;
		return 0;
	}
	if (dfd == -ENOMEM)
		return -ENOMEM;
	if (dfd < 0)
		return blocked(l, e.msg);
	if (fstatat(dfd, last, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT) {
			l->state = VM_LINK_ABSENT;
			return 0;
		}
		vm_error_errno(&e, errno, "cannot look at %s", l->path);
		return blocked(l, e.msg);
	}
	if (!S_ISLNK(st.st_mode)) {
		vm_error_set(&e, EEXIST, "%s is %s", l->path,
			     kind_of(st.st_mode));
		return blocked(l, e.msg);
	}
	n = readlinkat(dfd, last, buf, sizeof(buf) - 1);
	if (n < 0) {
		vm_error_errno(&e, errno, "cannot read %s", l->path);
		return blocked(l, e.msg);
	}
	buf[n] = '\0';
	if (!strcmp(buf, l->target)) {
		l->state = VM_LINK_PRESENT;
		return 0;
	}
	if (vm_path_is_under(buf, g->owner)) {
		l->state = VM_LINK_STALE;
		l->current = strdup(buf);
		return l->current ? 0 : -ENOMEM;
	}
	vm_error_set(&e, EEXIST,
		     "%s is a symlink to %s, which setup did not make", l->path,
		     buf);
	return blocked(l, e.msg);
}

int vm_links_check(struct vm_link_plan *p, const struct vm_guard *g,
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
		r = check_one(l, g);
		if (r < 0)
			return vm_error_errno(err, -r, "cannot check %s",
					      l->path);
		if (l->state != VM_LINK_BLOCKED || l->optional)
			continue;
		if (++blocked > 20)
			continue; /* counted, not listed */
		if (asprintf(&n, "%s%s%s", msg ? msg : "", msg ? "; " : "",
			     l->blocker) < 0)
			return vm_error_errno(err, ENOMEM,
					      "cannot check links");
		free(msg);
		msg = n;
	}
	if (blocked > 20)
		return vm_error_set(
			err, EEXIST,
			"refusing to link the tools into place: %s; and %zu more. Setup never replaces a file, directory or link it did not make; move them away and run setup again",
			msg, blocked - 20);
	if (blocked)
		return vm_error_set(
			err, EEXIST,
			"refusing to link the tools into place: %s. Setup never replaces a file, directory or link it did not make; move %s away and run setup again",
			msg, blocked > 1 ? "them" : "it");
	return 0;
}

/*
 * mkdir every missing ancestor of path, top-down, journalling each, by
 * j->guard's safe walk.
 */
static int mkdir_parents(const char *path, struct vm_journal *j,
			 struct vm_error *err)
{
	const char *last;
	int dfd = vm_safe_parent(path, &j->guard, j, &last, err);

	if (dfd < 0)
		return dfd;
	close(dfd);
	return 0;
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
			r = mkdir_parents(l->path, j, err);
			if (r == 0)
				r = vm_safe_symlink(l->target, l->path,
						    &j->guard, err);
			if (r < 0)
				return r;
			if (vm_journal_add(j, VM_CHANGE_SYMLINK, l->path,
					   l->target, NULL) < 0) {
				vm_safe_unlink_link(l->path, l->target,
						    &j->guard, NULL);
				return vm_error_errno(
					err, ENOMEM, "cannot link %s", l->path);
			}
			break;
		case VM_LINK_STALE:
			r = vm_safe_symlink_replace(l->target, l->path,
						    &j->guard, err);
			if (r < 0)
				return r;
			if (vm_journal_add(j, VM_CHANGE_RETARGET, l->path,
					   l->target, l->current) < 0) {
				vm_safe_symlink_replace(l->current, l->path,
							&j->guard, NULL);
				return vm_error_errno(
					err, ENOMEM, "cannot link %s", l->path);
			}
			break;
		}
	}
	return 0;
}
