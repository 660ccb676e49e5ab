// SPDX-License-Identifier: Apache-2.0
/*
 * setup.c - the steps of `vmtools-agent setup` and of its undo, in order:
 *
 *   find the disk (blockdev.c) -> mount it ro,nodev,nosuid -> read the
 *   manifest (common/manifest.c) -> compare kernel releases -> --verify
 *   hashes -> plan the links (links.c) -> refuse if anything is in the way
 *   -> create them -> save the state file (setup_state.c)
 *
 * Every change goes through the journal (setup_journal.c); any failure
 * rolls the journal back before returning, so the guest is as it was.
 *
 * Under --allow-kernel-mismatch (image for release A, running kernel B)
 * setup also links /lib/modules/B -> <mnt>/lib/modules/A when nothing is
 * there, because tools look up the running release: modprobe, bcc (which
 * compiles against /lib/modules/$(uname -r)/build) and perf.  That link is
 * optional: a real /lib/modules/B (the running kernel's own modules) is
 * left alone and reported as skipped.
 */
#include "agent/setup.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/blockdev.h"
#include "agent/links.h"
#include "agent/setup_journal.h"
#include "agent/setup_state.h"
#include "common/cleanup.h"
#include "common/manifest.h"
#include "common/sha256.h"

/* Options with defaults filled in and paths made absolute. */
struct ctx {
	const char *label;
	char mountpoint[PATH_MAX];
	const char *bindir;
	const char *root;
	char state_file[PATH_MAX + 16];
	char release[256];
	char machine[65];
	const struct vm_setup_options *o;
	struct vm_setup_result *res;
};

/* Guest paths the manifest may ask for; anything else is refused. */
static const char *const allowed_link_prefixes[] = {
	"/lib/modules/",   "/usr/lib/modules/", "/usr/src/",
	"/usr/lib/linux-", "/lib/vmtools/",	"/usr/lib/vmtools/",
	"/opt/vmtools/",
};

void vm_setup_result_clear(struct vm_setup_result *r)
{
	free(r->device);
	free(r->mountpoint);
	free(r->image_release);
	free(r->running_release);
	for (size_t i = 0; i < r->n_actions; i++)
		free(r->actions[i]);
	free(r->actions);
	memset(r, 0, sizeof(*r));
}

static void __attribute__((format(printf, 2, 3)))
action(struct vm_setup_result *res, const char *fmt, ...)
{
	va_list ap;
	char *s;
	void *n;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return;
	n = realloc(res->actions, (res->n_actions + 1) * sizeof(char *));
	if (!n) {
		free(s);
		return;
	}
	res->actions = n;
	res->actions[res->n_actions++] = s;
}

static void set_str(char **dst, const char *src)
{
	free(*dst);
	*dst = src ? strdup(src) : NULL;
}

static int init_ctx(struct ctx *c, const struct vm_setup_options *o,
		    struct vm_setup_result *res, struct vm_error *err)
{
	const char *mnt = o->mountpoint ? o->mountpoint :
					  VM_SETUP_DEFAULT_MOUNTPOINT;
	size_t n;
	struct utsname u;

	memset(c, 0, sizeof(*c));
	c->o = o;
	c->res = res;
	c->label = o->label ? o->label : VM_SETUP_DEFAULT_LABEL;
	c->bindir = o->bindir ? o->bindir : VM_SETUP_DEFAULT_BINDIR;
	c->root = o->root ? o->root : "";
	if (!c->label[0] || strlen(c->label) > 16)
		return vm_error_set(
			err, EINVAL,
			"label '%s' cannot be an ext4 label: it must be 1 to 16 bytes",
			c->label);
	if (mnt[0] != '/' || c->bindir[0] != '/')
		return vm_error_set(
			err, EINVAL,
			"--mountpoint and --bindir must be absolute paths (got %s and %s)",
			mnt, c->bindir);
	n = strlen(mnt);
	while (n > 1 && mnt[n - 1] == '/')
		n--;
	if (n >= sizeof(c->mountpoint) || n <= 1)
		return vm_error_set(err, EINVAL,
				    "--mountpoint %s cannot be used", mnt);
	memcpy(c->mountpoint, mnt, n);
	c->mountpoint[n] = '\0';
	if (o->state_file)
		snprintf(c->state_file, sizeof(c->state_file), "%s",
			 o->state_file);
	else
		snprintf(c->state_file, sizeof(c->state_file), "%s.setup.json",
			 c->mountpoint);
	if (uname(&u) < 0)
		return vm_error_errno(err, errno, "uname failed");
	snprintf(c->machine, sizeof(c->machine), "%s", u.machine);
	if (o->kernel_release) {
		snprintf(c->release, sizeof(c->release), "%s",
			 o->kernel_release);
	} else {
		snprintf(c->release, sizeof(c->release), "%s", u.release);
	}
	set_str(&res->mountpoint, c->mountpoint);
	set_str(&res->running_release, c->release);
	return 0;
}

static void unescape_mountinfo(char *s)
{
	char *w = s;

	for (char *p = s; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' &&
		    p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
			*w++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 +
				      (p[3] - '0'));
			p += 3;
		} else {
			*w++ = *p;
		}
	}
	*w = '\0';
}

/*
 * What is mounted at mnt (the topmost mount there): 1 with *dev set, or 0.
 */
static int mounted_at(const char *mnt, dev_t *dev)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	int found = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		char point[PATH_MAX];

		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min,
			   point) != 3)
			continue;
		unescape_mountinfo(point);
		if (strcmp(point, mnt))
			continue;
		*dev = makedev(maj, min);
		found = 1;
	}
	return found;
}

/* The device: --device, else the only one carrying the label. */
static int find_device(struct ctx *c, char **device, struct vm_error *err)
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

/* Mount device at the mountpoint unless it already is; journalled. */
static int mount_image(struct ctx *c, const char *device, struct vm_journal *j,
		       struct vm_error *err)
{
	struct stat st, dst;
	dev_t there;
	int r;

	if (stat(device, &dst) < 0)
		return vm_error_errno(err, errno, "cannot use %s", device);
	if (lstat(c->mountpoint, &st) < 0) {
		if (errno != ENOENT)
			return vm_error_errno(err, errno, "cannot use %s",
					      c->mountpoint);
		if (mkdir(c->mountpoint, 0755) < 0)
			return vm_error_errno(err, errno,
					      "cannot create the mountpoint %s",
					      c->mountpoint);
		if (vm_journal_add(j, VM_CHANGE_MKDIR, c->mountpoint, NULL,
				   NULL) < 0) {
			rmdir(c->mountpoint);
			return -ENOMEM;
		}
		action(c->res, "created the mountpoint %s", c->mountpoint);
	} else if (!S_ISDIR(st.st_mode)) {
		return vm_error_set(
			err, ENOTDIR,
			"the mountpoint %s exists and is not a directory; remove it or pass another --mountpoint",
			c->mountpoint);
	}
	r = mounted_at(c->mountpoint, &there);
	if (r < 0)
		return vm_error_errno(err, -r,
				      "cannot read /proc/self/mountinfo");
	if (r == 1 && there == dst.st_rdev) {
		action(c->res, "%s is already mounted at %s", device,
		       c->mountpoint);
		return 0;
	}
	if (r == 1)
		return vm_error_set(
			err, EBUSY,
			"another filesystem (device %u:%u) is mounted at %s; if it is an earlier tools disk run 'vmtools-agent setup --undo' first, else unmount it or pass another --mountpoint",
			major(there), minor(there), c->mountpoint);
	if (mount(device, c->mountpoint, "ext4",
		  MS_RDONLY | MS_NODEV | MS_NOSUID, NULL) < 0)
		return vm_error_errno(
			err, errno,
			"cannot mount %s read-only at %s (is ext4 built into this kernel? see check-kernel)",
			device, c->mountpoint);
	if (vm_journal_add(j, VM_CHANGE_MOUNT, c->mountpoint, device, NULL) <
	    0) {
		umount2(c->mountpoint, 0);
		return -ENOMEM;
	}
	action(c->res, "mounted %s at %s (ro,nodev,nosuid)", device,
	       c->mountpoint);
	return 0;
}

/* Re-hash every file listed in the manifest; name the first that differs. */
static int verify_files(struct ctx *c, const struct vm_manifest *m,
			struct vm_error *err)
{
	_cleanup_free_ char *first = NULL;
	size_t bad = 0;

	for (size_t i = 0; i < m->n_files; i++) {
		const struct vm_manifest_file *f = &m->files[i];
		char hex[VM_SHA256_HEX_LEN], path[PATH_MAX * 2];
		const char *why = NULL;
		struct stat st;

		snprintf(path, sizeof(path), "%s%s", c->mountpoint, f->path);
		if (lstat(path, &st) < 0)
			why = "is missing";
		else if (!S_ISREG(st.st_mode))
			why = "is not a regular file";
		else if (vm_sha256_file(path, hex, NULL) < 0)
			why = "cannot be read";
		else if (strcmp(hex, f->sha256))
			why = "does not match its sha256 in the manifest";
		if (!why)
			continue;
		if (!bad++ && asprintf(&first, "%s %s", f->path, why) < 0)
			first = NULL;
	}
	if (bad == 1)
		return vm_error_set(
			err, EBADMSG,
			"the tools disk is damaged: %s; rebuild the image or attach a good copy",
			first ? first : "a file differs");
	if (bad > 1)
		return vm_error_set(
			err, EBADMSG,
			"the tools disk is damaged: %s, and %zu more files differ; rebuild the image or attach a good copy",
			first ? first : "a file differs", bad - 1);
	c->res->verified = true;
	c->res->n_files_verified = m->n_files;
	action(c->res, "verified %zu files against the manifest", m->n_files);
	return 0;
}

static bool link_path_allowed(const char *path)
{
	for (size_t i = 0; i < ARRAY_SIZE(allowed_link_prefixes); i++)
		if (!strncmp(path, allowed_link_prefixes[i],
			     strlen(allowed_link_prefixes[i])))
			return true;
	return false;
}

/*
 * The links for manifest m: its "links", a bindir entry per tool, and the
 * running release's modules directory when it differs from the image's.
 */
static int build_plan(struct ctx *c, const struct vm_manifest *m, bool alias,
		      struct vm_link_plan *p, struct vm_error *err)
{
	char path[PATH_MAX * 2], target[PATH_MAX * 2];
	int r;

	for (size_t i = 0; i < m->n_links; i++) {
		const struct vm_manifest_link *l = &m->links[i];

		if (!link_path_allowed(l->path))
			return vm_error_set(
				err, EPERM,
				"the manifest asks for a link at %s, outside the places setup links into (/lib/modules, /usr/src, /usr/lib/linux-*, .../vmtools); refusing the image",
				l->path);
		snprintf(path, sizeof(path), "%s%s", c->root, l->path);
		snprintf(target, sizeof(target), "%s%s", c->mountpoint,
			 l->target);
		r = vm_link_plan_add(p, path, target, false);
		if (r < 0)
			return vm_error_errno(err, -r, "cannot plan links");
	}
	for (size_t i = 0; i < m->n_tools; i++) {
		const struct vm_manifest_tool *t = &m->tools[i];

		snprintf(path, sizeof(path), "%s%s/%s", c->root, c->bindir,
			 t->name);
		snprintf(target, sizeof(target), "%s%s", c->mountpoint,
			 t->path);
		r = vm_link_plan_add(p, path, target, false);
		if (r < 0)
			return vm_error_errno(err, -r, "cannot plan links");
	}
	if (alias && strcmp(m->kernel_release, c->release)) {
		snprintf(path, sizeof(path), "%s/lib/modules/%s", c->root,
			 c->release);
		snprintf(target, sizeof(target), "%s/lib/modules/%s",
			 c->mountpoint, m->kernel_release);
		r = vm_link_plan_add(p, path, target, true);
		if (r < 0)
			return vm_error_errno(err, -r, "cannot plan links");
	}
	return 0;
}

static void report_plan(struct ctx *c, const struct vm_link_plan *p)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct vm_link *l = &p->links[i];

		switch (l->state) {
		case VM_LINK_ABSENT:
			action(c->res, "linked %s -> %s", l->path, l->target);
			break;
		case VM_LINK_PRESENT:
			action(c->res, "already linked %s -> %s", l->path,
			       l->target);
			break;
		case VM_LINK_STALE:
			action(c->res, "relinked %s -> %s (was -> %s)", l->path,
			       l->target, l->current);
			break;
		case VM_LINK_BLOCKED:
			action(c->res, "skipped %s: %s", l->path, l->blocker);
			break;
		}
	}
}

static void manifest_freep(struct vm_manifest **m)
{
	vm_manifest_free(*m);
}

/*
 * Links recorded by an earlier run that this run's plan no longer has
 * (e.g. the previous image's release): remove them if still ours.
 */
static int drop_stale(struct ctx *c, const struct vm_setup_state *prev,
		      const struct vm_link_plan *p, struct vm_journal *j,
		      struct vm_error *err)
{
	for (size_t i = 0; i < prev->n_links; i++) {
		const struct vm_state_link *sl = &prev->links[i];
		_cleanup_free_ char *cur = NULL;
		bool planned = false;

		for (size_t k = 0; k < p->n && !planned; k++)
			planned = !strcmp(p->links[k].path, sl->path);
		if (planned ||
		    vm_link_is_ours(sl->path, c->mountpoint, &cur) != 1)
			continue;
		if (unlink(sl->path) < 0)
			return vm_error_errno(err, errno,
					      "cannot remove the stale link %s",
					      sl->path);
		if (vm_journal_add(j, VM_CHANGE_UNLINK, sl->path, NULL, cur) <
		    0)
			return -ENOMEM;
		action(c->res, "removed the stale link %s (-> %s)", sl->path,
		       cur);
	}
	return 0;
}

/* Everything after the mount; the caller rolls back on failure. */
static int setup_mounted(struct ctx *c, struct vm_setup_state *state,
			 struct vm_journal *j, struct vm_error *err)
{
	struct vm_manifest *m __attribute__((cleanup(manifest_freep))) = NULL;
	struct vm_link_plan plan = { 0 };
	char path[PATH_MAX + 64];
	int r;

	snprintf(path, sizeof(path), "%s%s", c->mountpoint, VM_MANIFEST_PATH);
	r = vm_manifest_load(path, &m, err);
	if (r < 0)
		return r;
	/* Binaries and modules of another architecture are of no use. */
	if (strcmp(m->arch, c->machine))
		return vm_error_set(
			err, EXDEV,
			"the tools disk %s was built for %s, but this machine is %s; attach the image built for %s",
			c->res->device, m->arch, c->machine, c->machine);
	set_str(&c->res->image_release, m->kernel_release);
	c->res->release_match = !strcmp(m->kernel_release, c->release);
	if (!c->res->release_match) {
		if (!c->o->allow_kernel_mismatch)
			return vm_error_set(
				err, EXDEV,
				"the tools disk %s was built for kernel %s, but this kernel is %s; attach the image built for %s, or pass --allow-kernel-mismatch",
				c->res->device, m->kernel_release, c->release,
				c->release);
		action(c->res,
		       "the image is for kernel %s, this kernel is %s: going on (--allow-kernel-mismatch)",
		       m->kernel_release, c->release);
	}
	if (c->o->verify) {
		r = verify_files(c, m, err);
		if (r < 0)
			return r;
	}
	r = build_plan(c, m, true, &plan, err);
	if (r == 0)
		r = vm_links_check(&plan, c->mountpoint, err);
	if (r == 0)
		r = drop_stale(c, state, &plan, j, err);
	if (r == 0)
		r = vm_links_apply(&plan, j, err);
	if (r == 0)
		report_plan(c, &plan);
	vm_link_plan_clear(&plan);
	return r;
}

int vm_setup(const struct vm_setup_options *o, struct vm_setup_result *res,
	     struct vm_error *err)
{
	struct vm_setup_state state = { 0 };
	struct vm_journal j = { 0 };
	_cleanup_free_ char *device = NULL;
	struct ctx c;
	int r;

	r = init_ctx(&c, o, res, err);
	if (r < 0)
		return r;
	r = vm_setup_state_load(c.state_file, &state, err);
	if (r < 0 && r != -ENOENT)
		return r;
	if (r == -ENOENT || strcmp(state.mountpoint, c.mountpoint)) {
		vm_setup_state_clear(&state);
		state.mountpoint = strdup(c.mountpoint);
		if (!state.mountpoint)
			return -ENOMEM;
	}
	r = find_device(&c, &device, err);
	if (r < 0)
		goto out;
	set_str(&res->device, device);
	action(res, "found the tools disk %s (label %s)", device, c.label);
	r = mount_image(&c, device, &j, err);
	if (r < 0)
		goto fail;
	res->mounted = true;
	r = setup_mounted(&c, &state, &j, err);
	if (r < 0)
		goto fail;
	if (j.n > 0) {
		set_str(&state.device, device);
		r = vm_setup_state_merge(&state, &j);
		if (r == 0)
			r = vm_setup_state_save(c.state_file, &state, err);
		if (r < 0)
			goto fail;
	} else {
		action(res, "nothing to change: the guest was already set up");
	}
	vm_journal_clear(&j);
	r = 0;
	goto out;
fail : {
	struct vm_error rerr = { 0 };

	if (vm_journal_rollback(&j, &rerr) < 0) {
		res->dirty = true;
		action(res, "could not undo everything: %s",
		       vm_error_str(&rerr));
	}
}
	res->mounted = false;
out:
	vm_journal_clear(&j);
	vm_setup_state_clear(&state);
	return r;
}

/* --- undo ------------------------------------------------------------ */

static int unmount(struct ctx *c, struct vm_error *err)
{
	dev_t dev;
	int r = mounted_at(c->mountpoint, &dev);

	if (r <= 0)
		return r;
	if (umount2(c->mountpoint, 0) < 0) {
		if (errno == EBUSY)
			return vm_error_errno(
				err, errno,
				"cannot unmount %s: a process still uses the tools disk (find it with: fuser -vm %s); stop it and run --undo again",
				c->mountpoint, c->mountpoint);
		return vm_error_errno(err, errno, "cannot unmount %s",
				      c->mountpoint);
	}
	action(c->res, "unmounted %s", c->mountpoint);
	return 1;
}

static int undo_with_state(struct ctx *c, struct vm_setup_state *s,
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
			action(c->res, "removed %s", l->path);
		} else if (r >= 0) {
			action(c->res,
			       "left %s alone: it is no longer the link setup made",
			       l->path);
		}
	}
	for (size_t i = s->n_dirs; i-- > 0;) {
		if (rmdir(s->dirs[i]) == 0)
			action(c->res, "removed the directory %s", s->dirs[i]);
		else if (errno != ENOENT)
			action(c->res,
			       "left the directory %s: %s (setup created it; it holds something else now)",
			       s->dirs[i], strerror(errno));
	}
	/* The links are gone; if the unmount fails, remember only that. */
	for (size_t i = 0; i < s->n_links; i++) {
		free(s->links[i].path);
		free(s->links[i].target);
	}
	s->n_links = 0;
	s->n_dirs = 0;
	if (s->mounted) {
		r = unmount(c, err);
		if (r < 0) {
			vm_setup_state_save(c->state_file, s, NULL);
			return r;
		}
	} else {
		action(c->res, "left %s mounted: setup did not mount it",
		       c->mountpoint);
	}
	if (s->created_mountpoint && rmdir(c->mountpoint) == 0)
		action(c->res, "removed the mountpoint %s", c->mountpoint);
	if (unlink(c->state_file) < 0 && errno != ENOENT)
		return vm_error_errno(err, errno, "cannot remove %s",
				      c->state_file);
	return 0;
}

/* No state file: remove manifest links that point into the mount. */
static int undo_without_state(struct ctx *c, struct vm_error *err)
{
	struct vm_manifest *m __attribute__((cleanup(manifest_freep))) = NULL;
	struct vm_link_plan plan = { 0 };
	char path[PATH_MAX + 64];
	dev_t dev;
	int r;

	r = mounted_at(c->mountpoint, &dev);
	if (r < 0)
		return vm_error_errno(err, -r,
				      "cannot read /proc/self/mountinfo");
	if (r == 0) {
		action(c->res, "nothing to undo: nothing is mounted at %s",
		       c->mountpoint);
		return 0;
	}
	snprintf(path, sizeof(path), "%s%s", c->mountpoint, VM_MANIFEST_PATH);
	if (vm_manifest_load(path, &m, NULL) == 0 &&
	    build_plan(c, m, true, &plan, NULL) == 0) {
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
			action(c->res, "removed %s", plan.links[i].path);
		}
	}
	vm_link_plan_clear(&plan);
	r = unmount(c, err);
	return r < 0 ? r : 0;
}

int vm_setup_undo(const struct vm_setup_options *o, struct vm_setup_result *res,
		  struct vm_error *err)
{
	struct vm_setup_state s = { 0 };
	struct ctx c;
	int r;

	r = init_ctx(&c, o, res, err);
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
	set_str(&res->device, s.device);
	r = undo_with_state(&c, &s, err);
	vm_setup_state_clear(&s);
	return r;
}
