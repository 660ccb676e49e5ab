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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The wait event classes: the top byte of wait_event_info. */
#define VM_PG_CLASSES 16

/* A server whose minor release could not be read (pgrelease.h). */
#define VM_PG_MINOR_UNKNOWN 0xffffu

struct vm_pg_names {
	const char *const *names; /* by event id; a NULL slot is unused */
	size_t n;
};

/*
 * An event that earlier minor releases name otherwise: releases up to
 * last_old (checked) name it name; from first_new (checked) on, as the
 * table does.  A release between the two, which could not be checked, and
 * one whose minor release is unknown, get it labelled by number.
 */
struct vm_pg_rename {
	uint8_t cls;
	uint16_t id;
	const char *name;
	uint16_t last_old, first_new;
};

struct vm_pg_layout {
	unsigned major;
	/*
	 * The minor release the table was written from ("15.20"): an older
	 * one reports only a prefix of each class's numbers, a newer one may
	 * report numbers past the table's, which are then labelled by number.
	 */
	const char *written_from;
	/* What older minor releases name otherwise, by (cls, id). */
	const struct vm_pg_rename *renames;
	size_t n_renames;
	/*
	 * offsetof(PgBackendStatus, st_query_id) as read from x86-64 builds;
	 * 0: no query id (< 14).  query_id_arm64: the same offset checked
	 * against an arm64 build too (tests/integration/23-cross-arm64.sh
	 * compiles the arm64 server headers against it); else an arm64
	 * agent reads no query id (vm_pg_query_id_offset()).
	 */
	uint32_t query_id_offset;
	bool query_id_arm64;
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

/* A table's renames, from an array of struct vm_pg_rename. */
#define VM_PG_RENAMES(a) .renames = a, .n_renames = sizeof(a) / sizeof(a[0])

/* A table's events, from an array indexed by event id. */
#define VM_PG_NAMES(a)                      \
	{                                   \
		a, sizeof(a) / sizeof(a[0]) \
	}

/* The layout of a major version, NULL when there is no table for it. */
const struct vm_pg_layout *vm_pg_layout(unsigned major);

/*
 * Where l's backends keep their query id in their status entry on this
 * architecture; 0 when that was not checked for it (on arm64: only where
 * l->query_id_arm64), or l has no query id.
 */
uint32_t vm_pg_query_id_offset(const struct vm_pg_layout *l);

/* The versions with a table, "15" or "14, 15 and 16", for messages. */
const char *vm_pg_known_versions(void);

/* The i-th table (0, 1, ...), NULL past the last: for /healthz. */
const struct vm_pg_layout *vm_pg_layout_at(size_t i);

/*
 * "Class:Name" of wait_event_info as minor release minor of l's major
 * version names it (VM_PG_MINOR_UNKNOWN when not known), in buf; returns
 * its length, 0 when the backend waits for nothing (0) or there is no
 * table.  A number the table does not name (a later minor release's
 * event, an extension's own event from 17 on) is labelled by number, never
 * by a neighbour's name: "IPC:<unknown 52>", and "<unknown 12>:<unknown 3>"
 * for a class the table does not know; so is an event renamed between
 * minor releases when which name the server uses is not known.
 */
size_t vm_pg_wait_event_name(const struct vm_pg_layout *l, unsigned minor,
			     uint32_t info, char *buf, size_t size);

extern const struct vm_pg_layout vm_pg_layout_15;
extern const struct vm_pg_layout vm_pg_layout_16;
extern const struct vm_pg_layout vm_pg_layout_17;
extern const struct vm_pg_layout vm_pg_layout_18;

#endif
