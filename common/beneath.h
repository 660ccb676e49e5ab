/* SPDX-License-Identifier: Apache-2.0 */
/*
 * beneath.h - opening a path beneath a directory, never through a symlink:
 * the one way both binaries reach a file in a tree somebody else controls
 * (the tools disk's files for `setup --verify`, the web UI's files on the
 * tools disk for `serve`, the guest paths `setup` links at).
 *
 * vm_open_beneath() is the strict opener: no component may be a symlink,
 * "..", or (when asked) on another mount; the last component is opened
 * with O_NOFOLLOW.  vm_beneath_walk() is the component-by-component walk
 * under it, with the policy of each step given by the caller: safe_path.c
 * follows the guest's own symlinks (/lib -> usr/lib) that a strict opener
 * refuses, which no openat2() flag can say.  beneath.c says why both exist.
 */
#ifndef VMTOOLS_COMMON_BENEATH_H
#define VMTOOLS_COMMON_BENEATH_H

#include <stddef.h>

/* vm_open_beneath()'s how. */
#define VM_BENEATH_NO_XDEV 0x1u /* every component on root's filesystem */
#define VM_BENEATH_WALK 0x2u /* the walk even where openat2() exists */

/*
 * Open path below root (an O_PATH directory fd) with open flags (O_PATH,
 * O_RDONLY | O_NONBLOCK, O_DIRECTORY...; not O_CREAT; O_NOFOLLOW and
 * O_CLOEXEC are added).  A leading '/' names root itself; "" and "/" open
 * root; a trailing '/' asks for a directory.  Returns the fd, or -errno:
 *   -ENOENT        a component is missing
 *   -ENOTDIR       a component before the last is not a directory
 *   -ELOOP         a symlink on the way, or the last one (an O_PATH open
 *                  of a symlink opens the link itself, as open(2) does)
 *   -EXDEV         a ".." anywhere, or with VM_BENEATH_NO_XDEV a
 *                  component on another filesystem (a mount)
 *   -ENAMETOOLONG  path is PATH_MAX long or more, or a component NAME_MAX
 * The same answers through openat2() and through the walk.
 */
int vm_open_beneath(int root, const char *path, int flags, unsigned how);

/*
 * vm_open_beneath() of a regular file to read, never waiting (a FIFO or a
 * device opens without blocking and is then closed again): the fd, -EINVAL
 * when it is not a regular file (a directory, FIFO, device, socket), or
 * vm_open_beneath()'s -errno.
 */
int vm_open_beneath_regular(int root, const char *path, unsigned how);

/*
 * One step of vm_beneath_walk(): open the directory name (one component,
 * never "." or "..") below dfd, prefix being the path so far ("/a/b" for
 * b), for messages.  Returns the new fd (the walk closes dfd), or -errno.
 */
typedef int (*vm_beneath_step_fn)(int dfd, const char *name, const char *prefix,
				  void *arg);

/*
 * Walk path below root a component at a time, each but the last opened
 * by step, "." components skipped.  The whole path is looked at before
 * the first step: a ".." before the last component gives -EXDEV, one of
 * more than NAME_MAX bytes or a path of PATH_MAX or more -ENAMETOOLONG.
 * Returns the fd of the directory holding the last component and points
 * *last at that component inside path: as written, so it may be "" (path
 * is "/"), ".", "..", or end in '/'; the caller judges it.  Or -errno
 * from the checks above or from step.
 */
int vm_beneath_walk(int root, const char *path, vm_beneath_step_fn step,
		    void *arg, const char **last);

#endif
