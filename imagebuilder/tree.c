// SPDX-License-Identifier: Apache-2.0
/*
 * tree.c - the in-memory tree of the image: sorted insertion, lookup,
 * and path resolution the way the kernel will do it in the mounted image
 * (used to refuse symlink loops and to find which trees the guest must link).
 */
#include "imagebuilder/tree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/cleanup.h"

volatile sig_atomic_t vm_interrupted;

struct vm_node *vm_node_new(const char *name, enum vm_node_type type,
			    uint32_t mode)
{
	struct vm_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->name = strdup(name);
	if (!n->name) {
		free(n);
		return NULL;
	}
	n->type = type;
	n->mode = mode & 07777;
	n->mtime = INT64_MAX;
	return n;
}

/* Without recursion: a tree may be thousands of levels deep. */
void vm_node_free(struct vm_node *top)
{
	struct vm_node *n = top;

	while (n) {
		struct vm_node *up;

		if (n->n_children) { /* the last child first */
			n = n->children[--n->n_children];
			continue;
		}
		up = n == top ? NULL : n->parent;
		free(n->children);
		free(n->name);
		free(n->source);
		free(n->target);
		free(n->segs);
		free(n);
		n = up;
	}
}

int vm_tree_init(struct vm_tree *t)
{
	t->root = vm_node_new("", VM_NODE_DIR, 0755);
	t->n_nodes = 1;
	return t->root ? 0 : -ENOMEM;
}

void vm_tree_free(struct vm_tree *t)
{
	vm_node_free(t->root);
	t->root = NULL;
}

/* Index of the first child whose name is >= name. */
static size_t child_pos(const struct vm_node *dir, const char *name)
{
	size_t lo = 0, hi = dir->n_children;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(dir->children[mid]->name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct vm_node *vm_node_child(const struct vm_node *dir, const char *name)
{
	size_t i = child_pos(dir, name);

	if (i < dir->n_children && !strcmp(dir->children[i]->name, name))
		return dir->children[i];
	return NULL;
}

int vm_tree_insert(struct vm_tree *t, struct vm_node *dir,
		   struct vm_node *child)
{
	size_t i = child_pos(dir, child->name);

	if (i < dir->n_children && !strcmp(dir->children[i]->name, child->name))
		return -EEXIST;
	if (vm_grow(dir->children, &dir->cap_children, dir->n_children + 1) < 0)
		return -ENOMEM;
	memmove(&dir->children[i + 1], &dir->children[i],
		(dir->n_children - i) * sizeof(*dir->children));
	dir->children[i] = child;
	dir->n_children++;
	child->parent = dir;
	t->n_nodes++;
	return 0;
}

char *vm_node_path(const struct vm_node *n)
{
	size_t len = 0;
	char *p, *w;

	if (!n->parent)
		return strdup("/");
	for (const struct vm_node *c = n; c->parent; c = c->parent)
		len += strlen(c->name) + 1;
	p = malloc(len + 1);
	if (!p)
		return NULL;
	w = p + len;
	*w = '\0';
	for (const struct vm_node *c = n; c->parent; c = c->parent) {
		size_t l = strlen(c->name);

		w -= l;
		memcpy(w, c->name, l);
		*--w = '/';
	}
	return p;
}

struct vm_node *vm_tree_lookup(struct vm_tree *t, const char *path, int create,
			       struct vm_error *err)
{
	_cleanup_free_ char *copy = strdup(path);
	struct vm_node *cur = t->root;
	char *save = NULL;

	if (!copy) {
		vm_error_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	for (char *c = strtok_r(copy, "/", &save); c;
	     c = strtok_r(NULL, "/", &save)) {
		struct vm_node *next;

		if (cur->type != VM_NODE_DIR) {
			vm_error_set(
				err, ENOTDIR,
				"cannot add %s: a parent is not a directory in the image",
				path);
			return NULL;
		}
		next = vm_node_child(cur, c);
		if (!next && create) {
			next = vm_node_new(c, VM_NODE_DIR, 0755);
			if (!next || vm_tree_insert(t, cur, next) < 0) {
				vm_node_free(next);
				vm_error_set(err, ENOMEM, "out of memory");
				return NULL;
			}
		}
		if (!next)
			return NULL;
		if (next->type == VM_NODE_SYMLINK) {
			/* e.g. a merged-/usr root's bin -> usr/bin */
			struct vm_node *to = NULL;

			if (vm_tree_resolve(t, cur, next->target, &to, err) < 0)
				return NULL;
			if (!to) {
				vm_error_set(
					err, ENOENT,
					"cannot add %s: %s is a symlink to %s, which is not in the image",
					path, c, next->target);
				return NULL;
			}
			next = to;
		}
		cur = next;
	}
	return cur;
}

int vm_tree_add(struct vm_tree *t, const char *path, struct vm_node *node,
		struct vm_error *err)
{
	_cleanup_free_ char *dir = strdup(path);
	struct vm_node *parent;
	char *slash;
	int r;

	if (!dir)
		return vm_error_set(err, ENOMEM, "out of memory");
	slash = strrchr(dir, '/');
	if (!slash || strcmp(slash + 1, node->name))
		return vm_error_set(err, EINVAL, "internal: bad image path %s",
				    path);
	*slash = '\0';
	parent = vm_tree_lookup(t, dir, 1, err);
	if (!parent)
		return err && err->code ? -err->code : -ENOENT;
	if (parent->type != VM_NODE_DIR)
		return vm_error_set(
			err, ENOTDIR,
			"cannot add %s: its parent is not a directory in the staged root",
			path);
	r = vm_tree_insert(t, parent, node);
	if (r == -EEXIST)
		return vm_error_set(
			err, EEXIST,
			"cannot add %s: the staged root already has that path; remove it or rename the tool",
			path);
	if (r < 0)
		return vm_error_set(err, r, "out of memory adding %s", path);
	return 0;
}

static int resolve(struct vm_tree *t, const struct vm_node *dir,
		   const char *path, int follow_last, int *hops,
		   struct vm_node **out, struct vm_error *err);

/*
 * Resolution state: `hops` counts followed links over the whole lookup, as
 * the kernel does, so a -> b -> a ends in ELOOP however it is reached.
 */
static int resolve(struct vm_tree *t, const struct vm_node *dir,
		   const char *path, int follow_last, int *hops,
		   struct vm_node **out, struct vm_error *err)
{
	_cleanup_free_ char *copy = strdup(path);
	struct vm_node *cur = path[0] == '/' ? t->root : (struct vm_node *)dir;
	char *save = NULL, *c, *next;

	if (!copy)
		return vm_error_set(err, ENOMEM, "out of memory");
	*out = NULL;
	c = strtok_r(copy, "/", &save);
	while (c) {
		struct vm_node *n;

		next = strtok_r(NULL, "/", &save);
		if (cur->type != VM_NODE_DIR)
			return 0; /* dangles: a component is not a dir */
		if (!strcmp(c, ".")) {
			c = next;
			continue;
		}
		if (!strcmp(c, "..")) {
			if (cur->parent)
				cur = cur->parent;
			c = next;
			continue;
		}
		n = vm_node_child(cur, c);
		if (!n)
			return 0;
		if (n->link_to)
			n = n->link_to;
		if (n->type == VM_NODE_SYMLINK && (next || follow_last)) {
			struct vm_node *to;
			int r;

			if (++*hops > VM_SYMLINK_HOPS) {
				_cleanup_free_ char *p = vm_node_path(n);

				return vm_error_set(
					err, ELOOP,
					"symlink loop at %s (-> %s); fix the staged tree",
					p ? p : n->name, n->target);
			}
			r = resolve(t, cur, n->target, 1, hops, &to, err);
			if (r < 0 || !to)
				return r;
			n = to;
		}
		cur = n;
		c = next;
	}
	*out = cur;
	return 0;
}

int vm_tree_resolve(struct vm_tree *t, const struct vm_node *from_dir,
		    const char *path, struct vm_node **out,
		    struct vm_error *err)
{
	int hops = 0;

	return resolve(t, from_dir, path, 1, &hops, out, err);
}

/*
 * Pre-order without recursion: down to the first child, else on to the
 * next sibling of the nearest ancestor that has one (found by its name:
 * children are sorted).
 */
int vm_tree_walk(struct vm_node *top, int (*fn)(struct vm_node *, void *),
		 void *ctx)
{
	struct vm_node *n = top;

	for (;;) {
		int r = fn(n, ctx);

		if (r)
			return r;
		if (n->n_children) {
			n = n->children[0];
			continue;
		}
		for (;;) {
			struct vm_node *up;
			size_t i;

			if (n == top)
				return 0;
			up = n->parent;
			i = child_pos(up, n->name) + 1;
			if (i < up->n_children) {
				n = up->children[i];
				break;
			}
			n = up;
		}
	}
}
