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

#include "agent/setup/disk_open.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/setup/safe_path.h"
#include "agent/setup/setup_state.h"
#include "common/cleanup.h"

static int undo_with_state(struct vm_setup_ctx *c, struct vm_setup_state *s,
			   struct vm_error *err)
{
	int r;

	for (size_t i = s->n_links; i-- > 0;) {
		const struct vm_state_link *l = &s->links[i];

		if (!vm_path_is_under(l->target, c->mountpoint))
			continue; /* not a link setup would make */
		r = vm_safe_unlink_link(l->path, l->target, &c->guard, err);
		if (r < 0)
			return r;
		if (r == 1) {
			vm_setup_action(c->res, "removed %s", l->path);
		} else {
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
	c->guard.has_dev = false; /* unmounted */
	if (s->created_mountpoint &&
	    vm_safe_rmdir(c->mountpoint, &c->guard, NULL) == 0)
		vm_setup_action(c->res, "removed the mountpoint %s",
				c->mountpoint);
	/* Before the directories: they may be in one setup created. */
	if (unlink(c->state_file) < 0 && errno != ENOENT)
		return vm_error_errno(err, errno, "cannot remove %s",
				      c->state_file);
	vm_setup_lock_remove(c);
	for (size_t i = s->n_dirs; i-- > 0;) {
		struct vm_error e = { 0 };

		r = vm_safe_rmdir(s->dirs[i], &c->guard, &e);
		if (r == 0)
			vm_setup_action(c->res, "removed the directory %s",
					s->dirs[i]);
		else if (r != -ENOENT)
			vm_setup_action(
				c->res,
				"left the directory %s: %s (setup created it; it holds something else now)",
				s->dirs[i], e.msg);
	}
	return 0;
}

/* No state file: remove manifest links that point into the mount. */
static int undo_without_state(struct vm_setup_ctx *c, struct vm_error *err)
{
	struct vm_manifest *m
		__attribute__((cleanup(vm_setup_manifest_freep))) = NULL;
	struct vm_link_plan plan = { 0 };
	dev_t dev;
	int r;

	r = vm_setup_mounted_at(c->mountpoint, &dev);
	if (r < 0)
		return vm_error_errno(err, -r,
				      "cannot read /proc/self/mountinfo");
	c->guard.dev = dev;
	c->guard.has_dev = r == 1;
	if (r == 0) {
		vm_setup_action(c->res,
				"nothing to undo: nothing is mounted at %s",
				c->mountpoint);
		return 0;
	}
	if (vm_disk_load_manifest(c->mountpoint, dev, &m, NULL) == 0 &&
	    vm_setup_plan(c, m, true, &plan, NULL) == 0) {
		for (size_t i = 0; i < plan.n; i++) {
			_cleanup_free_ char *cur = NULL;

			if (vm_link_is_ours(plan.links[i].path, &c->guard,
					    &cur) != 1)
				continue;
			r = vm_safe_unlink_link(plan.links[i].path, cur,
						&c->guard, err);
			if (r < 0) {
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

static int undo_locked(struct vm_setup_ctx *c, struct vm_error *err)
{
	struct vm_setup_state s = { 0 };
	dev_t dev;
	int r;

	r = vm_setup_state_load(c->state_file, &s, err);
	if (r == -ENOENT)
		return undo_without_state(c, err);
	if (r < 0)
		return r;
	if (strcmp(s.mountpoint, c->mountpoint)) {
		r = vm_error_set(
			err, EINVAL,
			"the state file %s belongs to the mountpoint %s, not %s; pass --mountpoint %s",
			c->state_file, s.mountpoint, c->mountpoint,
			s.mountpoint);
		vm_setup_state_clear(&s);
		return r;
	}
	vm_setup_set_str(&c->res->device, s.device);
	r = vm_setup_mounted_at(c->mountpoint, &dev);
	if (r < 0) {
		vm_setup_state_clear(&s);
		return vm_error_errno(err, -r,
				      "cannot read /proc/self/mountinfo");
	}
	c->guard.dev = dev;
	c->guard.has_dev = r == 1;
	r = undo_with_state(c, &s, err);
	vm_setup_state_clear(&s);
	return r;
}

int vm_setup_undo(const struct vm_setup_options *o, struct vm_setup_result *res,
		  struct vm_error *err)
{
	struct vm_setup_ctx c;
	int r;

	r = vm_setup_ctx_init(&c, o, res, err);
	if (r == 0)
		r = vm_setup_lock(&c, NULL, err);
	if (r == 0)
		r = undo_locked(&c, err);
	vm_setup_ctx_clear(&c);
	return r;
}
