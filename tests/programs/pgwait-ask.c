// SPDX-License-Identifier: Apache-2.0
/*
 * pgwait-ask.c - asks a PostgreSQL server executable itself how it names
 * its wait events, for tests/lib/pg-wait-events.sh: a shared object that,
 * preloaded into the executable (LD_PRELOAD) with VMTOOLS_PGWAIT_ASK=FILE
 * in its environment, calls the executable's own
 * pgstat_get_wait_event_type() and pgstat_get_wait_event() (exported:
 * postgres is linked with --export-dynamic) for every class and every
 * event number, before postgres's main() runs, writes FILE and exits.
 *
 * The names of built-in events are constants of the executable (switch
 * statements, LWLock name arrays); no cluster or shared memory is needed.
 * What does need shared memory is left alone, as a backend would raise an
 * ERROR for it: from 17 on an extension's own events (class Extension
 * past event 0, class InjectionPoint).
 *
 * FILE, one fact a line, as tests/programs/pgwait-dump.c prints the
 * agent's table:
 *
 *	class CLASS TYPE
 *	event CLASS ID NAME
 *	single CLASS NAME         every ID of CLASS is NAME
 *	lwlock_first_extension ID from ID on, LWLocks are "extension"
 *
 * A class whose events 0, 1 and 2 have one name is that name whatever the
 * number (Extension, and BufferPin before 17).  Numbering is taken to end
 * after 64 numbers without a name; a number the executable does not use
 * ("<unassigned:N>", a gap among the LWLocks) has none.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef const char *(*namer)(uint32_t wait_event_info);

static int unnamed(const char *n)
{
	return !n || !strcmp(n, "???") || !strcmp(n, "unknown wait event") ||
	       !strncmp(n, "<unassigned:", 12);
}

static int same(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

static void ask_class(FILE *out, namer event, unsigned cls, const char *type)
{
	uint32_t base = (uint32_t)cls << 24;
	unsigned misses = 0;

	if (!strcmp(type, "InjectionPoint"))
		return;
	/* From 17 on extensions name their own: only event 0 is built in. */
	if (!strcmp(type, "Extension") &&
	    dlsym(RTLD_DEFAULT, "WaitEventExtensionNew")) {
		fprintf(out, "event %u 0 %s\n", cls, event(base));
		return;
	}
	if (same(event(base), event(base | 1)) &&
	    same(event(base), event(base | 2))) {
		fprintf(out, "single %u %s\n", cls, event(base));
		return;
	}
	for (unsigned i = 0; i < 4096; i++) {
		const char *n = event(base | i);

		if (!strcmp(type, "LWLock") && same(n, "extension")) {
			fprintf(out, "lwlock_first_extension %u\n", i);
			return;
		}
		if (unnamed(n)) {
			if (++misses == 64)
				return;
			continue;
		}
		misses = 0;
		fprintf(out, "event %u %u %s\n", cls, i, n);
	}
}

__attribute__((constructor)) static void ask(void)
{
	const char *path = getenv("VMTOOLS_PGWAIT_ASK");
	namer type, event;
	FILE *out;

	if (!path)
		return;
	type = (namer)dlsym(RTLD_DEFAULT, "pgstat_get_wait_event_type");
	event = (namer)dlsym(RTLD_DEFAULT, "pgstat_get_wait_event");
	if (!type || !event) {
		fprintf(stderr,
			"pgwait-ask: the executable does not export "
			"pgstat_get_wait_event_type and "
			"pgstat_get_wait_event: not a PostgreSQL server?\n");
		_exit(2);
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		_exit(2);
	}
	for (unsigned cls = 1; cls < 16; cls++) {
		const char *t = type((uint32_t)cls << 24);

		if (unnamed(t))
			continue;
		fprintf(out, "class %u %s\n", cls, t);
		ask_class(out, event, cls, t);
	}
	_exit(fclose(out) == 0 ? 0 : 2);
}
