// SPDX-License-Identifier: Apache-2.0
/*
 * setup_plan.c - the links a manifest asks setup to make (vm_setup_plan):
 * its "links", one in the bindir per tool, and the running release's
 * modules directory; a link the manifest puts outside the few places
 * setup links into refuses the image.  setup.c plans to make them,
 * setup_undo.c to remove them.
 */
#include "agent/setup/setup_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"

/* Guest paths the manifest may ask for; anything else is refused. */
static const char *const allowed_link_prefixes[] = {
	"/lib/modules/",   "/usr/lib/modules/", "/usr/src/",
	"/usr/lib/linux-", "/lib/vmtools/",	"/usr/lib/vmtools/",
	"/opt/vmtools/",
};

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
int vm_setup_plan(struct vm_setup_ctx *c, const struct vm_manifest *m,
		  bool alias, struct vm_link_plan *p, struct vm_error *err)
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
