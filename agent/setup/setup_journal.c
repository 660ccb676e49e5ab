// SPDX-License-Identifier: Apache-2.0
/*
 * setup_journal.c - recording setup's changes to the guest, in order.
 * The record only: undoing it is setup_rollback.c's, above the safe walk
 * (safe_path.c) that both records directories it makes and is used to
 * undo them.
 */
#include "agent/setup/setup_journal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

int vm_journal_add(struct vm_journal *j, enum vm_change_kind kind,
		   const char *path, const char *target, const char *old)
{
	struct vm_change c = { .kind = kind };

	if (vm_grow(j->changes, &j->cap, j->n + 1) < 0)
		return -ENOMEM;
	c.path = strdup(path);
	c.target = target ? strdup(target) : NULL;
	c.old = old ? strdup(old) : NULL;
	if (!c.path || (target && !c.target) || (old && !c.old)) {
		free(c.path);
		free(c.target);
		free(c.old);
		return -ENOMEM;
	}
	j->changes[j->n++] = c;
	return 0;
}

void vm_journal_clear(struct vm_journal *j)
{
	for (size_t i = 0; i < j->n; i++) {
		free(j->changes[i].path);
		free(j->changes[i].target);
		free(j->changes[i].old);
	}
	free(j->changes);
	j->changes = NULL;
	j->n = j->cap = 0;
}
