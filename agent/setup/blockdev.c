// SPDX-License-Identifier: Apache-2.0
/*
 * blockdev.c - reads the superblock of every block device the kernel lists
 * in /sys/class/block (disks and partitions, loop devices included) with
 * libblkid, and keeps those with an ext2/3/4 filesystem of the wanted label.
 * Devices of size 0 (empty loop devices, drives without media) are not
 * opened at all.
 */
#include "agent/setup/blockdev.h"

#include <blkid.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/cleanup.h"

void vm_blockdev_list_clear(struct vm_blockdev_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->paths[i]);
	free(l->paths);
	l->paths = NULL;
	l->n = l->cap = 0;
}

static void blkid_probep(blkid_probe *pr)
{
	if (*pr)
		blkid_free_probe(*pr);
}

int vm_blockdev_probe(const char *path, char **label, char **type,
		      struct vm_error *err)
{
	blkid_probe pr __attribute__((cleanup(blkid_probep))) = NULL;
	const char *val;
	int r;

	*label = *type = NULL;
	errno = 0;
	pr = blkid_new_probe_from_filename(path);
	if (!pr)
		return vm_error_errno(err, errno ? errno : EIO,
				      "cannot open %s to read its superblock",
				      path);
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_LABEL |
						      BLKID_SUBLKS_TYPE);
	/* Only filesystems: a partition table is not what we look for. */
	blkid_probe_enable_partitions(pr, 0);
	r = blkid_do_safeprobe(pr);
	if (r == -2)
		return vm_error_set(
			err, ENODATA,
			"%s carries signatures of more than one filesystem; wipe the stale one (wipefs)",
			path);
	if (r < 0)
		return vm_error_errno(err, errno ? errno : EIO,
				      "cannot read the superblock of %s", path);
	if (r == 1 || blkid_probe_lookup_value(pr, "TYPE", &val, NULL) < 0)
		return vm_error_set(err, ENODATA, "%s holds no filesystem",
				    path);
	*type = strdup(val);
	if (blkid_probe_lookup_value(pr, "LABEL", &val, NULL) < 0)
		val = "";
	*label = strdup(val);
	if (!*type || !*label) {
		free(*type);
		free(*label);
		*label = *type = NULL;
		return vm_error_errno(err, ENOMEM, "cannot probe %s", path);
	}
	return 0;
}

static int is_ext(const char *type)
{
	return !strcmp(type, "ext4") || !strcmp(type, "ext3") ||
	       !strcmp(type, "ext2");
}

/* Size in 512-byte sectors from /sys/class/block/NAME/size; 0 on error. */
static unsigned long long device_sectors(const char *sys_block_dir,
					 const char *name)
{
	_cleanup_free_ char *p = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	unsigned long long n = 0;

	if (asprintf(&p, "%s/%s/size", sys_block_dir, name) < 0)
		return 0;
	f = fopen(p, "re");
	if (!f || fscanf(f, "%llu", &n) != 1)
		return 0;
	return n;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int vm_blockdev_find_label(const char *sys_block_dir, const char *dev_dir,
			   const char *label, struct vm_blockdev_list *out,
			   struct vm_error *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;

	if (!sys_block_dir)
		sys_block_dir = "/sys/class/block";
	if (!dev_dir)
		dev_dir = "/dev";
	out->paths = NULL;
	out->n = out->cap = 0;
	d = opendir(sys_block_dir);
	if (!d)
		return vm_error_errno(err, errno,
				      "cannot list block devices in %s",
				      sys_block_dir);
	while ((de = readdir(d))) {
		_cleanup_free_ char *path = NULL, *fslabel = NULL, *type = NULL;

		if (de->d_name[0] == '.' ||
		    device_sectors(sys_block_dir, de->d_name) == 0)
			continue;
		if (asprintf(&path, "%s/%s", dev_dir, de->d_name) < 0)
			goto nomem;
		/* A device we cannot read is not the tools disk; go on. */
		if (vm_blockdev_probe(path, &fslabel, &type, NULL) < 0)
			continue;
		if (!is_ext(type) || strcmp(fslabel, label))
			continue;
		if (vm_grow(out->paths, &out->cap, out->n + 1) < 0)
			goto nomem;
		out->paths[out->n++] = TAKE_PTR(path);
	}
	if (out->n > 1)
		qsort(out->paths, out->n, sizeof(char *), cmp_str);
	return 0;
nomem:
	vm_blockdev_list_clear(out);
	return vm_error_errno(err, ENOMEM, "cannot list block devices");
}
