/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ui_files.h - the files of the web UI, read for GET /ui/... from a
 * directory that may sit on the tools disk, which the agent treats as
 * hostile (ui_files.c): which paths may be asked for, what each is sent
 * as, and reading one without following a symlink or leaving the
 * directory.  http_ui.c answers with them.
 */
#ifndef VMTOOLS_AGENT_UI_FILES_H
#define VMTOOLS_AGENT_UI_FILES_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

#define VM_UI_FILE_MAX (8 * 1024 * 1024) /* bytes of one file at most */

/*
 * Whether rel (the path below /ui/, "" for the page itself) may be asked
 * for: at most 4 segments of letters, digits, '.', '_' and '-', none empty
 * or starting with '.', 200 bytes in all.
 */
bool vm_ui_path_allowed(const char *rel);

/* The Content-Type of rel by its extension; NULL: not a file we serve. */
const char *vm_ui_content_type(const char *rel);

/*
 * Whether rel's name carries a hash of its content (speedscope's
 * "speedscope-Y2522XSH.js"): such a file may be cached for good.
 */
bool vm_ui_immutable(const char *rel);

/*
 * Open the UI's directory: dir when given (--ui-dir, the operator's), else
 * the installed one (installed, the operator's), else the tools disk's
 * below mountpoint, whose every component is opened without following a
 * symlink.  *fd is an O_PATH descriptor; -ENOENT when there is none.
 */
int vm_ui_open_dir(const char *dir, const char *installed,
		   const char *mountpoint, int *fd, struct vm_error *err);

/*
 * Read rel (allowed by vm_ui_path_allowed; "" reads index.html) below
 * dirfd, never through a symlink (common/beneath.h): a regular file of
 * at most VM_UI_FILE_MAX bytes.  -ENOENT when it is not there (or
 * is a symlink, a directory, a device: the same answer for all).
 */
int vm_ui_read(int dirfd, const char *rel, void **data, size_t *len,
	       struct vm_error *err);

#endif
