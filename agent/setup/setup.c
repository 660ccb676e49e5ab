// SPDX-License-Identifier: Apache-2.0
/*
 * setup.c - the steps of `vmtools-agent setup`, in order:
 *
 *   find the disk (blockdev.c) -> mount it ro,nodev,nosuid -> read the
 *   manifest (common/manifest.c) -> compare kernel releases -> --verify
 *   hashes -> plan the links -> refuse if anything is in the way, else
 *   create them (setup_links.c) -> save the state file (setup_state.c)
 *
 * Every change goes through the journal (setup_journal.c); any failure
 * rolls the journal back before returning, so the guest is as it was.
 * Mounting is in setup_mount.c, --verify in setup_verify.c, the links
 * planned from the manifest in setup_plan.c, the run's context and what
 * it prints in setup_ctx.c; --undo (setup_undo.c) is this file's sibling
 * on top of them.  What they share is setup_int.h.
 *
 * Under --allow-kernel-mismatch (image for release A, running kernel B)
 * setup also links /lib/modules/B -> <mnt>/lib/modules/A when nothing is
 * there, because tools look up the running release: modprobe, bcc (which
 * compiles against /lib/modules/$(uname -r)/build) and perf.  That link is
 * optional: a real /lib/modules/B (the running kernel's own modules) is
 * left alone and reported as skipped.
 */
#include "agent/setup/setup_int.h"

#include "agent/setup/disk_open.h"

#include <errno.h>
#include <json-c/linkhash.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/setup/blockdev.h"
#include "agent/setup/safe_path.h"
#include "agent/setup/setup_rollback.h"
#include "agent/setup/setup_state.h"
#include "common/cleanup.h"
#include "common/label.h"

/* The device: --device, else the only one carrying the label. */
static int find_device(struct vm_setup_ctx *c, char **device,
		       struct vm_error *err)
{
	struct vm_blockdev_list l = { 0 };
	_cleanup_free_ char *names = NULL;
	int r;

	if (c->o->device) {
		_cleanup_free_ char *label = NULL, *type = NULL;
		struct stat st;

		if (stat(c->o->device, &st) < 0)
			return vm_error_errno(err, errno,
					      "cannot use --device %s",
					      c->o->device);
		if (!S_ISBLK(st.st_mode))
			return vm_error_set(
				err, ENOTBLK,
				"--device %s is not a block device; attach an image file with losetup first",
				c->o->device);
		r = vm_blockdev_probe(c->o->device, &label, &type, err);
		if (r < 0)
			return r;
		if (strncmp(type, "ext", 3))
			return vm_error_set(
				err, EMEDIUMTYPE,
				"--device %s holds %s, not the ext4 tools disk",
				c->o->device, type);
		*device = strdup(c->o->device);
		return *device ? 0 : -ENOMEM;
	}
	r = vm_blockdev_find_label(NULL, NULL, c->label, &l, err);
	if (r < 0)
		return r;
	if (l.n == 0) {
		vm_blockdev_list_clear(&l);
		return vm_error_set(
			err, ENODEV,
			"no disk with the ext4 label '%s' (looked at every device in /sys/class/block); attach the vmtools image to the VM as a disk, or pass --label",
			c->label);
	}
	if (l.n > 1) {
		size_t n = l.n;

		for (size_t i = 0; i < n; i++) {
			char *joined;

			if (asprintf(&joined, "%s%s%s", names ? names : "",
				     !names	? "" :
				     i + 1 == n ? " and " :
						  ", ",
				     l.paths[i]) < 0) {
				vm_blockdev_list_clear(&l);
				return -ENOMEM;
			}
			free(names);
			names = joined;
		}
		vm_blockdev_list_clear(&l);
		return vm_error_set(
			err, ENOTUNIQ,
			"%zu disks carry the label '%s': %s; refusing to guess which is the tools disk: detach the others, or pass --device",
			n, c->label, names);
	}
	*device = TAKE_PTR(l.paths[0]);
	vm_blockdev_list_clear(&l);
	return 0;
}

static void report_plan(struct vm_setup_ctx *c, const struct vm_link_plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct vm_link *l = &p->links[i];

		switch (l->state) {
		case VM_LINK_ABSENT:
			vm_setup_action(c->res, "linked %s -> %s", l->path,
					l->target);
			break;
		case VM_LINK_PRESENT:
			vm_setup_action(c->res, "already linked %s -> %s",
					l->path, l->target);
			break;
		case VM_LINK_STALE:
			vm_setup_action(c->res, "relinked %s -> %s (was -> %s)",
					l->path, l->target, l->current);
			break;
		case VM_LINK_BLOCKED:
			vm_setup_action(c->res, "skipped %s: %s", l->path,
					l->blocker);
			break;
		}
	}
}

/*
 * Links recorded by an earlier run that this run's plan no longer has
 * (e.g. the previous image's release): remove them if still ours.
 */
static int drop_stale(struct vm_setup_ctx *c, const struct vm_setup_state *prev,
		      const struct vm_link_plan *p, struct vm_journal *j,
		      struct vm_error *err)
{
	for (size_t i = 0; i < prev->n_links; i++) {
		const struct vm_state_link *sl = &prev->links[i];
		_cleanup_free_ char *cur = NULL;
		int r;

		if ((p->index &&
		     lh_table_lookup_ex(p->index, sl->path, NULL)) ||
		    vm_link_is_ours(sl->path, &j->guard, &cur) != 1)
			continue;
		r = vm_safe_unlink_link(sl->path, cur, &j->guard, err);
		if (r < 0)
			return vm_error_errno(err, -r,
					      "cannot remove the stale link %s",
					      sl->path);
		if (vm_journal_add(j, VM_CHANGE_UNLINK, sl->path, NULL, cur) <
		    0)
			return -ENOMEM;
		vm_setup_action(c->res, "removed the stale link %s (-> %s)",
				sl->path, cur);
	}
	return 0;
}

/* Everything after the mount; the caller rolls back on failure. */
static int setup_mounted(struct vm_setup_ctx *c, struct vm_setup_state *state,
			 struct vm_journal *j, struct vm_error *err)
{
	struct vm_manifest *m
		__attribute__((cleanup(vm_setup_manifest_freep))) = NULL;
	struct vm_link_plan plan = { 0 };
	int r;

	/* Read from the disk only, as --verify reads (disk_open.h). */
	r = vm_disk_load_manifest(c->mountpoint, j->guard.dev, &m, err);
	if (r < 0)
		return r;
	/* Binaries and modules of another architecture are of no use. */
	if (strcmp(m->arch, c->machine))
		return vm_error_set(
			err, EXDEV,
			"the tools disk %s was built for %s, but this machine is %s; attach the image built for %s",
			c->res->device, m->arch, c->machine, c->machine);
	vm_setup_set_str(&c->res->image_release, m->kernel_release);
	c->res->release_match = !strcmp(m->kernel_release, c->release);
	if (!c->res->release_match) {
		if (!c->o->allow_kernel_mismatch)
			return vm_error_set(
				err, EXDEV,
				"the tools disk %s was built for kernel %s, but this kernel is %s; attach the image built for %s, or pass --allow-kernel-mismatch",
				c->res->device, m->kernel_release, c->release,
				c->release);
		vm_setup_action(
			c->res,
			"the image is for kernel %s, this kernel is %s: going on (--allow-kernel-mismatch)",
			m->kernel_release, c->release);
	}
	if (c->o->verify) {
		r = vm_setup_verify(c, m, j->guard.dev, err);
		if (r < 0)
			return r;
	}
	r = vm_setup_plan(c, m, true, &plan, err);
	if (r == 0)
		r = vm_links_check(&plan, &j->guard, err);
	if (r == 0)
		r = drop_stale(c, state, &plan, j, err);
	if (r == 0)
		r = vm_links_apply(&plan, j, err);
	if (r == 0)
		report_plan(c, &plan);
	vm_link_plan_clear(&plan);
	return r;
}

/* Undo this run's changes; say so when that too fails. */
static void roll_back(struct vm_journal *j, struct vm_setup_result *res)
{
	struct vm_error err = { 0 };

	if (vm_journal_rollback(j, &err) < 0) {
		res->dirty = true;
		vm_setup_action(res, "could not undo everything: %s",
				vm_error_str(&err));
	}
	res->mounted = false;
}

int vm_setup(const struct vm_setup_options *o, struct vm_setup_result *res,
	     struct vm_error *err)
{
	struct vm_setup_state state = { 0 };
	struct vm_journal j = { 0 }, lock_dirs = { 0 };
	_cleanup_free_ char *device = NULL;
	struct vm_setup_ctx c;
	int r;

	r = vm_setup_ctx_init(&c, o, res, err);
	if (r < 0) {
		vm_setup_ctx_clear(&c);
		return r;
	}
	j.guard = lock_dirs.guard = c.guard;
	/* One run at a time: the state is read under the lock. */
	r = vm_setup_lock(&c, &lock_dirs, err);
	if (r < 0)
		goto fail;
	r = vm_setup_state_load(c.state_file, &state, err);
	if (r < 0 && r != -ENOENT)
		goto fail;
	if (r == -ENOENT || strcmp(state.mountpoint, c.mountpoint)) {
		vm_setup_state_clear(&state);
		state.mountpoint = strdup(c.mountpoint);
		if (!state.mountpoint) {
			r = -ENOMEM;
			goto fail;
		}
	}
	r = find_device(&c, &device, err);
	if (r < 0)
		goto fail;
	vm_setup_set_str(&res->device, device);
	vm_setup_action(res, "found the tools disk %s (label %s)", device,
			c.label);
	r = vm_setup_mount(&c, device, &j, err);
	if (r < 0)
		goto fail;
	res->mounted = true;
	r = setup_mounted(&c, &state, &j, err);
	if (r < 0)
		goto fail;
	if (j.n > 0 || lock_dirs.n > 0) {
		vm_setup_set_str(&state.device, device);
		r = vm_setup_state_merge(&state, &lock_dirs);
		if (r == 0)
			r = vm_setup_state_merge(&state, &j);
		if (r == 0)
			r = vm_setup_state_save(c.state_file, &state, err);
		if (r < 0)
			goto fail;
	}
	if (j.n == 0)
		vm_setup_action(
			res, "nothing to change: the guest was already set up");
	r = 0;
	goto out;
fail:
	roll_back(&j, res);
	/* The lock file first: it is in the directories made for it. */
	vm_setup_lock_remove(&c);
	roll_back(&lock_dirs, res);
out:
	vm_setup_ctx_clear(&c);
	vm_journal_clear(&j);
	vm_journal_clear(&lock_dirs);
	vm_setup_state_clear(&state);
	return r;
}
