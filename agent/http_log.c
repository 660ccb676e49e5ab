// SPDX-License-Identifier: Apache-2.0
/*
 * http_log.c - the service's log: one line per request and per session on
 * stderr, each with a UTC timestamp, written in one call so that lines
 * from different connection threads never interleave.
 */
#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

#include "agent/http_int.h"

void vm_http_log(const char *fmt, ...)
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
