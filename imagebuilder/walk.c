// SPDX-License-Identifier: Apache-2.0
/*
 * walk.c - reads a staged root into the image tree.
 *
 * One directory at a time, through directory file descriptors (openat,
 * fstatat with AT_SYMLINK_NOFOLLOW), so nothing outside the root is ever
 * followed.  Entries are sorted with strcmp before they are inserted; the
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
	int merge_dirs; /* a directory already there takes the entries */
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
		if (count == cap) {
			struct vm_segment *s;

			cap = cap ? 2 * cap : 4;
			s = realloc(segs, cap * sizeof(*segs));
			if (!s) {
				free(segs);
				return -ENOMEM;
			}
			segs = s;
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
	if (w->n_links == w->cap_links) {
		size_t cap = w->cap_links ? 2 * w->cap_links : 64;
		struct hardlink *l = realloc(w->links, cap * sizeof(*l));

		if (!l)
			return -ENOMEM;
		w->links = l;
		w->cap_links = cap;
	}
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

static int walk_dir(struct walk *w, int dfd, const char *host,
		    struct vm_node *dir);

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

	if (w->merge_dirs && S_ISDIR(st->st_mode) &&
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

static int enter_dir(struct walk *w, int dfd, const char *name,
		     const char *path, struct vm_node *n)
{
	_cleanup_close_ int sub = openat(
		dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

	if (sub < 0)
		return vm_error_errno(w->err, errno, "cannot open directory %s",
				      path);
	return walk_dir(w, TAKE_FD(sub), path, n);
}

/*
 * One entry of the directory open at dfd (the host's `host`) into dir;
 * a directory is read whole, depth first, so inode order follows the walk.
 */
static int add_entry(struct walk *w, int dfd, const char *host,
		     struct vm_node *dir, const char *name)
{
	_cleanup_free_ char *path = NULL;
	struct vm_node *n = NULL;
	struct stat st;
	int r;

	if (vm_interrupted)
		return vm_error_set(w->err, EINTR, "interrupted by signal %d",
				    (int)vm_interrupted);
	path = join(host, name);
	if (!path)
		return vm_error_set(w->err, ENOMEM, "out of memory");
	r = stat_entry(w, dfd, name, path, &st);
	if (r == 0)
		r = insert_node(w, dir, name, path, &st, &n);
	if (r < 0)
		return r;
	switch (n->type) {
	case VM_NODE_SYMLINK:
		return read_symlink(w, dfd, name, path, n);
	case VM_NODE_REG:
		/* The writer and the readers open the file by this path. */
		n->source = TAKE_PTR(path);
		return add_regular(w, dfd, name, &st, n);
	case VM_NODE_DIR:
		return enter_dir(w, dfd, name, path, n);
	default:
		return 0;
	}
}

/* Takes ownership of dfd. */
static int walk_dir(struct walk *w, int dfd, const char *host,
		    struct vm_node *dir)
{
	_cleanup_closedir_ DIR *d = fdopendir(dfd);
	_cleanup_free_ char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int r = 0;

	if (!d) {
		close(dfd);
		return vm_error_errno(w->err, errno, "cannot read directory %s",
				      host);
	}
	for (;;) {
		errno = 0;
		e = readdir(d);
		if (!e)
			break;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n == cap) {
			char **nn;

			cap = cap ? 2 * cap : 32;
			nn = realloc(names, cap * sizeof(*names));
			if (!nn) {
				r = -ENOMEM;
				goto out;
			}
			names = nn;
		}
		names[n] = strdup(e->d_name);
		if (!names[n]) {
			r = -ENOMEM;
			goto out;
		}
		n++;
	}
	if (errno) {
		r = vm_error_errno(w->err, errno, "cannot read directory %s",
				   host);
		goto out;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && r == 0; i++)
		r = add_entry(w, dirfd(d), host, dir, names[i]);
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	if (r == -ENOMEM)
		vm_error_set(w->err, ENOMEM, "out of memory reading %s", host);
	return r;
}

/* Names of one host inode (same device and inode) become one image inode. */
static void join_hardlinks(struct walk *w)
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
	r = walk_dir(&w, fd, root, t->root);
	if (r == 0)
		join_hardlinks(&w);
	free(w.links);
	return r;
}

int vm_walk_into(const char *host_dir, struct vm_node *dir,
		 const struct vm_walk_opts *opts, struct vm_tree *t,
		 struct vm_error *err)
{
	struct walk w = { .opts = opts, .t = t, .err = err, .merge_dirs = 1 };
	int fd, r;

	fd = open(host_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return vm_error_errno(err, errno,
				      "cannot open the directory %s", host_dir);
	r = walk_dir(&w, fd, host_dir, dir);
	if (r == 0)
		join_hardlinks(&w);
	free(w.links);
	return r;
}
