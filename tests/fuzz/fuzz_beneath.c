// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_beneath.c - libFuzzer target for common/beneath.h's opener.  The
 * input's first byte picks the open flags (and VM_BENEATH_NO_XDEV), the
 * rest is a path, opened below a hostile tree made once in /tmp: symlinks
 * to a file and a directory outside it, an absolute one, one in the
 * middle of a path, a FIFO, a device when made as root.  Beyond not
 * crashing: openat2() and the walk give the same answer, and a file
 * opened is always one of the tree's own (never outside it, never through
 * a symlink), and opening never waits (a FIFO is opened non-blocking).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/beneath.h"

#define MAX_INODES 64

static char base[64];
static int root = -1;
/* The tree's own files, directories and links (not what they point at). */
static struct {
	dev_t dev;
	ino_t ino;
} inodes[MAX_INODES];
static size_t n_inodes;

static int note(const char *path, const struct stat *st, int type,
		struct FTW *f)
{
	(void)path;
	(void)type;
	(void)f;
	if (n_inodes < MAX_INODES) {
		inodes[n_inodes].dev = st->st_dev;
		inodes[n_inodes++].ino = st->st_ino;
	}
	return 0;
}

static int drop(const char *path, const struct stat *st, int type,
		struct FTW *f)
{
	(void)st;
	(void)type;
	(void)f;
	remove(path);
	return 0;
}

static void remove_tree(void)
{
	if (base[0])
		nftw(base, drop, 16, FTW_DEPTH | FTW_PHYS);
}

static void make(const char *rel, int kind)
{
	char p[128];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	if (kind == 'd') {
		mkdir(p, 0755);
	} else if (kind == 'f') {
		fd = open(p, O_WRONLY | O_CREAT, 0644);
		if (fd >= 0)
			close(fd);
	} else if (kind == 'p') {
		mkfifo(p, 0644);
	} else if (kind == 'c') {
		mknod(p, S_IFCHR | 0644, makedev(1, 3)); /* root only */
	}
}

static void link_to(const char *target, const char *rel)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	if (symlink(target, p) < 0)
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char t[96];

	(void)argc;
	(void)argv;
	strcpy(base, "/tmp/vmtools-fuzz-beneath-XXXXXX");
	if (!mkdtemp(base))
		abort();
	atexit(remove_tree);
	make("out", 'd');
	make("out/secret", 'f');
	make("out/dir", 'd');
	make("out/dir/x", 'f');
	make("t", 'd');
	make("t/d", 'd');
	make("t/d/f", 'f');
	make("t/d/e", 'd');
	make("t/d/e/g", 'f');
	make("t/fifo", 'p');
	make("t/dev", 'c');
	link_to("../out/secret", "t/lf");
	link_to("../out/dir", "t/ld");
	link_to("/etc", "t/labs");
	link_to("d", "t/in");
	link_to("f", "t/d/lf");
	link_to("e/../f", "t/d/ldot");
	snprintf(t, sizeof(t), "%s/t", base);
	if (nftw(t, note, 16, FTW_PHYS) < 0)
		abort();
	root = open(t, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		abort();
	return 0;
}

static const int flag_choices[] = {
	O_PATH,
	O_RDONLY | O_NONBLOCK,
	O_PATH | O_DIRECTORY,
	O_RDONLY | O_NONBLOCK | O_DIRECTORY,
};

static bool in_tree(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return false;
	for (size_t i = 0; i < n_inodes; i++)
		if (inodes[i].dev == st.st_dev && inodes[i].ino == st.st_ino)
			return true;
	return false;
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[PATH_MAX + 64];
	unsigned how;
	int flags, a, b;

	if (size < 1 || size - 1 >= sizeof(path))
		return 0;
	flags = flag_choices[data[0] & 3];
	how = data[0] & 4 ? VM_BENEATH_NO_XDEV : 0;
	memcpy(path, data + 1, size - 1);
	path[size - 1] = '\0';

	a = vm_open_beneath(root, path, flags, how);
	b = vm_open_beneath(root, path, flags, how | VM_BENEATH_WALK);
	if ((a < 0 || b < 0) && a != b) {
		fprintf(stderr, "\"%s\" flags %#x: openat2 %d, walk %d\n", path,
			(unsigned)flags, a, b);
		abort();
	}
	if (a >= 0) {
		if (!same_file(a, b) || !in_tree(a)) {
			fprintf(stderr, "\"%s\": %s\n", path,
				same_file(a, b) ? "opened outside the tree" :
						  "two different files");
			abort();
		}
		close(a);
		close(b);
	}
	/* The regular-file opener: only d/f and d/e/g qualify. */
	a = vm_open_beneath_regular(root, path, how);
	if (a >= 0) {
		if (!in_tree(a))
			abort();
		close(a);
	}
	return 0;
}
