/* SPDX-License-Identifier: Apache-2.0 */
/*
 * history_time.h - the times of the history's API and files, pure so they
 * are unit-tested (history_time.c):
 *
 *   ?from= and ?until=   RFC 3339, Unix seconds, or relative to now
 *                        (-30s, -5m, -1h, now)
 *   the index            RFC 3339 UTC, seconds
 *   --history-dir        cpu-START-END.pb.gz, START/END YYYYMMDDTHHMMSSZ
 */
#ifndef VMTOOLS_AGENT_HISTORY_TIME_H
#define VMTOOLS_AGENT_HISTORY_TIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/*
 * A time parameter into Unix nanoseconds; now_ns is what "now" is.
 * -EINVAL with a sentence naming what is accepted when it is none of them.
 */
int vm_history_parse_time(const char *s, uint64_t now_ns, uint64_t *out_ns,
			  struct vm_error *err);

/* "2026-11-22T17:05:00Z" */
void vm_history_format_rfc3339(uint64_t unix_ns, char buf[32]);

/*
 * Whether a window ending at end_ns is older than horizon_ns, the age
 * being counted back from the newest window's end or now, whichever is
 * earlier: a window dated after now (a guest that once ran with its clock
 * ahead wrote it) never makes the others look old.
 */
bool vm_history_too_old(uint64_t end_ns, uint64_t newest_end_ns,
			uint64_t now_ns, uint64_t horizon_ns);

#define VM_HISTORY_FILE_NAME_MAX 64

/* "cpu-20261122T170500Z-20261122T170510Z.pb.gz" */
void vm_history_file_name(uint64_t start_ns, uint64_t end_ns,
			  char buf[VM_HISTORY_FILE_NAME_MAX]);

/*
 * The window a file name says, to the second; -EINVAL when name is not
 * one vm_history_file_name() makes.
 */
int vm_history_parse_file_name(const char *name, uint64_t *start_ns,
			       uint64_t *end_ns);

#endif
