/* SPDX-License-Identifier: Apache-2.0 */
/*
 * history_dir.h - the windows of continuous profiling on disk, in
 * --history-dir (history_dir.c): one cpu-START-END.pb.gz per window,
 * written atomically, read back at start-up, pruned by age and size.
 *
 * The directory is treated as hostile: every file is opened relative to
 * the directory's descriptor with O_NOFOLLOW, only regular files of at
 * most VM_HISTORY_MAX_FILE bytes named as this agent names them are read,
 * and a new file is written under a temporary name of our own (O_EXCL)
 * then renamed.  A full or failing disk never fails the caller for good:
 * the oldest files are removed to make room, and what could not be
 * written is counted and said in the status.
 *
 * The push queue spools there too: a window waiting to be sent is a hard
 * link of its file in the push/ subdirectory (history_dir_spool_*).
 */
#ifndef VMTOOLS_AGENT_HISTORY_DIR_H
#define VMTOOLS_AGENT_HISTORY_DIR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/history/history.h"
#include "common/error.h"

struct vm_history_dir_status {
	uint64_t files;
	uint64_t bytes;
	uint64_t dropped; /* files removed to make room or never written */
	uint64_t write_errors;
	char last_error[256]; /* "" when the last write succeeded */
};

struct vm_history_dir;

/*
 * Open (or create, mode 0700) path; max_seconds and max_bytes bound what
 * is kept there.  The directory itself must not be a symbolic link.
 */
int vm_history_dir_open(const char *path, uint32_t max_seconds,
			uint64_t max_bytes, struct vm_history_dir **out,
			struct vm_error *err);
void vm_history_dir_close(struct vm_history_dir *d);

/*
 * Every window file into h, oldest first; files that cannot be read are
 * skipped and said through log (one line each).  Stops early once *stop
 * is raised (stop may be NULL).  Returns how many were loaded.
 */
typedef void vm_history_log_fn(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
size_t vm_history_dir_load(struct vm_history_dir *d, struct vm_history *h,
			   const atomic_bool *stop, vm_history_log_fn *log);

/*
 * Write one window (gzipped pprof) as cpu-START-END.pb.gz, making room by
 * removing the oldest files when the disk is full, then prune.  0, or a
 * negative errno with a sentence when it could not be written at all.
 */
int vm_history_dir_write(struct vm_history_dir *d, uint64_t start_ns,
			 uint64_t end_ns, const void *data, size_t len,
			 struct vm_error *err);

void vm_history_dir_status(struct vm_history_dir *d,
			   struct vm_history_dir_status *st);

/* The push spool: windows written but not yet sent. */
int vm_history_dir_spool_add(struct vm_history_dir *d, uint64_t start_ns,
			     uint64_t end_ns);
void vm_history_dir_spool_remove(struct vm_history_dir *d, uint64_t start_ns,
				 uint64_t end_ns);
/* Read a spooled window; *data malloc'd.  Negative errno when gone. */
int vm_history_dir_spool_read(struct vm_history_dir *d, const char *name,
			      void **data, size_t *len);
/*
 * The spooled windows' names, oldest first (malloc'd array of malloc'd
 * strings; free with vm_history_dir_names_free).
 */
int vm_history_dir_spool_list(struct vm_history_dir *d, char ***names,
			      size_t *n);
void vm_history_dir_names_free(char **names, size_t n);

#endif
