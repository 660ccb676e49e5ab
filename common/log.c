// SPDX-License-Identifier: Apache-2.0
/*
 * log.c - the program's log: one line per event on stderr, each with a UTC
 * timestamp, written in one call so that lines from different threads
 * (the agent's connection threads) never interleave.
 *
 * Whatever the caller passes, a line stays one line of text: control
 * characters and bytes that are not UTF-8 are escaped (common/escape.h),
 * so a value taken from a request or a process cannot forge a line or
 * reach the terminal that shows the log.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "common/escape.h"
#include "common/log.h"

#define LINE_MAX_BYTES 2048

void vm_log(const char *fmt, ...)
{
	char line[LINE_MAX_BYTES], safe[4 * LINE_MAX_BYTES], stamp[32];
	struct timeval tv;
	struct tm tm;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	vm_escape(safe, sizeof(safe), line, strlen(line), VM_ESCAPE_TEXT);
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ldZ vmtools-agent: %s\n", stamp,
		(long)(tv.tv_usec / 1000), safe);
}
