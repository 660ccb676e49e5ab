/* SPDX-License-Identifier: Apache-2.0 */
/*
 * error.h - an error as a person reads it.
 *
 * Functions that can fail return 0 or a negative errno and, when given a
 * struct vm_error, fill it with one sentence naming the path, field or value
 * concerned and what to do.  Callers at the top (main, the HTTP layer)
 * decide where the sentence goes; nothing below them prints.
 */
#ifndef VMTOOLS_COMMON_ERROR_H
#define VMTOOLS_COMMON_ERROR_H

#include <stddef.h>

#define VM_ERROR_MAX 1024

struct vm_error {
	int code; /* positive errno, 0 when no error was recorded */
	char msg[VM_ERROR_MAX];
};

/*
 * Record an error and return -code (code may be given with either sign), so
 * that `return vm_error_set(err, ENOENT, "...")` reads naturally.  err may be
 * NULL.  The first error recorded wins unless vm_error_clear() is called:
 * the innermost failure usually says the most.
 */
int vm_error_set(struct vm_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Like vm_error_set(), and appends ": <strerror(code)>". */
int vm_error_errno(struct vm_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

void vm_error_clear(struct vm_error *err);

/* The message, or a generic one built from the code when none was set. */
const char *vm_error_str(const struct vm_error *err);

#endif
