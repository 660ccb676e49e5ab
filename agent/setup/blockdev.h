/* SPDX-License-Identifier: Apache-2.0 */
/*
 * blockdev.h - finding the tools disk: the block devices under
 * /sys/class/block whose ext2/3/4 superblock carries a given label, read
 * with libblkid (no udev, no /dev/disk/by-label).
 */
#ifndef VMTOOLS_AGENT_BLOCKDEV_H
#define VMTOOLS_AGENT_BLOCKDEV_H

#include <stddef.h>

#include "common/error.h"

struct vm_blockdev_list {
	char **paths; /* "/dev/vdb", in /sys/class/block order (sorted) */
	size_t n, cap;
};

void vm_blockdev_list_clear(struct vm_blockdev_list *l);

/*
 * Every device of sys_block_dir (NULL: /sys/class/block), opened as
 * dev_dir/NAME (NULL: /dev), whose ext2/3/4 label equals label.  Devices
 * that cannot be opened or probed are skipped.  0 even when none matches.
 */
int vm_blockdev_find_label(const char *sys_block_dir, const char *dev_dir,
			   const char *label, struct vm_blockdev_list *out,
			   struct vm_error *err);

/*
 * The label and filesystem type of one device or image file; -ENODATA when
 * it holds no recognised filesystem.  *label and *type are malloc'ed.
 */
int vm_blockdev_probe(const char *path, char **label, char **type,
		      struct vm_error *err);

#endif
