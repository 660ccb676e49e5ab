// SPDX-License-Identifier: Apache-2.0
/*
 * setup_ctx.c - one run of setup or --undo: its options with the defaults
 * filled in and the paths made absolute (struct vm_setup_ctx), and what
 * the command prints and returns (struct vm_setup_result).  Below every
 * other file of setup that reports an action, so none of them calls back
 * up into setup.c.
 */
#include "agent/setup/setup_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/setup/safe_path.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/label.h"

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

void vm_setup_action(struct vm_setup_result *res, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return;
	if (vm_grow(res->actions, &res->cap_actions, res->n_actions + 1) < 0) {
		free(s);
		return;
	}
	res->actions[res->n_actions++] = s;
}

void vm_setup_set_str(char **dst, const char *src)
{
	free(*dst);
	*dst = src ? strdup(src) : NULL;
}

void vm_setup_manifest_freep(struct vm_manifest **m)
{
	vm_manifest_free(*m);
}

/*
 * The mountpoint as /proc/self/mountinfo will name it: its directories
 * that exist resolved (Debian's /var/run -> /run), the rest (which setup
 * creates as real directories) and its own name kept.  Without this a
 * second run would not see the disk mounted and mount it again.
 */
static int canonical_mountpoint(const char *mnt, size_t n, char *out,
				size_t size, struct vm_error *err)
{
	char dir[PATH_MAX];
	const char *rest;
	char *slash;

	memcpy(dir, mnt, n);
	dir[n] = '\0';
	for (char *p = dir; (p = strstr(p, "/.")); p++)
		if (p[2] == '\0' || p[2] == '/' ||
		    (p[2] == '.' && (p[3] == '\0' || p[3] == '/')))
			return vm_error_set(
				err, EINVAL,
				"--mountpoint %s has a . or .. component; name the directory plainly",
				mnt);
	slash = strrchr(dir, '/');
	rest = mnt + (slash - dir);
	for (;;) {
		_cleanup_free_ char *real = NULL;

		*slash = '\0';
		real = realpath(dir[0] ? dir : "/", NULL);
		if (real) {
			if (snprintf(out, size, "%s%s",
				     strcmp(real, "/") ? real : "",
				     rest) >= (int)size)
				break;
			return 0;
		}
		if (errno != ENOENT)
			return vm_error_errno(
				err, errno, "cannot use --mountpoint %s", mnt);
		slash = strrchr(dir, '/');
		rest = mnt + (slash - dir);
	}
	return vm_error_set(err, ENAMETOOLONG, "--mountpoint %s is too long",
			    mnt);
}

int vm_setup_ctx_init(struct vm_setup_ctx *c, const struct vm_setup_options *o,
		      struct vm_setup_result *res, struct vm_error *err)
{
	const char *mnt = o->mountpoint ? o->mountpoint :
					  VM_SETUP_DEFAULT_MOUNTPOINT;
	size_t n;
	struct utsname u;
	int r;

	memset(c, 0, sizeof(*c));
	c->lock_fd = c->lock_dir = c->cache.fd = -1;
	c->guard.cache = &c->cache;
	c->o = o;
	c->res = res;
	c->label = o->label ? o->label : VM_SETUP_DEFAULT_LABEL;
	c->bindir = o->bindir ? o->bindir : VM_SETUP_DEFAULT_BINDIR;
	c->root = o->root ? o->root : "";
	r = vm_label_check(c->label, "--label", err);
	if (r < 0)
		return r;
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
	r = canonical_mountpoint(mnt, n, c->mountpoint, sizeof(c->mountpoint),
				 err);
	if (r < 0)
		return r;
	/* Collapse "//": the mountpoint is compared as text. */
	for (char *p = c->mountpoint; (p = strstr(p, "//"));)
		memmove(p, p + 1, strlen(p));
	c->guard.owner = c->mountpoint;
	if (o->state_file && o->state_file[0] != '/') {
		/* Absolute: its lock is reached by a walk from / too. */
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)))
			return vm_error_errno(err, errno,
					      "cannot use --state-file %s",
					      o->state_file);
		if (snprintf(c->state_file, sizeof(c->state_file), "%s/%s", cwd,
			     o->state_file) >= (int)sizeof(c->state_file))
			return vm_error_set(err, ENAMETOOLONG,
					    "--state-file %s is too long",
					    o->state_file);
	} else if (o->state_file)
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
	vm_setup_set_str(&res->mountpoint, c->mountpoint);
	vm_setup_set_str(&res->running_release, c->release);
	return 0;
}

void vm_setup_ctx_clear(struct vm_setup_ctx *c)
{
	vm_setup_unlock(c);
	vm_walk_cache_clear(&c->cache);
}
