// SPDX-License-Identifier: Apache-2.0
/*
 * test_setup.c - unit tests of setup's parts that need no root: the link
 * plan (check, apply, idempotence, refusal of real files and foreign
 * links, rollback of everything including created parents), the state
 * file, finding a disk by label in a fake /sys/class/block whose
 * "devices" are files holding an ext4 superblock, and opening the files
 * of a stand-in tools disk never through a symlink (disk_open.h).
 *
 * Also: the mount at a path in mountinfo text (the topmost of two, octal
 * escapes); a link the plan would make through a link into the disk, refused
 * at apply and at check with nothing written in the stand-in for /etc,
 * rollback and removal not going through it either (the guest's own links
 * are followed); 20,000 links: a state file over 1 MiB written, read and
 * undone; the disk's files opened through openat2() and through the walk for
 * older kernels alike (a symlink on the way or at the end, .. above the
 * root, another device refused, a FIFO opened without blocking and refused);
 * vm_setup_observe, what serve --no-setup reports: nothing mounted at a
 * directory named through a symlink (its real path, the error saying to run
 * setup), and /, mounted but without a manifest.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/setup/blockdev.h"
#include "agent/setup/disk_open.h"
#include "agent/setup/safe_path.h"
#include "agent/setup/setup_links.h"
#include "agent/setup/setup_journal.h"
#include "agent/setup/setup_rollback.h"
#include "agent/setup/setup_int.h"
#include "agent/setup/setup_state.h"

static char base[64];
/* The "mountpoint" of these tests, and the guard of walks to guest paths. */
static char mnt[96];
static struct vm_guard guard = { .owner = mnt };

static int setup_dir(void **state)
{
	strcpy(base, "/tmp/vmtools-setup-XXXXXX");
	if (!mkdtemp(base))
		return -1;
	snprintf(mnt, sizeof(mnt), "%s/mnt", base);
	return 0;
}

static int teardown_dir(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

static char *P(const char *rel)
{
	static char bufs[8][256];
	static int i;
	char *b = bufs[i++ % 8];

	snprintf(b, 256, "%s/%s", base, rel);
	return b;
}

static char *readlink_str(const char *path)
{
	static char buf[512];
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);

	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

static void test_path_is_under(void **state)
{
	assert_true(vm_path_is_under("/run/vm-tools/lib", "/run/vm-tools"));
	assert_true(vm_path_is_under("/run/vm-tools", "/run/vm-tools/"));
	assert_false(vm_path_is_under("/run/vm-tools2/lib", "/run/vm-tools"));
	assert_false(vm_path_is_under("/usr/lib", "/run/vm-tools"));
}

/* The guest: mnt (the "image"), root/ where links go. */
static void make_guest(void)
{
	assert_int_equal(mkdir(P("mnt"), 0755), 0);
	assert_int_equal(mkdir(P("mnt/lib"), 0755), 0);
	assert_int_equal(mkdir(P("root"), 0755), 0);
}

static void test_create_idempotent_and_rollback(void **state)
{
	struct vm_link_plan p = { 0 };
	struct vm_journal j = { .guard = { .owner = mnt } };
	struct vm_error err = { 0 };
	struct stat st;

	make_guest();
	vm_link_plan_add(&p, P("root/lib/modules/6.1"), P("mnt/lib"), false);
	vm_link_plan_add(&p, P("root/bin/perf"), P("mnt/perf"), false);
	/* The same path twice: the first entry wins. */
	vm_link_plan_add(&p, P("root/bin/perf"), P("mnt/other"), false);
	assert_int_equal(p.n, 2);

	assert_int_equal(vm_links_check(&p, &guard, &err), 0);
	assert_int_equal(p.links[0].state, VM_LINK_ABSENT);
	assert_int_equal(vm_links_apply(&p, &j, &err), 0);
	assert_string_equal(readlink_str(P("root/lib/modules/6.1")),
			    P("mnt/lib"));
	assert_string_equal(readlink_str(P("root/bin/perf")), P("mnt/perf"));
	/* root/lib, root/lib/modules, root/bin created; two links. */
	assert_int_equal(j.n, 5);
	assert_int_equal(j.changes[0].kind, VM_CHANGE_MKDIR);
	assert_string_equal(j.changes[0].path, P("root/lib"));

	/* Second look: everything present, nothing to apply. */
	{
		struct vm_journal j2 = { .guard = { .owner = mnt } };

		assert_int_equal(vm_links_check(&p, &guard, &err), 0);
		assert_int_equal(p.links[0].state, VM_LINK_PRESENT);
		assert_int_equal(p.links[1].state, VM_LINK_PRESENT);
		assert_int_equal(vm_links_apply(&p, &j2, &err), 0);
		assert_int_equal(j2.n, 0);
	}

	/* Rolling back removes links and the directories it made. */
	assert_int_equal(vm_journal_rollback(&j, &err), 0);
	assert_int_equal(lstat(P("root/lib"), &st), -1);
	assert_int_equal(lstat(P("root/bin"), &st), -1);
	assert_int_equal(lstat(P("root"), &st), 0);
	vm_link_plan_clear(&p);
}

static void test_refuses_real_dir_and_foreign_link(void **state)
{
	struct vm_link_plan p = { 0 };
	struct vm_journal j = { .guard = { .owner = mnt } };
	struct vm_error err = { 0 };

	make_guest();
	assert_int_equal(mkdir(P("root/modules"), 0755), 0);
	assert_int_equal(symlink("/usr/lib/elsewhere", P("root/foreign")), 0);
	assert_int_equal(close(creat(P("root/file"), 0644)), 0);
	vm_link_plan_add(&p, P("root/ok"), P("mnt/lib"), false);
	vm_link_plan_add(&p, P("root/modules"), P("mnt/lib"), false);
	vm_link_plan_add(&p, P("root/foreign"), P("mnt/lib"), false);
	vm_link_plan_add(&p, P("root/file/below"), P("mnt/lib"), false);

	assert_int_equal(vm_links_check(&p, &guard, &err), -EEXIST);
	/* Every blocked path is named, and nothing was touched. */
	assert_non_null(strstr(err.msg, "root/modules is a real directory"));
	assert_non_null(strstr(
		err.msg, "root/foreign is a symlink to /usr/lib/elsewhere"));
	assert_non_null(strstr(err.msg, "root/file, a parent of"));
	assert_non_null(strstr(err.msg, "is a real file"));
	assert_int_equal(p.links[0].state, VM_LINK_ABSENT);
	assert_null(readlink_str(P("root/ok")));
	assert_string_equal(readlink_str(P("root/foreign")),
			    "/usr/lib/elsewhere");
	assert_int_equal(j.n, 0);
	vm_link_plan_clear(&p);
}

static void test_optional_blocked_is_skipped(void **state)
{
	struct vm_link_plan p = { 0 };
	struct vm_journal j = { .guard = { .owner = mnt } };
	struct vm_error err = { 0 };

	make_guest();
	assert_int_equal(mkdir(P("root/running"), 0755), 0);
	vm_link_plan_add(&p, P("root/running"), P("mnt/lib"), true);
	vm_link_plan_add(&p, P("root/image"), P("mnt/lib"), false);
	assert_int_equal(vm_links_check(&p, &guard, &err), 0);
	assert_int_equal(p.links[0].state, VM_LINK_BLOCKED);
	assert_int_equal(vm_links_apply(&p, &j, &err), 0);
	assert_int_equal(j.n, 1);
	assert_string_equal(readlink_str(P("root/image")), P("mnt/lib"));
	vm_journal_clear(&j);
	vm_link_plan_clear(&p);
}

static void test_stale_link_retargeted_and_restored(void **state)
{
	struct vm_link_plan p = { 0 };
	struct vm_journal j = { .guard = { .owner = mnt } };
	struct vm_error err = { 0 };

	make_guest();
	/* Ours (into the mountpoint), from an older image: dangling. */
	assert_int_equal(symlink(P("mnt/lib/modules/6.1.0-1"), P("root/m")), 0);
	vm_link_plan_add(&p, P("root/m"), P("mnt/lib"), false);
	assert_int_equal(vm_links_check(&p, &guard, &err), 0);
	assert_int_equal(p.links[0].state, VM_LINK_STALE);
	assert_int_equal(vm_links_apply(&p, &j, &err), 0);
	assert_string_equal(readlink_str(P("root/m")), P("mnt/lib"));
	assert_int_equal(vm_journal_rollback(&j, &err), 0);
	assert_string_equal(readlink_str(P("root/m")),
			    P("mnt/lib/modules/6.1.0-1"));
	vm_link_plan_clear(&p);
}

static void test_apply_failure_is_rolled_back(void **state)
{
	struct vm_link_plan p = { 0 };
	struct vm_journal j = { .guard = { .owner = mnt } };
	struct vm_error err = { 0 };
	struct stat st;

	make_guest();
	assert_int_equal(mkdir(P("root/ro"), 0555), 0);
	vm_link_plan_add(&p, P("root/new/a"), P("mnt/lib"), false);
	vm_link_plan_add(&p, P("root/ro/b"), P("mnt/lib"), false);
	assert_int_equal(vm_links_check(&p, &guard, &err), 0);
	if (geteuid() == 0) {
		/* root writes into 0555 directories: simulate with a file
		 * appearing between check and apply instead. */
		assert_int_equal(close(creat(P("root/ro/b"), 0644)), 0);
	}
	assert_true(vm_links_apply(&p, &j, &err) < 0);
	assert_non_null(strstr(err.msg, "root/ro/b"));
	assert_int_equal(vm_journal_rollback(&j, NULL), 0);
	assert_int_equal(lstat(P("root/new"), &st), -1);
	vm_link_plan_clear(&p);
}

static void test_state_roundtrip_and_merge(void **state)
{
	struct vm_setup_state s = { 0 }, t = { 0 };
	struct vm_journal j = { .guard = { .owner = mnt } };
	struct vm_error err = { 0 };

	assert_int_equal(vm_setup_state_load(P("none.json"), &s, &err),
			 -ENOENT);
	s.mountpoint = strdup("/run/vm-tools");
	vm_journal_add(&j, VM_CHANGE_MKDIR, "/run/vm-tools", NULL, NULL);
	vm_journal_add(&j, VM_CHANGE_MOUNT, "/run/vm-tools", "/dev/vdb", NULL);
	vm_journal_add(&j, VM_CHANGE_MKDIR, "/lib/modules", NULL, NULL);
	vm_journal_add(&j, VM_CHANGE_SYMLINK, "/lib/modules/6.1",
		       "/run/vm-tools/lib/modules/6.1", NULL);
	vm_journal_add(&j, VM_CHANGE_SYMLINK, "/usr/local/bin/perf",
		       "/run/vm-tools/bin/perf", NULL);
	vm_journal_add(&j, VM_CHANGE_UNLINK, "/usr/local/bin/perf", NULL,
		       "/run/vm-tools/bin/perf");
	assert_int_equal(vm_setup_state_merge(&s, &j), 0);
	assert_true(s.created_mountpoint);
	assert_true(s.mounted);
	assert_int_equal(s.n_dirs, 1);
	assert_int_equal(s.n_links, 1);
	s.device = strdup("/dev/vdb");
	assert_int_equal(vm_setup_state_save(P("state.json"), &s, &err), 0);
	assert_int_equal(vm_setup_state_load(P("state.json"), &t, &err), 0);
	assert_string_equal(t.device, "/dev/vdb");
	assert_string_equal(t.mountpoint, "/run/vm-tools");
	assert_true(t.mounted && t.created_mountpoint);
	assert_string_equal(t.dirs[0], "/lib/modules");
	assert_string_equal(t.links[0].path, "/lib/modules/6.1");
	assert_string_equal(t.links[0].target, "/run/vm-tools/lib/modules/6.1");
	vm_setup_state_clear(&t);
	vm_setup_state_clear(&s);
	vm_journal_clear(&j);

	/* A damaged file is reported, naming it. */
	{
		FILE *f = fopen(P("bad.json"), "w");

		fputs("{\"mountpoint\": 5}", f);
		fclose(f);
	}
	assert_int_equal(vm_setup_state_load(P("bad.json"), &t, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "bad.json is damaged"));
}

/* A file holding just an ext4 superblock with the given label. */
static void write_fake_ext4(const char *path, const char *label)
{
	unsigned char b[4096] = { 0 }, *sb = b + 1024;
	FILE *f = fopen(path, "w");
	uint32_t v;
	uint16_t magic = 0xEF53;

	v = 16, memcpy(sb + 0x0, &v, 4); /* inodes */
	v = 64, memcpy(sb + 0x4, &v, 4); /* blocks */
	v = 8192, memcpy(sb + 0x20, &v, 4); /* blocks per group */
	v = 16, memcpy(sb + 0x28, &v, 4); /* inodes per group */
	memcpy(sb + 0x38, &magic, 2);
	v = 1, memcpy(sb + 0x4c, &v, 4); /* dynamic revision */
	v = 0x40, memcpy(sb + 0x60, &v, 4); /* extents: ext4 */
	strncpy((char *)sb + 0x78, label, 16);
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, sizeof(b), f), sizeof(b));
	fclose(f);
}

static void fake_device(const char *name, const char *label, int size)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/sys/%s", base, name);
	assert_int_equal(mkdir(path, 0755), 0);
	strcat(path, "/size");
	f = fopen(path, "w");
	fprintf(f, "%d\n", size);
	fclose(f);
	snprintf(path, sizeof(path), "%s/dev/%s", base, name);
	if (label)
		write_fake_ext4(path, label);
	else
		assert_int_equal(close(creat(path, 0644)), 0);
}

static void test_find_by_label(void **state)
{
	struct vm_blockdev_list l = { 0 };
	struct vm_error err = { 0 };
	char *label, *type;

	assert_int_equal(mkdir(P("sys"), 0755), 0);
	assert_int_equal(mkdir(P("dev"), 0755), 0);
	fake_device("vda", "rootfs", 8);
	fake_device("vdb", "vm-tools", 8);
	fake_device("vdc", NULL, 8); /* no filesystem */
	fake_device("loop0", "vm-tools", 0); /* size 0: never opened */
	assert_int_equal(vm_blockdev_probe(P("dev/vdb"), &label, &type, &err),
			 0);
	assert_string_equal(label, "vm-tools");
	assert_string_equal(type, "ext4");
	free(label);
	free(type);
	assert_int_equal(vm_blockdev_probe(P("dev/vdc"), &label, &type, &err),
			 -ENODATA);

	assert_int_equal(vm_blockdev_find_label(P("sys"), P("dev"), "vm-tools",
						&l, &err),
			 0);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.paths[0], P("dev/vdb"));
	vm_blockdev_list_clear(&l);

	fake_device("vdd", "vm-tools", 8);
	assert_int_equal(vm_blockdev_find_label(P("sys"), P("dev"), "vm-tools",
						&l, &err),
			 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.paths[1], P("dev/vdd"));
	vm_blockdev_list_clear(&l);

	assert_int_equal(vm_blockdev_find_label(P("sys"), P("dev"), "other", &l,
						&err),
			 0);
	assert_int_equal(l.n, 0);
	vm_error_clear(&err);
	assert_int_equal(vm_blockdev_find_label(P("nosys"), P("dev"), "x", &l,
						&err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "nosys"));
}

static void test_mountinfo_find(void **state)
{
	static const char text[] =
		"22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
		"40 22 7:3 / /run/vm\\040tools ro,nodev,nosuid - ext4 /dev/loop3 ro\n"
		"41 22 7:4 / /run/vm-tools ro - ext4 /dev/loop4 ro\n"
		"42 41 7:5 / /run/vm-tools ro - ext4 /dev/loop5 ro\n"
		"garbage line\n";
	dev_t dev = 0;

	/* The topmost of two mounts at the same place wins. */
	assert_int_equal(vm_mountinfo_find(text, "/run/vm-tools", &dev), 1);
	assert_int_equal(major(dev), 7);
	assert_int_equal(minor(dev), 5);
	/* Octal escapes in mount points are decoded. */
	assert_int_equal(vm_mountinfo_find(text, "/run/vm tools", &dev), 1);
	assert_int_equal(minor(dev), 3);
	assert_int_equal(vm_mountinfo_find(text, "/run", &dev), 0);
	assert_int_equal(vm_mountinfo_find("", "/", &dev), 0);
}

/*
 * The disk's tree has lib/modules/R/cfg -> etc (standing in for /etc) and
 * the manifest asks for lib/modules/R and lib/modules/R/cfg/x: the second
 * would be made through the first, a link into the disk.  Refused, rolled
 * back, and nothing appears in etc; rollback and undo do not remove
 * through such a link either.
 */
/*
 * A path safe_path.h refuses as written is refused before the walk makes
 * any directory: a ".." on the way, a name too long, no name at the end.
 */
static void test_safe_parent_refuses_paths(void **state)
{
	struct vm_journal j = { .guard = { .owner = mnt } };
	struct vm_error err = { 0 };
	const char *last;
	char path[512], name[300];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/made/../x", base);
	assert_int_equal(vm_safe_parent(path, &j.guard, &j, &last, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "cannot be used as a path"));
	assert_int_equal(lstat(P("made"), &st), -1);
	assert_int_equal(j.n, 0);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(path, sizeof(path), "%s/made/%.*s/x", base, 256, name);
	assert_int_equal(vm_safe_parent(path, &j.guard, &j, &last, &err),
			 -EINVAL);
	assert_int_equal(lstat(P("made"), &st), -1);
	snprintf(path, sizeof(path), "%s/made/..", base);
	vm_error_clear(&err);
	assert_int_equal(vm_safe_parent(path, &j.guard, &j, &last, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "does not end in a name"));
	assert_int_equal(lstat(P("made"), &st), -1);
	/* A plain path is walked, its missing directory made. */
	snprintf(path, sizeof(path), "%s/made/x", base);
	fd = vm_safe_parent(path, &j.guard, &j, &last, &err);
	assert_true(fd >= 0);
	close(fd);
	assert_string_equal(last, "x");
	assert_int_equal(lstat(P("made"), &st), 0);
	assert_int_equal(j.n, 1);
	vm_journal_clear(&j);
}

static void test_never_through_a_link_into_the_disk(void **state)
{
	struct vm_link_plan p = { 0 };
	struct vm_journal j = { .guard = { .owner = mnt } };
	struct vm_error err = { 0 };
	struct stat st;
	DIR *d;
	int entries = 0;

	make_guest();
	assert_int_equal(mkdir(P("etc"), 0755), 0);
	assert_int_equal(mkdir(P("mnt/lib/modules"), 0755), 0);
	assert_int_equal(mkdir(P("mnt/lib/modules/R"), 0755), 0);
	assert_int_equal(symlink(P("etc"), P("mnt/lib/modules/R/cfg")), 0);
	vm_link_plan_add(&p, P("root/lib/modules/R"), P("mnt/lib/modules/R"),
			 false);
	vm_link_plan_add(&p, P("root/lib/modules/R/cfg/x"), P("mnt/x"), false);
	assert_int_equal(vm_links_check(&p, &guard, &err), 0);
	assert_true(vm_links_apply(&p, &j, &err) < 0);
	assert_non_null(strstr(err.msg, "is a link into the tools disk"));
	assert_int_equal(vm_journal_rollback(&j, NULL), 0);
	assert_int_equal(lstat(P("root/lib"), &st), -1);
	d = opendir(P("etc"));
	assert_non_null(d);
	while (readdir(d))
		entries++;
	closedir(d);
	assert_int_equal(entries, 2); /* . and .. */

	/* The link of an earlier run in place: the check refuses first. */
	assert_int_equal(mkdir(P("root/lib"), 0755), 0);
	assert_int_equal(mkdir(P("root/lib/modules"), 0755), 0);
	assert_int_equal(
		symlink(P("mnt/lib/modules/R"), P("root/lib/modules/R")), 0);
	vm_error_clear(&err);
	assert_int_equal(vm_links_check(&p, &guard, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "root/lib/modules/R is a link into"));
	vm_link_plan_clear(&p);

	/* Removing: a link that looks like ours, behind the disk's link. */
	assert_int_equal(symlink(P("mnt/y"), P("etc/y")), 0);
	assert_int_equal(mkdir(P("etc/sub"), 0755), 0);
	assert_true(vm_safe_unlink_link(P("root/lib/modules/R/cfg/y"),
					P("mnt/y"), &guard, NULL) < 0);
	assert_true(vm_safe_rmdir(P("root/lib/modules/R/cfg/sub"), &guard,
				  NULL) < 0);
	assert_int_equal(vm_journal_add(&j, VM_CHANGE_SYMLINK,
					P("root/lib/modules/R/cfg/y"),
					P("mnt/y"), NULL),
			 0);
	assert_true(vm_journal_rollback(&j, NULL) < 0);
	assert_string_equal(readlink_str(P("etc/y")), P("mnt/y"));
	assert_int_equal(lstat(P("etc/sub"), &st), 0);
	/* The guest's own links are followed: root/l -> lib. */
	assert_int_equal(symlink("lib", P("root/l")), 0);
	assert_int_equal(vm_safe_symlink(P("mnt/z"), P("root/l/modules/z"),
					 &guard, NULL),
			 0);
	assert_string_equal(readlink_str(P("root/lib/modules/z")), P("mnt/z"));
}

/*
 * 20,000 links: a state file over the old 1 MiB limit is written, read
 * back, and --undo removes every link.
 */
static void test_many_links_state_and_undo(void **state)
{
	struct vm_setup_options o = { .mountpoint = mnt };
	struct vm_setup_state s = { 0 }, t = { 0 };
	struct vm_link_plan p = { 0 };
	struct vm_journal j = { .guard = { .owner = mnt } };
	struct vm_setup_result res = { 0 };
	struct vm_error err = { 0 };
	char path[256], target[256], sf[256];
	struct stat st;
	const int n = 20000;

	make_guest();
	snprintf(sf, sizeof(sf), "%s", P("state.json"));
	o.state_file = sf;
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/lib/vmtools/d%d/link-%06d",
			 P("root"), i % 100, i);
		snprintf(target, sizeof(target),
			 "%s/lib/a-longer-target-name-%06d", mnt, i);
		assert_int_equal(vm_link_plan_add(&p, path, target, false), 0);
	}
	/* Duplicates are still ignored. */
	assert_int_equal(vm_link_plan_add(&p, path, "/elsewhere", false), 0);
	assert_int_equal(p.n, n);
	assert_int_equal(vm_links_check(&p, &guard, &err), 0);
	assert_int_equal(vm_links_apply(&p, &j, &err), 0);
	s.mountpoint = strdup(mnt);
	assert_int_equal(vm_setup_state_merge(&s, &j), 0);
	assert_int_equal(s.n_links, n);
	assert_int_equal(vm_setup_state_save(sf, &s, &err), 0);
	assert_int_equal(stat(sf, &st), 0);
	assert_true(st.st_size > (1 << 20));
	assert_int_equal(vm_setup_state_load(sf, &t, &err), 0);
	assert_int_equal(t.n_links, n);
	assert_string_equal(t.links[n - 1].path, path);
	vm_setup_state_clear(&t);
	vm_setup_state_clear(&s);
	vm_journal_clear(&j);
	vm_link_plan_clear(&p);

	assert_int_equal(vm_setup_undo(&o, &res, &err), 0);
	assert_int_equal(lstat(path, &st), -1);
	assert_int_equal(lstat(P("root/lib"), &st), -1);
	assert_int_equal(lstat(sf, &st), -1);
	/* No lock file is left beside the state file. */
	assert_int_equal(lstat(P("state.json.lock"), &st), -1);
	vm_setup_result_clear(&res);
}

/*
 * disk_open.h on a tree standing in for the tools disk (the temp dir's
 * filesystem is "the disk"), through openat2() and through the walk for
 * kernels without it: both give the same answers.
 */
static void test_disk_open(void **state)
{
	int root, fd;
	const char *why;
	struct stat st;
	char buf[8];

	assert_int_equal(mkdir(P("disk"), 0755), 0);
	assert_int_equal(mkdir(P("disk/d"), 0755), 0);
	assert_int_equal(mkdir(P("disk/d/e"), 0755), 0);
	fd = open(P("disk/d/e/f"), O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "ok", 2), 2);
	close(fd);
	assert_int_equal(symlink("/proc", P("disk/x")), 0);
	assert_int_equal(symlink("d", P("disk/in")), 0);
	assert_int_equal(symlink("e/f", P("disk/d/lf")), 0);
	assert_int_equal(mkfifo(P("disk/d/fifo"), 0644), 0);
	root = open(P("disk"), O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root >= 0);
	assert_int_equal(fstat(root, &st), 0);

	for (int walk = 0; walk < 2; walk++) {
		/* A regular file, read from the fd. */
		fd = vm_disk_open(root, st.st_dev, "/d/e/f", O_RDONLY, walk);
		assert_true(fd >= 0);
		assert_int_equal(read(fd, buf, sizeof(buf)), 2);
		close(fd);
		assert_int_equal(vm_disk_open(root, st.st_dev, "//d//e/f",
					      O_RDONLY, walk) >= 0,
				 1);
		/* Through a symlink, out of the disk or within it: refused. */
		assert_int_equal(vm_disk_open(root, st.st_dev, "/x/kmsg",
					      O_RDONLY | O_NONBLOCK, walk),
				 -ELOOP);
		assert_int_equal(vm_disk_open(root, st.st_dev, "/in/e/f",
					      O_RDONLY, walk),
				 -ELOOP);
		assert_int_equal(vm_disk_open(root, st.st_dev, "/d/lf",
					      O_RDONLY, walk),
				 -ELOOP);
		assert_int_equal(vm_disk_open(root, st.st_dev,
					      "/d/../../etc/passwd", O_RDONLY,
					      walk),
				 -EXDEV);
		assert_int_equal(vm_disk_open(root, st.st_dev, "/d/nope",
					      O_RDONLY, walk),
				 -ENOENT);
		assert_int_equal(vm_disk_open(root, st.st_dev, "/d/e/f/g",
					      O_RDONLY, walk),
				 -ENOTDIR);
	}
	/* The walk checks every directory's device is the disk's. */
	assert_int_equal(vm_disk_open(root, st.st_dev + 1, "/d/e/f", O_RDONLY,
				      true),
			 -EXDEV);

	/* What setup --verify says of each (a FIFO opens, not blocking). */
	fd = vm_disk_open_file(root, st.st_dev, "/d/e/f", &why);
	assert_true(fd >= 0);
	close(fd);
	assert_true(vm_disk_open_file(root, st.st_dev, "/x/kmsg", &why) < 0);
	assert_string_equal(why, "leads out of the disk through a symlink");
	assert_true(vm_disk_open_file(root, st.st_dev, "/d/lf", &why) < 0);
	assert_string_equal(why, "is a symlink");
	assert_true(vm_disk_open_file(root, st.st_dev, "/d/fifo", &why) < 0);
	assert_string_equal(why, "is not a regular file");
	assert_true(vm_disk_open_file(root, st.st_dev, "/d/e", &why) < 0);
	assert_string_equal(why, "is not a regular file");
	assert_true(vm_disk_open_file(root, st.st_dev, "/d/nope", &why) < 0);
	assert_string_equal(why, "is missing");
	close(root);
}

/*
 * vm_setup_observe changes nothing and says what is mounted: nothing at a
 * plain directory (named through a symlink, reported by its real path);
 * at / something is mounted, without a manifest.
 */
static void test_observe(void **state)
{
	struct vm_setup_options o = { .mountpoint = P("link") };
	struct vm_setup_result res = { 0 };
	struct vm_error err = { 0 };
	char real[PATH_MAX];

	assert_int_equal(mkdir(mnt, 0755), 0);
	assert_int_equal(symlink(mnt, P("link")), 0);
	assert_non_null(realpath(mnt, real));
	assert_int_equal(vm_setup_observe(&o, &res, &err), -ENODEV);
	assert_false(res.mounted);
	assert_string_equal(res.mountpoint, real);
	assert_non_null(strstr(vm_error_str(&err), real));
	assert_non_null(strstr(vm_error_str(&err), "vmtools-agent setup"));
	vm_setup_result_clear(&res);

	o.mountpoint = "/";
	err = (struct vm_error){ 0 };
	memset(&res, 0, sizeof(res));
	assert_true(vm_setup_observe(&o, &res, &err) < 0);
	assert_true(res.mounted);
	assert_false(res.release_match);
	assert_non_null(strstr(vm_error_str(&err), "manifest"));
	vm_setup_result_clear(&res);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_dir, teardown_dir)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_is_under),
		cmocka_unit_test(test_mountinfo_find),
		T(test_create_idempotent_and_rollback),
		T(test_refuses_real_dir_and_foreign_link),
		T(test_optional_blocked_is_skipped),
		T(test_stale_link_retargeted_and_restored),
		T(test_apply_failure_is_rolled_back),
		T(test_state_roundtrip_and_merge),
		T(test_find_by_label),
		T(test_safe_parent_refuses_paths),
		T(test_never_through_a_link_into_the_disk),
		T(test_many_links_state_and_undo),
		T(test_disk_open),
		T(test_observe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
