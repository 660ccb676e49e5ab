// SPDX-License-Identifier: Apache-2.0
/*
 * setup_undo.c - `setup --undo`: remove the links recorded in the state
 * file (only while they still are the links setup made), the directories
 * setup created (only when empty), unmount, remove the mountpoint if setup
 * created it, and the state file.  Without a state file, remove what the
 * mounted image's manifest would have linked, where it points into the
 * mountpoint, and unmount.
 */
#include "agent/setup/setup_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/setup/setup_state.h"
#include "common/cleanup.h"

static int undo_with_state(struct vm_setup_ctx *c, struct vm_setup_state *s,
			   struct vm_error *err)
{
	int r;

	for (size_t i = s->n_links; i-- > 0;) {
		_cleanup_free_ char *cur = NULL;
		const struct vm_state_link *l = &s->links[i];

		r = vm_link_is_ours(l->path, c->mountpoint, &cur);
		if (r == 1 && !strcmp(cur, l->target)) {
			if (unlink(l->path) < 0)
				return vm_error_errno(err, errno,
						      "cannot remove %s",
						      l->path);
			vm_setup_action(c->res, "removed %s", l->path);
		} else if (r >= 0) {
			vm_setup_action(
				c->res,
				"left %s alone: it is no longer the link setup made",
				l->path);
		}
	}
	/* The links are gone; if the unmount fails, remember the rest. */
	for (size_t i = 0; i < s->n_links; i++) {
		free(s->links[i].path);
		free(s->links[i].target);
	}
	s->n_links = 0;
	if (s->mounted) {
		r = vm_setup_unmount(c, err);
		if (r < 0) {
			vm_setup_state_save(c->state_file, s, NULL);
			return r;
		}
	} else {
		vm_setup_action(c->res,
				"left %s mounted: setup did not mount it",
				c->mountpoint);
	}
	if (s->created_mountpoint && rmdir(c->mountpoint) == 0)
		vm_setup_action(c->res, "removed the mountpoint %s",
				c->mountpoint);
	/* Before the directories: it may live in one setup created. */
	if (unlink(c->state_file) < 0 && errno != ENOENT)
		return vm_error_errno(err, errno, "cannot remove %s",
				      c->state_file);
	for (size_t i = s->n_dirs; i-- > 0;) {
		if (rmdir(s->dirs[i]) == 0)
			vm_setup_action(c->res, "removed the directory %s",
					s->dirs[i]);
		else if (errno != ENOENT)
			vm_setup_action(
				c->res,
				"left the directory %s: %s (setup created it; it holds something else now)",
				s->dirs[i], strerror(errno));
	}
	return 0;
}

/* No state file: remove manifest links that point into the mount. */
static int undo_without_state(struct vm_setup_ctx *c, struct vm_error *err)
{
	struct vm_manifest *m
		__attribute__((cleanup(vm_setup_manifest_freep))) = NULL;
	struct vm_link_plan plan = { 0 };
	char path[PATH_MAX + 64];
	dev_t dev;
	int r;

	r = vm_setup_mounted_at(c->mountpoint, &dev);
	if (r < 0)
		return vm_error_errno(err, -r,
				      "cannot read /proc/self/mountinfo");
	if (r == 0) {
		vm_setup_action(c->res,
				"nothing to undo: nothing is mounted at %s",
				c->mountpoint);
		return 0;
	}
	snprintf(path, sizeof(path), "%s%s", c->mountpoint, VM_MANIFEST_PATH);
	if (vm_manifest_load(path, &m, NULL) == 0 &&
	    vm_setup_plan(c, m, true, &plan, NULL) == 0) {
		for (size_t i = 0; i < plan.n; i++) {
			if (vm_link_is_ours(plan.links[i].path, c->mountpoint,
					    NULL) != 1)
				continue;
			if (unlink(plan.links[i].path) < 0) {
				r = vm_error_errno(err, errno,
						   "cannot remove %s",
						   plan.links[i].path);
				vm_link_plan_clear(&plan);
				return r;
			}
			vm_setup_action(c->res, "removed %s",
					plan.links[i].path);
		}
	}
	vm_link_plan_clear(&plan);
	r = vm_setup_unmount(c, err);
	return r < 0 ? r : 0;
}

int vm_setup_undo(const struct vm_setup_options *o, struct vm_setup_result *res,
		  struct vm_error *err)
{
	struct vm_setup_state s = { 0 };
	struct vm_setup_ctx c;
	int r;

	r = vm_setup_ctx_init(&c, o, res, err);
	if (r < 0)
		return r;
	r = vm_setup_state_load(c.state_file, &s, err);
	if (r == -ENOENT)
		return undo_without_state(&c, err);
	if (r < 0)
		return r;
	if (strcmp(s.mountpoint, c.mountpoint)) {
		r = vm_error_set(
			err, EINVAL,
			"the state file %s belongs to the mountpoint %s, not %s; pass --mountpoint %s",
			c.state_file, s.mountpoint, c.mountpoint, s.mountpoint);
		vm_setup_state_clear(&s);
		return r;
	}
	vm_setup_set_str(&res->device, s.device);
	r = undo_with_state(&c, &s, err);
	vm_setup_state_clear(&s);
	return r;
}
