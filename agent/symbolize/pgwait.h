/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pgwait.h - what differs between PostgreSQL major versions for the
 * wait_event and query_id labels (pgwait.c): the names of wait events, by
 * the numbers a backend stores in its wait_event_info, and where the
 * query id sits in the backend's status entry.  One table per supported
 * version, in a file of its own (pgwait_15.c, ...); a version without a
 * table gets no labels, never a guess.
 *
 * wait_event_info holds the class in its top byte and the event in its
 * low 16 bits (PostgreSQL's src/include/utils/wait_event.h).  Names are
 * spelt as pg_stat_activity shows wait_event_type and wait_event, joined
 * with a colon: "Lock:advisory", "Client:ClientRead".
 */
#ifndef VMTOOLS_AGENT_PGWAIT_H
#define VMTOOLS_AGENT_PGWAIT_H

#include <stddef.h>
#include <stdint.h>

/* The wait event classes: the top byte of wait_event_info. */
#define VM_PG_CLASSES 16

struct vm_pg_names {
	const char *const *names; /* by event id; a NULL slot is unused */
	size_t n;
};

struct vm_pg_layout {
	unsigned major;
	/* offsetof(PgBackendStatus, st_query_id); 0: no query id (< 14) */
	uint32_t query_id_offset;
	const char *classes[VM_PG_CLASSES]; /* wait_event_type, by class */
	struct vm_pg_names events[VM_PG_CLASSES];
	/*
	 * LWLock tranches an extension registers are numbered from here;
	 * they are named "extension", as a backend that has not loaded the
	 * extension names them.
	 */
	uint32_t lwlock_first_extension;
	/* The one name of every event of a class (Extension), or NULL. */
	const char *single[VM_PG_CLASSES];
};

/* A table's events, from an array indexed by event id. */
#define VM_PG_NAMES(a)                      \
	{                                   \
		a, sizeof(a) / sizeof(a[0]) \
	}

/* The layout of a major version, NULL when there is no table for it. */
const struct vm_pg_layout *vm_pg_layout(unsigned major);

/* The versions with a table, "15" or "14, 15 and 16", for messages. */
const char *vm_pg_known_versions(void);

/*
 * "Class:Name" of wait_event_info in buf; returns its length, 0 when the
 * backend waits for nothing (0) or the number is not in the table (the
 * label is then left out).
 */
size_t vm_pg_wait_event_name(const struct vm_pg_layout *l, uint32_t info,
			     char *buf, size_t size);

extern const struct vm_pg_layout vm_pg_layout_15;
extern const struct vm_pg_layout vm_pg_layout_16;
extern const struct vm_pg_layout vm_pg_layout_17;
extern const struct vm_pg_layout vm_pg_layout_18;

#endif
