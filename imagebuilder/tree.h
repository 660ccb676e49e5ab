/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tree.h - the in-memory picture of what goes into the image.
 *
 * The builder first collects everything (the staged root, depmod's output,
 * bundled tools, the manifest) into this tree, then sizes the image from it
 * and writes it in one pass.  Children are kept sorted with strcmp, so the
 * traversal order, and with it inode and block numbers, depend only on the
 * names: that is half of what makes the image reproducible.
 */
#ifndef VMTOOLS_IMAGEBUILDER_TREE_H
#define VMTOOLS_IMAGEBUILDER_TREE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "common/sha256.h"

/* ext4 limits the image must respect. */
#define VM_NAME_MAX 255
#define VM_SYMLINK_MAX 4095
/*
 * The longest path in the image: the guest opens <mountpoint><path>
 * within PATH_MAX (4096 with its NUL); 256 bytes are left for the
 * mountpoint (/run/vm-tools by default).
 */
#define VM_IMAGE_PATH_MAX (4096 - 1 - 256)
/* Symlinks followed while resolving one path, as Linux's MAXSYMLINKS. */
#define VM_SYMLINK_HOPS 40

enum vm_node_type {
	VM_NODE_DIR,
	VM_NODE_REG,
	VM_NODE_SYMLINK,
	VM_NODE_CHR,
	VM_NODE_BLK,
	VM_NODE_FIFO,
	VM_NODE_SOCK,
};

/* A byte range of a sparse file that holds data (block aligned). */
struct vm_segment {
	uint64_t off, len;
};

struct vm_node {
	char *name; /* one component; "" for the root */
	struct vm_node *parent;
	enum vm_node_type type;
	uint32_t mode; /* permission bits, 07777 */
	uint32_t uid, gid;
	int64_t mtime; /* staged mtime; clamped to the build epoch */
	uint64_t size; /* regular file size */
	char *source; /* host path of a regular file's content */
	const void *data; /* or the content itself (not owned) */
	char *target; /* symlink target */
	dev_t rdev;
	/* Hardlink: this name shares the inode of `link_to`. */
	struct vm_node *link_to;
	uint32_t nlink; /* names of this inode, or 2 + subdirs */
	/* NULL: the whole file is data; else its data ranges (sparse). */
	struct vm_segment *segs;
	size_t n_segs;
	struct vm_node **children;
	size_t n_children, cap_children;
	/*
	 * Content known only later, written after everything else:
	 * VM_LATE (depmod's output, sized by `reserve_blocks` until then),
	 * then VM_LAST (the manifest, which hashes all the rest).
	 */
	int deferred;
	uint64_t reserve_blocks;
	/* Filled by the writer. */
	uint32_t ino;
	char sha256[VM_SHA256_HEX_LEN];
};

enum { VM_NOW = 0, VM_LATE = 1, VM_LAST = 2 };

/*
 * Set to the signal number by vm_build()'s SIGINT/SIGTERM/SIGHUP handler;
 * the walk and the writer check it per entry and fail with EINTR, so an
 * interrupted build cleans up on its ordinary error path.
 */
extern volatile sig_atomic_t vm_interrupted;

struct vm_tree {
	struct vm_node *root;
	size_t n_nodes; /* names, root included */
};

int vm_tree_init(struct vm_tree *t);
void vm_tree_free(struct vm_tree *t);

/* Allocate a node (not yet in the tree); name is copied. */
struct vm_node *vm_node_new(const char *name, enum vm_node_type type,
			    uint32_t mode);
void vm_node_free(struct vm_node *n);

/*
 * Insert `child` under `dir`, keeping the order; -EEXIST when the name is
 * taken.  The tree takes ownership on success.
 */
int vm_tree_insert(struct vm_tree *t, struct vm_node *dir,
		   struct vm_node *child);

/* The child named `name` (binary search), or NULL. */
struct vm_node *vm_node_child(const struct vm_node *dir, const char *name);

/*
 * The node at absolute image path `path`, or NULL; symlinks on the way are
 * followed inside the image (a merged-/usr root's /bin -> usr/bin).  With
 * `create`, missing directories are made (mode 0755).
 */
struct vm_node *vm_tree_lookup(struct vm_tree *t, const char *path, int create,
			       struct vm_error *err);

/*
 * Add `node` at absolute image path `path` (its last component must be
 * node->name), creating parent directories; errors name the path.
 */
int vm_tree_add(struct vm_tree *t, const char *path, struct vm_node *node,
		struct vm_error *err);

/*
 * Resolve an image path as the kernel would inside the mounted image, with
 * absolute symlinks taken relative to the image root.  *out is NULL when
 * the path dangles.  -ELOOP on a symlink loop (err names the link).
 */
int vm_tree_resolve(struct vm_tree *t, const struct vm_node *from_dir,
		    const char *path, struct vm_node **out,
		    struct vm_error *err);

/* Absolute image path of a node, malloc'ed ("/" for the root). */
char *vm_node_path(const struct vm_node *n);

/* Pre-order walk, children in order; stops when fn returns non-zero. */
int vm_tree_walk(struct vm_node *n, int (*fn)(struct vm_node *, void *),
		 void *ctx);

#endif
