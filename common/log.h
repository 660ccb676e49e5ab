/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - the program's log: one line to stderr, with a UTC timestamp.
 *
 * Used by the long-running parts (the agent's service and its HTTP server);
 * one-shot commands report through struct vm_error and print at the top.
 */
#ifndef VMTOOLS_COMMON_LOG_H
#define VMTOOLS_COMMON_LOG_H

void vm_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
