// SPDX-License-Identifier: Apache-2.0
/*
 * history_time.c - parsing and printing the history's times (see
 * history_time.h).  Calendar arithmetic is libc's (timegm, gmtime_r);
 * RFC 3339 is parsed here, strictly (strptime skips blanks and lets
 * 2026-02-30 become March 2nd), and the numbers are kept in range.
 */
#include "agent/history/history_time.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NS 1000000000ULL
/* Up to the year 9999: nanoseconds since 1970 stay in 64 bits. */
#define MAX_UNIX_SECONDS 253402300799ULL

static const char accepted[] =
	"give RFC 3339 (2026-11-22T17:05:00Z), Unix seconds, or a time relative to now (-30s, -5m, -1h, now)";

static bool all_digits(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

static int parse_relative(const char *s, uint64_t now_ns, uint64_t *out)
{
	size_t n = strlen(s);
	unsigned long long v, unit;

	if (n < 3 || n > 12 || !all_digits(s + 1, n - 2))
		return -EINVAL;
	switch (s[n - 1]) {
	case 's':
		unit = 1;
		break;
	case 'm':
		unit = 60;
		break;
	case 'h':
		unit = 3600;
		break;
	case 'd':
		unit = 86400;
		break;
	default:
		return -EINVAL;
	}
	v = strtoull(s + 1, NULL, 10);
	if (v > MAX_UNIX_SECONDS / unit || v * unit * NS > now_ns)
		return -EINVAL;
	*out = now_ns - v * unit * NS;
	return 0;
}

/* The fraction of a second after '.', as nanoseconds; *end after it. */
static uint64_t fraction(const char *s, const char **end)
{
	uint64_t ns = 0, scale = NS / 10;

	while (isdigit((unsigned char)*s)) {
		ns += (uint64_t)(*s - '0') * scale;
		scale /= 10;
		s++;
	}
	*end = s;
	return ns;
}

/* n digits at s as a number, or -1 when they are not all digits. */
static int digits(const char *s, size_t n)
{
	int v = 0;

	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

static int days_in_month(int year, int month)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30,
				    31, 31, 30, 31, 30, 31 };
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

	return month == 2 && leap ? 29 : days[month - 1];
}

/*
 * Unix seconds of a UTC civil time whose fields were read as numbers
 * (-1 for a field that was not digits); -EINVAL when one is out of range.
 */
static int civil(int year, int mon, int day, int hour, int min, int sec,
		 time_t *t)
{
	struct tm tm = { 0 };

	if (year < 0 || mon < 1 || mon > 12 || day < 1 ||
	    day > days_in_month(year, mon) || hour < 0 || hour > 23 ||
	    min < 0 || min > 59 || sec < 0 || sec > 59)
		return -EINVAL;
	tm.tm_year = year - 1900;
	tm.tm_mon = mon - 1;
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	*t = timegm(&tm);
	return *t == (time_t)-1 ? -EINVAL : 0;
}

/*
 * RFC 3339's date-time, strictly: YYYY-MM-DDTHH:MM:SS[.FRAC](Z|+HH:MM|
 * -HH:MM), every field its width, every value in its range (a day the
 * month has, no second 60: a leap second has no Unix time, as Go's
 * time.Parse refuses it too), nothing before or after.
 */
static int parse_rfc3339(const char *s, uint64_t *out)
{
	int year, mon, day, hour, min, sec, oh = 0, om = 0;
	const char *p = s + 19;
	long offset = 0;
	uint64_t frac = 0;
	time_t t;

	if (strlen(s) < 20 || s[4] != '-' || s[7] != '-' ||
	    (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':')
		return -EINVAL;
	year = digits(s, 4);
	mon = digits(s + 5, 2);
	day = digits(s + 8, 2);
	hour = digits(s + 11, 2);
	min = digits(s + 14, 2);
	sec = digits(s + 17, 2);
	if (civil(year, mon, day, hour, min, sec, &t) < 0)
		return -EINVAL;
	if (*p == '.') {
		const char *q;

		frac = fraction(p + 1, &q);
		if (q == p + 1)
			return -EINVAL;
		p = q;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		oh = digits(p + 1, 2);
		if (oh < 0 || oh > 23 || p[3] != ':')
			return -EINVAL;
		om = digits(p + 4, 2);
		if (om < 0 || om > 59)
			return -EINVAL;
		offset = oh * 3600L + om * 60L;
		if (*p == '+')
			offset = -offset;
		p += 6;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	if (t + offset < 0 || (uint64_t)(t + offset) > MAX_UNIX_SECONDS)
		return -EINVAL;
	*out = (uint64_t)(t + offset) * NS + frac;
	return 0;
}

int vm_history_parse_time(const char *s, uint64_t now_ns, uint64_t *out_ns,
			  struct vm_error *err)
{
	size_t n = strlen(s);
	int r = -EINVAL;

	if (!strcmp(s, "now")) {
		*out_ns = now_ns;
		return 0;
	}
	if (s[0] == '-')
		r = parse_relative(s, now_ns, out_ns);
	else if (n <= 12 && all_digits(s, n)) {
		unsigned long long v = strtoull(s, NULL, 10);

		if (v <= MAX_UNIX_SECONDS) {
			*out_ns = v * NS;
			r = 0;
		}
	} else if (n <= 40) {
		r = parse_rfc3339(s, out_ns);
	}
	if (r < 0)
		return vm_error_set(err, EINVAL, "'%.40s%s' is not a time: %s",
				    s, n > 40 ? "..." : "", accepted);
	return 0;
}

bool vm_history_too_old(uint64_t end_ns, uint64_t newest_end_ns,
			uint64_t now_ns, uint64_t horizon_ns)
{
	uint64_t anchor = newest_end_ns < now_ns ? newest_end_ns : now_ns;

	return anchor > end_ns && anchor - end_ns >= horizon_ns;
}

void vm_history_format_rfc3339(uint64_t unix_ns, char buf[32])
{
	time_t t = (time_t)(unix_ns / NS);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void compact_time(uint64_t unix_ns, char buf[20])
{
	time_t t = (time_t)(unix_ns / NS);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 20, "%Y%m%dT%H%M%SZ", &tm);
}

void vm_history_file_name(uint64_t start_ns, uint64_t end_ns,
			  char buf[VM_HISTORY_FILE_NAME_MAX])
{
	char a[20], b[20];

	compact_time(start_ns, a);
	compact_time(end_ns, b);
	snprintf(buf, VM_HISTORY_FILE_NAME_MAX, "cpu-%s-%s.pb.gz", a, b);
}

static int parse_compact(const char *s, uint64_t *out)
{
	time_t t;

	if (!all_digits(s, 8) || s[8] != 'T' || !all_digits(s + 9, 6) ||
	    s[15] != 'Z' ||
	    civil(digits(s, 4), digits(s + 4, 2), digits(s + 6, 2),
		  digits(s + 9, 2), digits(s + 11, 2), digits(s + 13, 2),
		  &t) < 0 ||
	    t < 0)
		return -EINVAL;
	*out = (uint64_t)t * NS;
	return 0;
}

int vm_history_parse_file_name(const char *name, uint64_t *start_ns,
			       uint64_t *end_ns)
{
	/* cpu- 16 - 16 .pb.gz */
	if (strlen(name) != 4 + 16 + 1 + 16 + 6 || strncmp(name, "cpu-", 4) ||
	    name[20] != '-' || strcmp(name + 37, ".pb.gz"))
		return -EINVAL;
	if (parse_compact(name + 4, start_ns) < 0 ||
	    parse_compact(name + 21, end_ns) < 0 || *end_ns < *start_ns)
		return -EINVAL;
	return 0;
}
