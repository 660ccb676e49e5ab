// SPDX-License-Identifier: Apache-2.0
/*
 * test_image_writer.c - unit tests of imagebuilder/writer.c on a small
 * tree: the image opens with libext2fs, and a file that vanishes or
 * changes size between the walk and the write is an error naming it,
 * whether the files are read inline or by the read-ahead thread.
 */
#include <errno.h>
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

#include "imagebuilder/walk.h"
#include "imagebuilder/writer.h"

struct fixture {
	char dir[64];
	char file[PATH_MAX];
	char img[PATH_MAX];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char sub[PATH_MAX];
	FILE *fp;

	strcpy(f->dir, "/tmp/test_image_writer.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(sub, sizeof(sub), "%s/root", f->dir);
	mkdir(sub, 0755);
	snprintf(f->file, sizeof(f->file), "%s/root/data.txt", f->dir);
	fp = fopen(f->file, "w");
	fputs("some data\n", fp);
	fclose(fp);
	snprintf(f->img, sizeof(f->img), "%s/out.img", f->dir);
	fclose(fopen(f->img, "w"));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	free(f);
	return system(cmd) == 0 ? 0 : -1;
}

/* With `ahead`, the files are read by the prefetch thread, else inline. */
static int write_image(struct fixture *f, void (*between)(struct fixture *),
		       int ahead, struct vm_error *err)
{
	struct vm_write_opts o = { .label = "test", .epoch = 1000 };
	struct vm_write_stats st;
	struct vm_tree t;
	char root[PATH_MAX];
	int r;

	snprintf(root, sizeof(root), "%s/root", f->dir);
	assert_int_equal(vm_tree_init(&t), 0);
	assert_int_equal(vm_walk(root, NULL, &t, err), 0);
	if (between)
		between(f);
	if (ahead) {
		vm_writer_prefetch(&t, &o.prefetch);
		assert_non_null(o.prefetch);
	}
	r = vm_writer_write(&t, f->img, &o, &st, err);
	vm_prefetch_stop(o.prefetch);
	vm_tree_free(&t);
	return r;
}

static void check_image(struct fixture *f, int ahead)
{
	struct vm_error err = { 0 };
	ext2_filsys fs;
	ext2_ino_t ino;

	if (write_image(f, NULL, ahead, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(ext2fs_open(f->img, 0, 0, 0, unix_io_manager, &fs), 0);
	assert_int_equal(ext2fs_namei(fs, EXT2_ROOT_INO, EXT2_ROOT_INO,
				      "/data.txt", &ino),
			 0);
	assert_string_equal(fs->super->s_volume_name, "test");
	assert_int_equal(fs->super->s_mkfs_time, 1000);
	assert_false(ext2fs_has_feature_journal(fs->super));
	assert_int_equal(fs->blocksize, 4096);
	ext2fs_close_free(&fs);
}

static void test_writes_an_ext4_image(void **state)
{
	check_image(*state, 0);
}

static void test_writes_an_ext4_image_read_ahead(void **state)
{
	check_image(*state, 1);
}

static void vanish(struct fixture *f)
{
	unlink(f->file);
}

static void grow(struct fixture *f)
{
	FILE *fp = fopen(f->file, "a");

	fputs("more\n", fp);
	fclose(fp);
}

static void check_vanished(struct fixture *f, int ahead)
{
	struct vm_error err = { 0 };

	assert_int_equal(write_image(f, vanish, ahead, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "data.txt vanished"));
}

static void test_vanished_file(void **state)
{
	check_vanished(*state, 0);
}

static void test_vanished_file_read_ahead(void **state)
{
	check_vanished(*state, 1);
}

static void check_changed(struct fixture *f, int ahead)
{
	struct vm_error err = { 0 };

	assert_int_equal(write_image(f, grow, ahead, &err), -EAGAIN);
	assert_non_null(strstr(err.msg, "data.txt changed"));
}

static void test_changed_file(void **state)
{
	check_changed(*state, 0);
}

static void test_changed_file_read_ahead(void **state)
{
	check_changed(*state, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_writes_an_ext4_image,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_vanished_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_changed_file, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_writes_an_ext4_image_read_ahead, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vanished_file_read_ahead,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_changed_file_read_ahead,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
