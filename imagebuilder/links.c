// SPDX-License-Identifier: Apache-2.0
/*
 * links.c - computes the manifest's "links".
 *
 * The image is mounted at, say, /run/vm-tools, but its trees expect to live
 * at their own paths: lib/modules/REL/build points to the absolute
 * /usr/src/linux-headers-REL.  The agent therefore symlinks each such
 * tree's guest path to <mountpoint><path>.  A "tree" is the first path
 * component below the standard system directories, so /usr/src itself is
 * never replaced, only /usr/src/linux-headers-REL inside it.
 */
#include "imagebuilder/links.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/cleanup.h"

/* Directories every guest has: never links themselves. */
static const char *const system_dirs[] = {
	"/",
	"/bin",
	"/boot",
	"/etc",
	"/lib",
	"/lib32",
	"/lib64",
	"/lib/modules",
	"/lib/firmware",
	"/lib/*-linux-gnu*",
	"/opt",
	"/sbin",
	"/usr",
	"/usr/bin",
	"/usr/include",
	"/usr/lib",
	"/usr/lib32",
	"/usr/lib64",
	"/usr/libexec",
	"/usr/lib/*-linux-gnu*",
	"/usr/local",
	"/usr/local/bin",
	"/usr/local/lib",
	"/usr/sbin",
	"/usr/share",
	"/usr/share/doc",
	"/usr/src",
	"/var",
	"/var/lib",
};

static int is_system_dir(const char *p)
{
	for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++)
		if (!fnmatch(system_dirs[i], p, FNM_PATHNAME))
			return 1;
	return 0;
}

int vm_link_tree_of(const char *path, char *out, size_t size)
{
	size_t len = strlen(path);

	if (len >= size || path[0] != '/')
		return -EINVAL;
	for (size_t i = 1; i <= len; i++) {
		if (i < len && path[i] != '/')
			continue;
		memcpy(out, path, i);
		out[i] = '\0';
		if (!is_system_dir(out))
			return 0;
	}
	return -ENOENT;
}

int vm_link_normalize(const char *dir, const char *path, char *out, size_t size)
{
	_cleanup_free_ char *full = NULL;
	char *save = NULL;
	size_t len = 0;

	if (path[0] == '/')
		full = strdup(path);
	else if (asprintf(&full, "%s/%s", dir, path) < 0)
		full = NULL;
	if (!full)
		return -ENOMEM;
	out[0] = '\0';
	for (char *c = strtok_r(full, "/", &save); c;
	     c = strtok_r(NULL, "/", &save)) {
		size_t cl = strlen(c);

		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
			out[len] = '\0';
			continue;
		}
		if (len + 1 + cl + 1 > size)
			return -ENAMETOOLONG;
		out[len++] = '/';
		memcpy(out + len, c, cl);
		len += cl;
		out[len] = '\0';
	}
	if (len == 0) {
		if (size < 2)
			return -ENAMETOOLONG;
		strcpy(out, "/");
	}
	return 0;
}

struct links_ctx {
	struct vm_tree *t;
	struct vm_error *err;
	char **trees;
	size_t n, cap;
	int changed;
};

static int add_tree(struct links_ctx *c, const char *tree)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->trees[i], tree))
			return 0;
	if (vm_grow(c->trees, &c->cap, c->n + 1) < 0)
		return -ENOMEM;
	c->trees[c->n] = strdup(tree);
	if (!c->trees[c->n])
		return -ENOMEM;
	c->n++;
	return 0;
}

static int excluded(const char *tree)
{
	return !strncmp(tree, "/lib/vmtools", 12) ||
	       !strncmp(tree, "/.vmtools", 9);
}

/*
 * Absolute symlinks pull in the tree they point to; relative ones only
 * when they leave a tree that is linked already (the headers' scripts ->
 * ../../lib/linux-kbuild-6.1/scripts): elsewhere they resolve inside the
 * mounted image by themselves.
 */
static int in_set(const struct links_ctx *c, const char *tree)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->trees[i], tree))
			return 1;
	return 0;
}

static int check_symlink(struct vm_node *n, void *ctx)
{
	struct links_ctx *c = ctx;
	_cleanup_free_ char *path = NULL;
	char dir[PATH_MAX], target[PATH_MAX], from[PATH_MAX], to[PATH_MAX];
	struct vm_node *res;
	char *slash;
	int r;

	if (n->type != VM_NODE_SYMLINK || n->link_to)
		return 0;
	path = vm_node_path(n);
	if (!path)
		return vm_error_set(c->err, ENOMEM, "out of memory");
	r = vm_tree_resolve(c->t, n->parent, n->target, &res, c->err);
	if (r < 0)
		return r;
	if (!res)
		return 0; /* dangles in the image: points into the guest */
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (vm_link_normalize(dir, n->target, target, sizeof(target)) < 0 ||
	    vm_link_tree_of(target, to, sizeof(to)) < 0)
		return 0;
	if (vm_link_tree_of(path, from, sizeof(from)) == 0 && !strcmp(from, to))
		return 0; /* stays inside its own tree */
	if (n->target[0] != '/' && !in_set(c, from))
		return 0;
	if (excluded(to) || in_set(c, to) || !vm_tree_lookup(c->t, to, 0, NULL))
		return 0;
	c->changed = 1;
	return add_tree(c, to) < 0 ?
		       vm_error_set(c->err, ENOMEM, "out of memory") :
		       0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int vm_links_compute(struct vm_tree *t, const char *kernel_release,
		     struct vm_manifest *m, struct vm_error *err)
{
	struct links_ctx c = { .t = t, .err = err };
	char mod[PATH_MAX];
	int r;

	r = 0;
	if (kernel_release) {
		snprintf(mod, sizeof(mod), "/lib/modules/%s", kernel_release);
		if (vm_tree_lookup(t, mod, 0, NULL) && add_tree(&c, mod) < 0)
			r = vm_error_set(err, ENOMEM, "out of memory");
	}
	/* Until no tree is added: a linked tree can pull in another. */
	do {
		c.changed = 0;
		if (r == 0)
			r = vm_tree_walk(t->root, check_symlink, &c);
	} while (r == 0 && c.changed);
	if (r == 0 && c.n)
		qsort(c.trees, c.n, sizeof(*c.trees), cmp_str);
	for (size_t i = 0; i < c.n; i++) {
		if (r == 0 &&
		    vm_manifest_add_link(m, c.trees[i], c.trees[i]) < 0)
			r = vm_error_set(err, ENOMEM, "out of memory");
		free(c.trees[i]);
	}
	free(c.trees);
	return r;
}
