/* SPDX-License-Identifier: Apache-2.0 */
/*
 * setup_rollback.h - putting the guest back as it was before a `setup`
 * run that failed part-way, from that run's journal (setup_journal.h).
 */
#ifndef VMTOOLS_AGENT_SETUP_ROLLBACK_H
#define VMTOOLS_AGENT_SETUP_ROLLBACK_H

#include "agent/setup/setup_journal.h"
#include "common/error.h"

/*
 * Undo every change, last first, and empty the journal.  Keeps going past
 * a step that fails; returns 0 or the first -errno, with err naming what
 * could not be restored (the guest then needs a look by hand).
 */
int vm_journal_rollback(struct vm_journal *j, struct vm_error *err);

#endif
