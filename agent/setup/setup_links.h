/* SPDX-License-Identifier: Apache-2.0 */
/*
 * setup_links.h - the symlinks setup puts into the guest: a plan (path ->
 * target) is first checked against what is on disk, so that everything in
 * the way is reported before anything changes, then applied through the
 * journal.
 *
 * A link is "ours" when it points at or below the owner directory (the
 * mountpoint): only such links are ever replaced or removed.  Real files,
 * directories and other people's links are never touched.
 */
#ifndef VMTOOLS_AGENT_SETUP_LINKS_H
#define VMTOOLS_AGENT_SETUP_LINKS_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/setup/setup_journal.h"
#include "common/error.h"

struct lh_table;

enum vm_link_state {
	VM_LINK_ABSENT, /* nothing there: create it */
	VM_LINK_PRESENT, /* already the right link: nothing to do */
	VM_LINK_STALE, /* our link, pointing elsewhere in the owner: retarget */
	VM_LINK_BLOCKED, /* something else is there: refuse (or skip) */
};

struct vm_link {
	char *path; /* absolute path of the link */
	char *target; /* absolute path it must point to */
	bool optional; /* when blocked: skip it instead of failing */
	/* Filled by vm_links_check(). */
	enum vm_link_state state;
	char *current; /* STALE: where it points now */
	char *blocker; /* BLOCKED: what is in the way, as a sentence */
};

struct vm_link_plan {
	struct vm_link *links;
	size_t n, cap;
	struct lh_table *index; /* path -> entry, for the check above */
};

/*
 * Add path -> target; a second entry for the same path is ignored (a
 * hash lookup: manifests list 100,000 links).
 */
int vm_link_plan_add(struct vm_link_plan *p, const char *path,
		     const char *target, bool optional);
void vm_link_plan_clear(struct vm_link_plan *p);

/*
 * Look at every path of the plan and set its state, reaching each without
 * following a link into g->owner or entering g->dev (safe_path.h).
 * Returns -EEXIST when a non-optional link is blocked, err listing every
 * blocked path (at most the first 20).
 */
int vm_links_check(struct vm_link_plan *p, const struct vm_guard *g,
		   struct vm_error *err);

/*
 * Create the absent links (and their missing parent directories) and
 * retarget the stale ones, journalling each change, through j->guard's
 * safe walk: a link whose way leads through a link setup made (an earlier
 * link of the same plan) is refused.  On failure returns -errno naming
 * the path; the caller rolls the journal back.
 */
int vm_links_apply(struct vm_link_plan *p, struct vm_journal *j,
		   struct vm_error *err);

/*
 * Is path a symlink pointing at or below g->owner, reached safely?
 * Returns 1 (and *current, malloc'ed, when current is not NULL), 0, or
 * -errno (the way to it is refused).
 */
int vm_link_is_ours(const char *path, const struct vm_guard *g, char **current);

#endif
