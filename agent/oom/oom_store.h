/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oom_store.h - the OOM reports kept (oom_store.c): each a JSON document
 * (oom_report.h), held in memory for the API and, with a directory,
 * written there too, one file per report, and read back at start-up, so
 * that they survive a restart of the agent.
 *
 * Bounded in count and bytes (the oldest go first), in memory and on the
 * disk alike.  The directory is the agent's: made 0700 if missing, never
 * reached through a symbolic link, and a file is written whole to a
 * temporary name then renamed (common/fdio.h), read only when it is a
 * regular file no larger than a report can be, and parsed as untrusted.
 */
#ifndef VMTOOLS_AGENT_OOM_STORE_H
#define VMTOOLS_AGENT_OOM_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define VM_OOM_DEFAULT_REPORTS 64
#define VM_OOM_DEFAULT_BYTES (8u << 20)
/* One report's JSON, at most; a larger file is not read back. */
#define VM_OOM_REPORT_MAX (1u << 20)
/* "<13-digit Unix ms>-<pid>" */
#define VM_OOM_ID_MAX 32
#define VM_OOM_TYPE_MAX 48

struct vm_oom_store_config {
	const char *dir; /* NULL: memory only */
	size_t max_reports; /* 0: VM_OOM_DEFAULT_REPORTS */
	size_t max_bytes; /* 0: VM_OOM_DEFAULT_BYTES */
	/* Said of a file passed over at start-up (may be NULL). */
	void (*log)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
};

/* What /healthz and /metrics say of the store. */
struct vm_oom_store_stats {
	size_t reports; /* kept now */
	uint64_t bytes; /* their JSON */
	uint64_t dropped; /* for the bounds, since the start */
	uint64_t write_errors; /* reports kept in memory only */
	char last_error[160]; /* the last write error, "" if none */
	char last_id[VM_OOM_ID_MAX]; /* "" when none */
	uint64_t last_unix_ms;
	/* The reports kept, by backend type ("" for a process not PostgreSQL's) */
	struct vm_oom_type_count {
		char type[VM_OOM_TYPE_MAX];
		uint64_t n;
	} by_type[16];
	size_t n_types;
};

struct vm_oom_store;

/* Open (and read back) the store.  Errors: the directory cannot be used. */
int vm_oom_store_open(const struct vm_oom_store_config *cfg,
		      struct vm_oom_store **out, struct vm_error *err);
void vm_oom_store_close(struct vm_oom_store *s);

/*
 * Keep a report: json (len bytes) whose top-level fields id, unix_ms,
 * pid and backend_type say what it is.  0; -EINVAL (not such a report,
 * or larger than VM_OOM_REPORT_MAX), -ENOMEM.  A write that fails keeps
 * it in memory, counted in the stats.
 */
int vm_oom_store_add(struct vm_oom_store *s, const char *json, size_t len,
		     struct vm_error *err);

/* A copy of report id's JSON; -ENOENT (no such report), -ENOMEM. */
int vm_oom_store_get(struct vm_oom_store *s, const char *id, char **json,
		     size_t *len);

/* {"reports": [summaries, oldest first]}: malloc'd, NULL when out of memory. */
char *vm_oom_store_list(struct vm_oom_store *s, size_t *len);

void vm_oom_store_stats(struct vm_oom_store *s, struct vm_oom_store_stats *st);

/* An id as a report's name has it: digits, '-', digits. */
bool vm_oom_id_valid(const char *id);

#endif
