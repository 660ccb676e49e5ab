/* SPDX-License-Identifier: Apache-2.0 */
/*
 * setup_state.h - what setup made, kept between runs in a small JSON file
 * (<mountpoint>.setup.json by default) so that a second run only adds to
 * it and --undo removes exactly what setup made, no more.
 */
#ifndef VMTOOLS_AGENT_SETUP_STATE_H
#define VMTOOLS_AGENT_SETUP_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/setup/setup_journal.h"
#include "common/error.h"

struct lh_table;

struct vm_state_link {
	char *path;
	char *target;
};

struct vm_setup_state {
	char *device;
	char *mountpoint;
	bool mounted; /* setup mounted the image (so undo unmounts) */
	bool created_mountpoint;
	char **dirs; /* directories setup created, parents first */
	size_t n_dirs, cap_dirs;
	struct vm_state_link *links;
	size_t n_links, cap_links;
	/* path -> index + 1 in links, dirs (hash lookups: 100,000 links). */
	struct lh_table *link_index, *dir_index;
};

void vm_setup_state_clear(struct vm_setup_state *s);

/*
 * The largest state file: what a manifest of VM_MANIFEST_MAX_BYTES can ask
 * setup to make, each link's target longer by the mountpoint.  Saving a
 * larger one fails (so setup rolls back rather than leave what undo could
 * not read).
 */
#define VM_STATE_MAX_BYTES (256u << 20)

/* -ENOENT (err untouched) when there is no state file. */
int vm_setup_state_load(const char *path, struct vm_setup_state *s,
			struct vm_error *err);
/* Written to a temporary file and renamed into place. */
int vm_setup_state_save(const char *path, const struct vm_setup_state *s,
			struct vm_error *err);

/* Fold the changes of one run into s. */
int vm_setup_state_merge(struct vm_setup_state *s, const struct vm_journal *j);

#endif
