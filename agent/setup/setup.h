/* SPDX-License-Identifier: Apache-2.0 */
/*
 * setup.h - `vmtools-agent setup`: find the tools disk by its ext4 label,
 * mount it read-only (ro,nodev,nosuid), read its manifest, refuse an image
 * built for another kernel unless allowed, optionally verify every file's
 * sha256, and symlink what the manifest lists into the guest; and the undo.
 *
 * What a run changes is journalled; when any step fails the journal is
 * rolled back, so the guest is left as it was.  What setup created is kept
 * in a state file (<mountpoint>.setup.json) so that --undo removes exactly
 * that, including the parent directories it had to create.
 *
 * `serve` calls vm_setup() first (and keeps serving when it fails); the
 * result says what /healthz reports.  Nothing here prints.
 */
#ifndef VMTOOLS_AGENT_SETUP_H
#define VMTOOLS_AGENT_SETUP_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "common/label.h"

#define VM_SETUP_DEFAULT_LABEL VM_DEFAULT_LABEL
#define VM_SETUP_DEFAULT_MOUNTPOINT "/run/vm-tools"
#define VM_SETUP_DEFAULT_BINDIR "/usr/local/bin"

struct vm_setup_options {
	const char *label; /* NULL: "vm-tools" */
	const char *mountpoint; /* NULL: "/run/vm-tools" */
	const char *bindir; /* NULL: "/usr/local/bin" */
	const char *device; /* use this block device, do not search by label */
	const char *state_file; /* NULL: <mountpoint>.setup.json */
	bool allow_kernel_mismatch;
	bool verify; /* re-hash every file against the manifest */
	/* For tests: prefix of every guest path linked ("" or NULL: /). */
	const char *root;
	/* For tests: the running release (NULL: uname -r). */
	const char *kernel_release;
};

struct vm_setup_result {
	char *device; /* the disk found, e.g. /dev/vdb */
	char *mountpoint;
	char *image_release; /* from the manifest */
	char *running_release; /* uname -r */
	bool mounted; /* the image is mounted at mountpoint */
	bool release_match;
	bool verified; /* --verify ran and every file matched */
	unsigned n_files_verified;
	bool dirty; /* a failed run could not roll back all it did */
	/* What happened, one sentence each, for the command to print. */
	char **actions;
	size_t n_actions, cap_actions;
};

void vm_setup_result_clear(struct vm_setup_result *r);

/*
 * Mount and link.  Returns 0, or -errno with err saying what blocked it:
 * -ENODEV when no disk carries the label, -ENOTUNIQ when several do,
 * -EEXIST when something of the guest's is in the way, -EXDEV when the
 * image was built for another kernel, -EBADMSG when --verify found a file
 * that differs.  On failure the guest is unchanged.
 */
int vm_setup(const struct vm_setup_options *o, struct vm_setup_result *res,
	     struct vm_error *err);

/*
 * Remove the links setup made, the directories it created (when empty),
 * unmount and remove the mountpoint if setup created it.  Without a state
 * file it removes every manifest link that still points into the
 * mountpoint and unmounts.  Succeeds when there is nothing to undo.
 */
int vm_setup_undo(const struct vm_setup_options *o, struct vm_setup_result *res,
		  struct vm_error *err);

/*
 * What an earlier setup left, changing nothing: fills res's mountpoint,
 * mounted, device, image_release and release_match.  Returns 0, -ENODEV
 * when nothing is mounted at the mountpoint, or -errno when its manifest
 * cannot be read, err saying so.
 */
int vm_setup_observe(const struct vm_setup_options *o,
		     struct vm_setup_result *res, struct vm_error *err);

#endif
