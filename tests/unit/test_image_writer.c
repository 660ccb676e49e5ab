// SPDX-License-Identifier: Apache-2.0
/*
 * test_image_writer.c - unit tests of imagebuilder/writer.c on a small
 * tree: the image opens with libext2fs, and a file that vanishes or
 * changes size, or becomes a fifo, between the walk and the write is an
 * error naming it (not a wait for the fifo's writer),
 * whether the files are read inline or by the read-ahead thread; a tree
 * that goes round the read-ahead ring many times, with files of every
 * awkward size, gives the same image bytes either way.
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

#include "common/cleanup.h"
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

/* A fifo in the file's place is refused, not waited on for a writer. */
static void to_fifo(struct fixture *f)
{
	unlink(f->file);
	assert_int_equal(mkfifo(f->file, 0644), 0);
}

static void check_changed(struct fixture *f, void (*change)(struct fixture *),
			  int ahead)
{
	struct vm_error err = { 0 };

	assert_int_equal(write_image(f, change, ahead, &err), -EAGAIN);
	assert_non_null(strstr(err.msg, "data.txt changed"));
}

static void test_changed_file(void **state)
{
	check_changed(*state, grow, 0);
}

static void test_changed_file_read_ahead(void **state)
{
	check_changed(*state, grow, 1);
}

static void test_fifo_in_place(void **state)
{
	check_changed(*state, to_fifo, 0);
}

static void test_fifo_in_place_read_ahead(void **state)
{
	check_changed(*state, to_fifo, 1);
}

/* Byte i of file k: different in every file and every block. */
static char pattern(size_t k, size_t i)
{
	return (char)(k * 131 + i / 4096 * 7 + i % 251);
}

static void write_pattern(const char *path, size_t k, size_t size)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	for (size_t i = 0; i < size; i++)
		fputc(pattern(k, i), fp);
	assert_int_equal(fclose(fp), 0);
}

/* File `name` of the image at `img` holds `size` bytes of pattern k. */
static void assert_image_file(const char *img, const char *name, size_t k,
			      size_t size)
{
	ext2_filsys fs;
	ext2_file_t file;
	ext2_ino_t ino;
	char *buf = malloc(size + 1);
	unsigned int got = 0;

	assert_int_equal(ext2fs_open(img, 0, 0, 0, unix_io_manager, &fs), 0);
	assert_int_equal(
		ext2fs_namei(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, name, &ino), 0);
	assert_int_equal(ext2fs_file_open(fs, ino, 0, &file), 0);
	assert_int_equal(ext2fs_file_read(file, buf, (unsigned)size + 1, &got),
			 0);
	assert_int_equal(got, size);
	for (size_t i = 0; i < size; i++)
		if (buf[i] != pattern(k, i))
			fail_msg("%s: byte %zu differs", name, i);
	ext2fs_file_close(file);
	ext2fs_close_free(&fs);
	free(buf);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "r");
	char *buf;
	long n;

	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	buf = malloc((size_t)n);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

/*
 * Sizes around a block, around the largest file read ahead (the one just
 * over it is streamed by the writer), and small files in between, more
 * than three rings' worth in all: every file lands whole wherever the ring
 * wraps, and the image is the same bytes as when all are read inline.
 */
static void test_read_ahead_wraps_the_ring(void **state)
{
	struct fixture *f = *state;
	const size_t big[] = { 0,
			       1,
			       4095,
			       4096,
			       4097,
			       (1u << 20) + 1,
			       VM_PREFETCH_MAX_FILE - 1,
			       VM_PREFETCH_MAX_FILE,
			       VM_PREFETCH_MAX_FILE + 1,
			       3u << 20 };
	size_t n = 0, total = 0, len_inline, len_ahead;
	struct vm_error err = { 0 };
	char path[PATH_MAX + 32], inline_img[PATH_MAX + 16];
	char *a, *b;

	unlink(f->file);
	while (total < 3 * (VM_PREFETCH_MAX_AHEAD + VM_PREFETCH_MAX_FILE)) {
		size_t size = n % 4 ? 3000 + n * 97 % 20000 :
				      big[n / 4 % ARRAY_SIZE(big)];

		snprintf(path, sizeof(path), "%s/root/f%04zu", f->dir, n);
		write_pattern(path, n, size);
		total += size;
		n++;
	}
	if (write_image(f, NULL, 0, &err) < 0)
		fail_msg("%s", err.msg);
	snprintf(inline_img, sizeof(inline_img), "%s.inline", f->img);
	assert_int_equal(rename(f->img, inline_img), 0);
	fclose(fopen(f->img, "w"));
	if (write_image(f, NULL, 1, &err) < 0)
		fail_msg("%s", err.msg);
	for (size_t k = 0; k < 4 * ARRAY_SIZE(big); k += 4) {
		snprintf(path, sizeof(path), "/f%04zu", k);
		assert_image_file(f->img, path, k, big[k / 4]);
	}
	a = slurp(inline_img, &len_inline);
	b = slurp(f->img, &len_ahead);
	assert_int_equal(len_inline, len_ahead);
	assert_true(memcmp(a, b, len_inline) == 0);
	free(a);
	free(b);
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
		cmocka_unit_test_setup_teardown(test_read_ahead_wraps_the_ring,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_in_place, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fifo_in_place_read_ahead,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
