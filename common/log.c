// SPDX-License-Identifier: Apache-2.0
/*
 * log.c - the program's log: one line per event on stderr, each with a UTC
 * timestamp, written in one call so that lines from different threads
 * (the agent's connection threads) never interleave.
 */
#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

#include "common/log.h"

void vm_log(const char *fmt, ...)
{
	char line[2048], stamp[32];
	struct timeval tv;
	struct tm tm;
	va_list ap;
	int n;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "%s.%03ldZ vmtools-agent: ", stamp,
		     (long)(tv.tv_usec / 1000));
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}
