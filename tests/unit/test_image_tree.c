// SPDX-License-Identifier: Apache-2.0
/*
 * test_image_tree.c - unit tests of the image tree, path and symlink
 * handling (imagebuilder/tree.c, links.c, dirblocks.c, walk.c).
 *
 * Also directory blocks, the htree, holes and hard links; a million-deep
 * tree walked and freed without recursion; a 3,000-level staged chain
 * refused and a 1,900-level one read.
 */
#include <errno.h>
#include <fcntl.h>
#include <ext2fs/ext2_fs.h>
#include <ext2fs/ext2fs.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "imagebuilder/dirblocks.h"
#include "imagebuilder/links.h"
#include "imagebuilder/tree.h"
#include "imagebuilder/walk.h"

static struct vm_node *add(struct vm_tree *t, const char *path,
			   enum vm_node_type type, const char *target)
{
	const char *name = strrchr(path, '/') + 1;
	struct vm_node *n = vm_node_new(name, type, 0644);

	assert_non_null(n);
	if (target)
		n->target = strdup(target);
	assert_int_equal(vm_tree_add(t, path, n, NULL), 0);
	return n;
}

static void test_sorted_insert_and_paths(void **state)
{
	struct vm_tree t;
	struct vm_error err = { 0 };
	struct vm_node *root;
	char *p;

	assert_int_equal(vm_tree_init(&t), 0);
	add(&t, "/usr/src/b", VM_NODE_REG, NULL);
	add(&t, "/usr/src/a", VM_NODE_REG, NULL);
	add(&t, "/usr/src/B", VM_NODE_REG, NULL);
	root = vm_tree_lookup(&t, "/usr/src", 0, NULL);
	assert_non_null(root);
	assert_int_equal(root->n_children, 3);
	/* strcmp order: uppercase first, whatever the locale. */
	assert_string_equal(root->children[0]->name, "B");
	assert_string_equal(root->children[1]->name, "a");
	assert_string_equal(root->children[2]->name, "b");
	p = vm_node_path(root->children[1]);
	assert_string_equal(p, "/usr/src/a");
	free(p);
	p = vm_node_path(t.root);
	assert_string_equal(p, "/");
	free(p);
	/* A taken name is refused with a message naming it. */
	{
		struct vm_node *dup = vm_node_new("a", VM_NODE_REG, 0644);

		assert_int_equal(vm_tree_add(&t, "/usr/src/a", dup, &err),
				 -EEXIST);
		assert_non_null(strstr(err.msg, "/usr/src/a"));
		vm_node_free(dup);
	}
	vm_tree_free(&t);
}

static void test_resolve_symlinks(void **state)
{
	struct vm_tree t;
	struct vm_error err = { 0 };
	struct vm_node *hdr, *out;

	assert_int_equal(vm_tree_init(&t), 0);
	hdr = add(&t, "/usr/src/linux-headers-R/Makefile", VM_NODE_REG, NULL);
	add(&t, "/usr/lib/kbuild/scripts/x", VM_NODE_REG, NULL);
	add(&t, "/lib/modules/R/build", VM_NODE_SYMLINK,
	    "/usr/src/linux-headers-R");
	add(&t, "/usr/src/linux-headers-R/scripts", VM_NODE_SYMLINK,
	    "../../lib/kbuild/scripts");
	add(&t, "/dangling", VM_NODE_SYMLINK, "/etc/nothing");
	assert_int_equal(vm_tree_resolve(&t, t.root,
					 "/lib/modules/R/build/Makefile", &out,
					 &err),
			 0);
	assert_ptr_equal(out, hdr);
	assert_int_equal(vm_tree_resolve(&t, t.root,
					 "lib/modules/R/build/scripts/x", &out,
					 &err),
			 0);
	assert_non_null(out);
	assert_string_equal(out->name, "x");
	assert_int_equal(vm_tree_resolve(&t, t.root, "/dangling", &out, &err),
			 0);
	assert_null(out);
	/* ".." above the root stays at the root, as in the kernel. */
	assert_int_equal(vm_tree_resolve(&t, t.root, "/../../usr", &out, &err),
			 0);
	assert_non_null(out);
	assert_string_equal(out->name, "usr");
	vm_tree_free(&t);
}

static void test_symlink_loops_refused(void **state)
{
	struct vm_tree t;
	struct vm_error err = { 0 };
	struct vm_manifest *m = vm_manifest_new();

	assert_int_equal(vm_tree_init(&t), 0);
	add(&t, "/a", VM_NODE_SYMLINK, "b");
	add(&t, "/b", VM_NODE_SYMLINK, "/a");
	assert_int_equal(vm_links_compute(&t, "R", m, &err), -ELOOP);
	assert_non_null(strstr(err.msg, "symlink loop at /"));
	vm_tree_free(&t);
	vm_error_clear(&err);
	/* A link into itself: self/x -> self. */
	assert_int_equal(vm_tree_init(&t), 0);
	add(&t, "/self", VM_NODE_SYMLINK, "self/x");
	assert_int_equal(vm_links_compute(&t, "R", m, &err), -ELOOP);
	vm_tree_free(&t);
	vm_manifest_free(m);
}

static void test_links_for_the_guest(void **state)
{
	struct vm_tree t;
	struct vm_error err = { 0 };
	struct vm_manifest *m = vm_manifest_new();

	assert_int_equal(vm_tree_init(&t), 0);
	add(&t, "/usr/src/linux-headers-R/Makefile", VM_NODE_REG, NULL);
	add(&t, "/usr/src/linux-headers-R-common/Makefile", VM_NODE_REG, NULL);
	add(&t, "/usr/lib/linux-kbuild-6.1/scripts/x", VM_NODE_REG, NULL);
	add(&t, "/usr/src/linux-kbuild-6.1", VM_NODE_SYMLINK,
	    "../lib/linux-kbuild-6.1");
	add(&t, "/lib/modules/R/build", VM_NODE_SYMLINK,
	    "/usr/src/linux-headers-R");
	add(&t, "/lib/modules/R/source", VM_NODE_SYMLINK,
	    "/usr/src/linux-headers-R-common");
	add(&t, "/usr/src/linux-headers-R-common/scripts", VM_NODE_SYMLINK,
	    "../../lib/linux-kbuild-6.1/scripts");
	add(&t, "/usr/share/doc/x/changelog", VM_NODE_SYMLINK,
	    "/usr/share/doc/y/c");
	assert_int_equal(vm_links_compute(&t, "R", m, &err), 0);
	assert_int_equal(m->n_links, 4);
	assert_string_equal(m->links[0].path, "/lib/modules/R");
	assert_string_equal(m->links[1].path, "/usr/lib/linux-kbuild-6.1");
	assert_string_equal(m->links[2].path, "/usr/src/linux-headers-R");
	assert_string_equal(m->links[3].path,
			    "/usr/src/linux-headers-R-common");
	assert_string_equal(m->links[3].target, m->links[3].path);
	vm_tree_free(&t);
	vm_manifest_free(m);
}

static void test_tree_of_and_normalize(void **state)
{
	char out[PATH_MAX];

	assert_int_equal(vm_link_tree_of("/usr/src/linux-headers-R/include/x.h",
					 out, sizeof(out)),
			 0);
	assert_string_equal(out, "/usr/src/linux-headers-R");
	assert_int_equal(
		vm_link_tree_of("/lib/modules/R/kernel", out, sizeof(out)), 0);
	assert_string_equal(out, "/lib/modules/R");
	assert_int_equal(vm_link_tree_of("/usr/lib/x86_64-linux-gnu/libc.so.6",
					 out, sizeof(out)),
			 0);
	assert_string_equal(out, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	assert_int_equal(vm_link_tree_of("/usr/src", out, sizeof(out)),
			 -ENOENT);
	assert_int_equal(vm_link_normalize("/usr/src/h", "../../lib/k/./s", out,
					   sizeof(out)),
			 0);
	assert_string_equal(out, "/usr/lib/k/s");
	assert_int_equal(
		vm_link_normalize("/a", "../../../..", out, sizeof(out)), 0);
	assert_string_equal(out, "/");
}

static void test_dir_blocks(void **state)
{
	struct vm_tree t;
	struct vm_node *d;
	char name[300];
	char *buf;
	size_t off = 0, count = 0;
	uint64_t blocks;

	assert_int_equal(vm_tree_init(&t), 0);
	d = vm_tree_lookup(&t, "/d", 1, NULL);
	d->ino = 12;
	for (int i = 0; i < 500; i++) {
		struct vm_node *n;

		snprintf(
			name, sizeof(name), "file-%04d-%.*s", i, i % 200,
			"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		n = vm_node_new(name, VM_NODE_REG, 0644);
		n->ino = (uint32_t)(100 + i);
		assert_int_equal(vm_tree_insert(&t, d, n), 0);
	}
	blocks = vm_dir_blocks(d, 4096);
	assert_true(blocks > 1);
	buf = malloc(blocks * 4096);
	assert_int_equal(vm_dir_fill(d, 2, buf, 4096), 0);
	/* Walk the entries: every block is covered exactly, names in order. */
	while (off < blocks * 4096) {
		struct ext2_dir_entry *de =
			(struct ext2_dir_entry *)(buf + off);
		unsigned rec = de->rec_len;

		assert_true(rec >= 12 && rec % 4 == 0);
		assert_true(off / 4096 == (off + rec - 1) / 4096);
		if (count == 0)
			assert_int_equal(ext2fs_dirent_name_len(de), 1);
		if (count >= 2) {
			assert_int_equal(de->inode, 100 + count - 2);
			assert_int_equal(ext2fs_dirent_file_type(de),
					 EXT2_FT_REG_FILE);
		}
		count++;
		off += rec;
	}
	assert_int_equal(count, 502);
	free(buf);
	vm_tree_free(&t);
}

static void test_htree_layout(void **state)
{
	const uint32_t seed[4] = { 1, 2, 3, 4 };
	struct vm_tree t;
	struct vm_node *d;
	struct ext2_dx_countlimit *cl;
	struct ext2_dx_entry *dx;
	char name[64], *buf;
	uint64_t blocks;
	size_t seen = 0;
	int indexed;

	assert_int_equal(vm_tree_init(&t), 0);
	d = vm_tree_lookup(&t, "/include", 1, NULL);
	d->ino = 12;
	for (int i = 0; i < 3000; i++) {
		struct vm_node *n;

		snprintf(name, sizeof(name), "header-%05d.h", i);
		n = vm_node_new(name, VM_NODE_REG, 0644);
		n->ino = (uint32_t)(100 + i);
		assert_int_equal(vm_tree_insert(&t, d, n), 0);
	}
	blocks = vm_dir_layout(d, 4096, seed, &indexed);
	assert_true(indexed);
	assert_true(blocks > 2);
	assert_int_equal(vm_dir_layout(d, 4096, NULL, &indexed),
			 vm_dir_blocks(d, 4096));
	assert_false(indexed);
	buf = malloc(blocks * 4096);
	assert_int_equal(vm_dir_fill_layout(d, 2, seed, buf, 4096), 0);
	cl = (struct ext2_dx_countlimit *)(buf + 32);
	dx = (struct ext2_dx_entry *)cl;
	assert_int_equal(cl->limit, vm_dir_htree_limit(4096));
	assert_int_equal(cl->count, blocks - 1);
	assert_int_equal(((struct ext2_dir_entry *)(buf + 12))->rec_len, 4084);
	/* Every leaf holds hashes in [its dx hash, the next one). */
	for (uint64_t l = 0; l < blocks - 1; l++) {
		uint32_t lo = l ? dx[l].hash & ~1u : 0;
		uint32_t hi = l + 2 < blocks ? dx[l + 1].hash : UINT32_MAX;
		size_t off = 0;

		assert_int_equal(dx[l].block, l + 1);
		while (off < 4096) {
			struct ext2_dir_entry *de =
				(struct ext2_dir_entry *)(buf + (l + 1) * 4096 +
							  off);
			ext2_dirhash_t h, minor;

			assert_int_equal(
				ext2fs_dirhash2(EXT2_HASH_HALF_MD4_UNSIGNED,
						de->name,
						ext2fs_dirent_name_len(de),
						NULL, 0, seed, &h, &minor),
				0);
			assert_true(h >= lo && h <= hi);
			seen++;
			off += de->rec_len;
		}
	}
	assert_int_equal(seen, 3000);
	free(buf);
	vm_tree_free(&t);
}

static void test_walk_holes_and_hardlinks(void **state)
{
	char dir[] = "/tmp/test_image_tree.XXXXXX", path[PATH_MAX],
	     other[PATH_MAX];
	struct vm_tree t;
	struct vm_error err = { 0 };
	struct vm_node *n;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sparse", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fseek(f, 8 << 20, SEEK_SET);
	fputs("end", f);
	fclose(f);
	snprintf(other, sizeof(other), "%s/hard", dir);
	assert_int_equal(link(path, other), 0);
	assert_int_equal(vm_tree_init(&t), 0);
	assert_int_equal(vm_walk(dir, NULL, &t, &err), 0);
	n = vm_node_child(t.root, "sparse");
	assert_non_null(n);
	assert_non_null(n->segs);
	assert_int_equal(n->n_segs, 1);
	assert_int_equal(n->segs[0].off, 8 << 20);
	assert_int_equal(n->segs[0].len, 4096);
	/* "hard" sorts first, so it holds the inode; "sparse" links to it. */
	assert_ptr_equal(n->link_to, vm_node_child(t.root, "hard"));
	assert_int_equal(n->uid, 0);
	vm_tree_free(&t);
	/* A missing root is named in the error. */
	assert_int_equal(vm_tree_init(&t), 0);
	assert_int_equal(vm_walk("/nonexistent-root", NULL, &t, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent-root"));
	vm_tree_free(&t);
	unlink(path);
	unlink(other);
	rmdir(dir);
}

static int count_nodes(struct vm_node *n, void *ctx)
{
	(*(size_t *)ctx)++;
	return 0;
}

/*
 * A chain a million directories deep (more than any stack holds frames
 * for): walked in order and freed without recursion.
 */
static void test_deep_tree_without_recursion(void **state)
{
	struct vm_tree t;
	struct vm_node *dir;
	size_t count = 0;
	const size_t depth = 1000000;

	assert_int_equal(vm_tree_init(&t), 0);
	dir = t.root;
	for (size_t i = 0; i < depth; i++) {
		struct vm_node *n = vm_node_new("d", VM_NODE_DIR, 0755);

		assert_non_null(n);
		assert_int_equal(vm_tree_insert(&t, dir, n), 0);
		if (i == 10) { /* a sibling, reached after the whole chain */
			struct vm_node *e = vm_node_new("e", VM_NODE_REG, 0644);

			assert_int_equal(vm_tree_insert(&t, dir, e), 0);
		}
		dir = n;
	}
	assert_int_equal(vm_tree_walk(t.root, count_nodes, &count), 0);
	assert_int_equal(count, depth + 2);
	vm_tree_free(&t);
}

/*
 * A staged chain deeper than the guest can open is refused with a
 * sentence; one within the limit (1,900 levels) is read whole.
 */
static void test_walk_deep_chain(void **state)
{
	char dir[] = "/tmp/test_image_tree.XXXXXX";
	struct vm_error err = { 0 };
	struct vm_tree t;
	char cmd[PATH_MAX];
	int fd, top;
	size_t count = 0;

	assert_non_null(mkdtemp(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < 3000; i++) {
		int sub;

		assert_int_equal(mkdirat(fd, "d", 0755), 0);
		sub = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		assert_true(sub >= 0);
		close(fd);
		fd = sub;
	}
	close(fd);
	assert_int_equal(vm_tree_init(&t), 0);
	assert_int_equal(vm_walk(dir, NULL, &t, &err), -ENAMETOOLONG);
	assert_non_null(strstr(err.msg, "flatten the staged tree"));
	vm_tree_free(&t);

	/* Move what is below level 1,900 (3,800 bytes of path) to the top. */
	top = open(dir, O_RDONLY | O_DIRECTORY);
	fd = dup(top);
	for (int i = 0; i < 1900; i++) {
		int sub = openat(fd, "d", O_RDONLY | O_DIRECTORY);

		close(fd);
		fd = sub;
	}
	assert_int_equal(renameat(fd, "d", top, "rest"), 0);
	close(fd);
	close(top);
	assert_int_equal(vm_tree_init(&t), 0);
	vm_error_clear(&err);
	assert_int_equal(vm_walk(dir, NULL, &t, &err), 0);
	assert_int_equal(vm_tree_walk(t.root, count_nodes, &count), 0);
	assert_int_equal(count, 3001); /* the root and 3,000 directories */
	vm_tree_free(&t);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sorted_insert_and_paths),
		cmocka_unit_test(test_resolve_symlinks),
		cmocka_unit_test(test_symlink_loops_refused),
		cmocka_unit_test(test_links_for_the_guest),
		cmocka_unit_test(test_tree_of_and_normalize),
		cmocka_unit_test(test_dir_blocks),
		cmocka_unit_test(test_htree_layout),
		cmocka_unit_test(test_walk_holes_and_hardlinks),
		cmocka_unit_test(test_deep_tree_without_recursion),
		cmocka_unit_test(test_walk_deep_chain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
