// SPDX-License-Identifier: Apache-2.0
/*
 * walk.c - reads a staged root into the image tree.
 *
 * One directory at a time, through directory file descriptors (openat,
 * fstatat with AT_SYMLINK_NOFOLLOW), so nothing outside the root is ever
 * followed.  The walk keeps its own stack, not the C stack, and one
 * descriptor: the tree's depth costs memory only, and a path deeper than
 * the guest can open is refused.  Entries are sorted with strcmp before they are inserted; the
 * host's readdir order, atime and ctime never reach the image.
 */
#include "imagebuilder/walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/cleanup.h"

struct hardlink {
	dev_t dev;
	ino_t ino;
	size_t order; /* first seen wins: traversal order is sorted */
	struct vm_node *node;
};

struct walk {
	const struct vm_walk_opts *opts;
	struct vm_tree *t;
	struct vm_error *err;
	struct hardlink *links;
	size_t n_links, cap_links;
	size_t root_len; /* of the host path of the root */
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Fill n->segs when the file at fd has holes; 0 or -errno. */
static int vm_walk_segments(int fd, struct vm_node *n)
{
	struct vm_segment *segs = NULL;
	size_t count = 0, cap = 0;
	off_t pos = 0, size = (off_t)n->size;

	while (pos < size) {
		off_t data = lseek(fd, pos, SEEK_DATA), hole;

		if (data < 0) {
			if (errno == ENXIO)
				break; /* only a hole remains */
			free(segs);
			return errno == EINVAL ? 0 : -errno; /* no support */
		}
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || hole > size)
			hole = size;
		if (vm_grow(segs, &cap, count + 1) < 0) {
			free(segs);
			return -ENOMEM;
		}
		/* Whole 4 KiB blocks: a partly used block is data. */
		segs[count].off = (uint64_t)data & ~4095ull;
		segs[count].len =
			(((uint64_t)hole + 4095) & ~4095ull) - segs[count].off;
		if (count && segs[count - 1].off + segs[count - 1].len >=
				     segs[count].off) {
			segs[count - 1].len = segs[count].off +
					      segs[count].len -
					      segs[count - 1].off;
		} else {
			count++;
		}
		pos = hole;
	}
	lseek(fd, 0, SEEK_SET);
	n->segs = segs;
	n->n_segs = count;
	if (!segs) /* all hole: an empty segment list, not "all data" */
		n->segs = calloc(1, sizeof(*n->segs));
	return n->segs ? 0 : -ENOMEM;
}

static int remember_hardlink(struct walk *w, const struct stat *st,
			     struct vm_node *n)
{
	if (vm_grow(w->links, &w->cap_links, w->n_links + 1) < 0)
		return -ENOMEM;
	w->links[w->n_links] =
		(struct hardlink){ st->st_dev, st->st_ino, w->n_links, n };
	w->n_links++;
	return 0;
}

static int cmp_hardlink(const void *a, const void *b)
{
	const struct hardlink *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* "dir/name", without printf's cost: it runs once per file of the root. */
static char *join(const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	char *p = malloc(dl + nl + 2);

	if (p) {
		memcpy(p, dir, dl);
		p[dl] = '/';
		memcpy(p + dl + 1, name, nl + 1);
	}
	return p;
}

/* The node type of a file of this st_mode. */
static enum vm_node_type node_type(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR:
		return VM_NODE_DIR;
	case S_IFREG:
		return VM_NODE_REG;
	case S_IFLNK:
		return VM_NODE_SYMLINK;
	case S_IFCHR:
		return VM_NODE_CHR;
	case S_IFBLK:
		return VM_NODE_BLK;
	case S_IFIFO:
		return VM_NODE_FIFO;
	default:
		return VM_NODE_SOCK;
	}
}

/* The entry's metadata, the link itself for a symlink; path for messages. */
static int stat_entry(struct walk *w, int dfd, const char *name,
		      const char *path, struct stat *st)
{
	if (strlen(name) > VM_NAME_MAX)
		return vm_error_set(
			w->err, ENAMETOOLONG,
			"%s: name is %zu bytes, ext4 allows %d; shorten it in the staged root",
			path, strlen(name), VM_NAME_MAX);
	if (fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		return vm_error_errno(w->err, errno, "cannot stat %s", path);
	return 0;
}

/* A node for the entry in dir, with what the image keeps of st. */
static int insert_node(struct walk *w, struct vm_node *dir, const char *name,
		       const char *path, const struct stat *st,
		       struct vm_node **out)
{
	struct vm_node *n, *old;
	int r;

	if (w->opts && w->opts->merge_dirs && S_ISDIR(st->st_mode) &&
	    (old = vm_node_child(dir, name)) && old->type == VM_NODE_DIR) {
		*out = old;
		return 0;
	}
	n = vm_node_new(name, node_type(st->st_mode), st->st_mode);
	if (!n)
		return vm_error_set(w->err, ENOMEM, "out of memory");
	if (w->opts && w->opts->keep_owner) {
		n->uid = st->st_uid;
		n->gid = st->st_gid;
	}
	n->rdev = st->st_rdev;
	n->mtime = st->st_mtim.tv_sec;
	r = vm_tree_insert(w->t, dir, n);
	if (r == -EEXIST) {
		_cleanup_free_ char *at = vm_node_path(dir);

		vm_node_free(n);
		return vm_error_set(
			w->err, EEXIST,
			"cannot add %s: the image already has %s/%s; give each file once",
			path, at && strcmp(at, "/") ? at : "", name);
	}
	if (r < 0) {
		vm_node_free(n);
		return vm_error_set(w->err, r, "cannot add %s", path);
	}
	*out = n;
	return 0;
}

static int read_symlink(struct walk *w, int dfd, const char *name,
			const char *path, struct vm_node *n)
{
	/* One byte over the limit, to tell a target that is too long. */
	char buf[VM_SYMLINK_MAX + 2];
	ssize_t len = readlinkat(dfd, name, buf, sizeof(buf));

	if (len < 0)
		return vm_error_errno(w->err, errno, "cannot read symlink %s",
				      path);
	if (len > VM_SYMLINK_MAX || len == 0)
		return vm_error_set(
			w->err, ENAMETOOLONG,
			"%s: symlink target is %zd bytes, the image allows 1 to %d",
			path, len, VM_SYMLINK_MAX);
	n->target = strndup(buf, (size_t)len);
	if (!n->target)
		return vm_error_set(w->err, ENOMEM, "out of memory");
	n->size = (uint64_t)len;
	return 0;
}

/*
 * A regular file, whose n->source is set: its holes when it has fewer
 * blocks than bytes (only then is it opened here), and its inode when
 * other names share it.
 */
static int add_regular(struct walk *w, int dfd, const char *name,
		       const struct stat *st, struct vm_node *n)
{
	int r;

	n->size = (uint64_t)st->st_size;
	if ((uint64_t)st->st_blocks * 512 < n->size) {
		_cleanup_close_ int fd =
			openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

		if (fd < 0)
			return vm_error_errno(w->err, errno, "cannot open %s",
					      n->source);
		r = vm_walk_segments(fd, n);
		if (r < 0)
			return vm_error_errno(w->err, r,
					      "cannot find the holes of %s",
					      n->source);
	}
	if (st->st_nlink > 1)
		return remember_hardlink(w, st, n);
	return 0;
}

/*
 * A directory being read: its node, host path and sorted names, the next
 * to add, and its device and inode, to check the way back up ("..").
 */
struct frame {
	struct vm_node *dir;
	char *host;
	char **names;
	size_t n, next;
	dev_t dev;
	ino_t ino;
};

static void frame_clear(struct frame *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->names[i]);
	free(f->names);
	free(f->host);
}

/* The names in the directory open at dfd, sorted with strcmp. */
static int read_names(struct walk *w, int dfd, struct frame *f)
{
	_cleanup_closedir_ DIR *d = NULL;
	size_t cap = 0;
	struct dirent *e;
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return vm_error_errno(w->err, errno, "cannot read directory %s",
				      f->host);
	}
	for (;;) {
		errno = 0;
		e = readdir(d);
		if (!e)
			break;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (vm_grow(f->names, &cap, f->n + 1) < 0)
			return vm_error_set(w->err, ENOMEM,
					    "out of memory reading %s",
					    f->host);
		f->names[f->n] = strdup(e->d_name);
		if (!f->names[f->n])
			return vm_error_set(w->err, ENOMEM,
					    "out of memory reading %s",
					    f->host);
		f->n++;
	}
	if (errno)
		return vm_error_errno(w->err, errno, "cannot read directory %s",
				      f->host);
	if (f->n > 1)
		qsort(f->names, f->n, sizeof(*f->names), cmp_str);
	return 0;
}

/*
 * The walk: depth first, one directory open at a time (a 3,000-level
 * tree needs neither 3,000 stack frames nor 3,000 descriptors); coming
 * back up goes through ".." and checks it is the directory left.
 */
struct stack {
	struct frame *v;
	size_t n, cap;
	int fd; /* the directory of the top frame */
};

static int push(struct walk *w, struct stack *s, int fd, struct vm_node *dir,
		char *host)
{
	struct frame *f;
	struct stat st;

	if (vm_grow(s->v, &s->cap, s->n + 1) < 0) {
		close(fd);
		free(host);
		return vm_error_set(w->err, ENOMEM, "out of memory");
	}
	f = memset(&s->v[s->n++], 0, sizeof(*f));
	f->dir = dir;
	f->host = host;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = fd;
	if (fstat(fd, &st) < 0)
		return vm_error_errno(w->err, errno, "cannot stat %s", host);
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	return read_names(w, fd, f);
}

static int pop(struct walk *w, struct stack *s)
{
	struct frame *up;
	struct stat st;
	int fd;

	frame_clear(&s->v[--s->n]);
	if (s->n == 0)
		return 0;
	up = &s->v[s->n - 1];
	fd = openat(s->fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != up->dev ||
	    st.st_ino != up->ino) {
		if (fd >= 0)
			close(fd);
		return vm_error_set(
			w->err, EAGAIN,
			"%s changed while it was read (a directory was moved); build again",
			up->host);
	}
	close(s->fd);
	s->fd = fd;
	return 0;
}

/* Refuse a path the guest could not open, with the mountpoint before it. */
static int check_depth(struct walk *w, const char *path)
{
	size_t len = strlen(path) - w->root_len;

	if (len > VM_IMAGE_PATH_MAX)
		return vm_error_set(
			w->err, ENAMETOOLONG,
			"%.200s...: this path is %zu bytes long in the image; the guest opens paths of at most %d bytes (PATH_MAX, less room for the mountpoint): flatten the staged tree",
			path, len, VM_IMAGE_PATH_MAX);
	return 0;
}

/* One entry of the top directory into the tree; a directory is pushed. */
static int add_entry(struct walk *w, struct stack *s, const char *name)
{
	struct frame *f = &s->v[s->n - 1];
	_cleanup_free_ char *path = NULL;
	struct vm_node *n = NULL;
	struct stat st, dst;
	int r, sub;

	if (vm_interrupted)
		return vm_error_set(w->err, EINTR, "interrupted by signal %d",
				    (int)vm_interrupted);
	path = join(f->host, name);
	if (!path)
		return vm_error_set(w->err, ENOMEM, "out of memory");
	r = check_depth(w, path);
	if (r == 0)
		r = stat_entry(w, s->fd, name, path, &st);
	if (r == 0)
		r = insert_node(w, f->dir, name, path, &st, &n);
	if (r < 0)
		return r;
	switch (n->type) {
	case VM_NODE_SYMLINK:
		return read_symlink(w, s->fd, name, path, n);
	case VM_NODE_REG:
		/* The writer and the readers open the file by this path. */
		n->source = TAKE_PTR(path);
		return add_regular(w, s->fd, name, &st, n);
	case VM_NODE_DIR:
		sub = openat(s->fd, name,
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub < 0)
			return vm_error_errno(w->err, errno,
					      "cannot open directory %s", path);
		if (fstat(sub, &dst) < 0 || dst.st_ino != st.st_ino ||
		    dst.st_dev != st.st_dev) {
			close(sub);
			return vm_error_set(
				w->err, EAGAIN,
				"%s changed while it was read; build again",
				path);
		}
		return push(w, s, sub, n, TAKE_PTR(path));
	default:
		return 0;
	}
}

static int walk_tree(struct walk *w, int fd, const char *root,
		     struct vm_node *top)
{
	struct stack s = { .fd = -1 };
	char *host = strdup(root);
	int r;

	if (!host) {
		close(fd);
		return vm_error_set(w->err, ENOMEM, "out of memory");
	}
	r = push(w, &s, fd, top, host);
	while (r == 0 && s.n > 0) {
		struct frame *f = &s.v[s.n - 1];

		if (f->next == f->n)
			r = pop(w, &s);
		else
			r = add_entry(w, &s, f->names[f->next++]);
	}
	while (s.n > 0)
		frame_clear(&s.v[--s.n]);
	free(s.v);
	if (s.fd >= 0)
		close(s.fd);
	return r;
}

/* Hardlinked files (same device and inode) become one inode. */
static void link_hardlinks(struct walk *w)
{
	if (!w->n_links)
		return;
	qsort(w->links, w->n_links, sizeof(*w->links), cmp_hardlink);
	for (size_t i = 1; i < w->n_links; i++)
		if (w->links[i].dev == w->links[i - 1].dev &&
		    w->links[i].ino == w->links[i - 1].ino)
			w->links[i].node->link_to =
				w->links[i - 1].node->link_to ?
					w->links[i - 1].node->link_to :
					w->links[i - 1].node;
}

int vm_walk_into(const char *dir, const char *image_path,
		 const struct vm_walk_opts *opts, struct vm_tree *t,
		 struct vm_error *err)
{
	struct walk w = { .opts = opts, .t = t, .err = err };
	struct vm_node *node;
	int fd, r;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return vm_error_errno(err, errno,
				      "cannot open the directory %s", dir);
	node = vm_tree_lookup(t, image_path, 1, err);
	if (!node || node->type != VM_NODE_DIR) {
		close(fd);
		return node ? vm_error_set(
				      err, ENOTDIR,
				      "%s is not a directory in the image, so %s cannot go there",
				      image_path, dir) :
			      -EINVAL;
	}
	w.root_len = strlen(dir);
	r = walk_tree(&w, fd, dir, node);
	if (r == 0)
		link_hardlinks(&w);
	free(w.links);
	return r;
}

int vm_walk(const char *root, const struct vm_walk_opts *opts,
	    struct vm_tree *t, struct vm_error *err)
{
	struct walk w = { .opts = opts, .t = t, .err = err };
	struct stat st;
	int fd, r;

	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return vm_error_errno(
			err, errno,
			"cannot open the root directory %s (--root must name a readable directory)",
			root);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return vm_error_errno(err, errno, "cannot stat %s", root);
	}
	t->root->mode = st.st_mode & 07777;
	if (opts && opts->keep_owner) {
		t->root->uid = st.st_uid;
		t->root->gid = st.st_gid;
	}
	w.root_len = strlen(root);
	r = walk_tree(&w, fd, root, t->root);
	if (r == 0)
		link_hardlinks(&w);
	free(w.links);
	return r;
}
