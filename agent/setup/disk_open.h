/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk_open.h - opening a file the manifest lists on the mounted tools disk
 * without being led off the disk.  The disk is hostile: a directory on it
 * may be a symlink to /proc (the manifest's /x/kmsg would then read
 * /proc/kmsg, and block), a file may be a FIFO, and what a path names may
 * change between a look and an open.  So a file is opened once, relative
 * to the mountpoint's directory fd, never through a symlink or onto
 * another filesystem, without blocking, and what was opened is checked.
 *
 * That is common/beneath.h's opener (openat2() where the kernel has it)
 * with every component held to the disk's filesystem.  It is not
 * safe_path.h's walk: that one follows the guest's own symlinks and
 * refuses the disk, this one follows no symlink and refuses everything
 * but the disk.
 */
#ifndef VMTOOLS_AGENT_SETUP_DISK_OPEN_H
#define VMTOOLS_AGENT_SETUP_DISK_OPEN_H

#include <stdbool.h>
#include <sys/types.h>

#include "common/error.h"
#include "common/manifest.h"

/*
 * Open path (absolute within the disk, as the manifest names it) below
 * root, an O_PATH directory fd of the mountpoint on device dev, with open
 * flags (O_RDONLY, O_PATH...; O_NOFOLLOW and O_CLOEXEC are added).
 * Returns the fd, or -errno: -ENOENT / -ENOTDIR when missing, -ELOOP when
 * a symlink is on the way or at the end, -EXDEV when the way leaves the
 * disk (another mount, any "..", root no longer on dev).  walk forces
 * beneath.h's walk instead of openat2() (the unit tests cover both).
 */
int vm_disk_open(int root, dev_t dev, const char *path, int flags, bool walk);

/*
 * Open the regular file path on the disk for reading (O_NONBLOCK: a FIFO
 * or device opens without blocking and is then refused).  Returns the fd,
 * or -errno with *why saying why, as a phrase following the file's name
 * ("is missing", "leads out of the disk through a symlink", ...).
 */
int vm_disk_open_file(int root, dev_t dev, const char *path, const char **why);

/*
 * The mountpoint, O_PATH, when it is the disk on device dev that is mounted
 * there: the fd, or -errno with err saying what to do.
 */
int vm_disk_open_root(const char *mountpoint, dev_t dev, struct vm_error *err);

/*
 * The disk's manifest (VM_MANIFEST_PATH), opened as vm_disk_open_file()
 * opens a file and parsed: 0 with *out, or -errno with err naming it.
 */
int vm_disk_load_manifest(const char *mountpoint, dev_t dev,
			  struct vm_manifest **out, struct vm_error *err);

#endif
