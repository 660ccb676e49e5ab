// SPDX-License-Identifier: Apache-2.0
/*
 * pgwait-dump.c - prints the agent's wait-event table of one PostgreSQL
 * major version (agent/symbolize/pgwait_NN.c) as one minor release of it
 * names its events, as the facts that tests/lib/pg-wait-events.sh asks a
 * running PostgreSQL for, one a line, so
 * tests/integration/36-pg-versions.sh can compare them whole:
 *
 *	class CLASS TYPE
 *	event CLASS ID NAME
 *	single CLASS NAME
 *	lwlock_first_extension ID
 *	query_id_offset N
 *
 * An event the table names by number for that release (renamed in a
 * release that was not checked) is left out.  With --release-of, prints
 * instead the minor release the agent reads from a server executable
 * (agent/symbolize/pgrelease.c), "unknown" when it finds none.
 *
 * usage: pgwait-dump MAJOR[.MINOR]   (MINOR: the table's own release)
 *        pgwait-dump --release-of EXECUTABLE MAJOR
 * Exit 1 when the agent has no table for MAJOR.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/symbolize/pgrelease.h"
#include "agent/symbolize/pgwait.h"

static int release_of(const char *exe, const char *major)
{
	int fd = open(exe, O_RDONLY | O_CLOEXEC);
	unsigned minor;

	if (fd < 0) {
		perror(exe);
		return 1;
	}
	minor = vm_pg_release_of_fd(fd, (unsigned)strtoul(major, NULL, 10));
	close(fd);
	if (minor == VM_PG_MINOR_UNKNOWN)
		printf("unknown\n");
	else
		printf("%s.%u\n", major, minor);
	return 0;
}

/* Event id of class c as release minor names it, or nothing. */
static void event(const struct vm_pg_layout *l, unsigned minor, unsigned c,
		  size_t id)
{
	char buf[128];
	const char *name;

	if (!vm_pg_wait_event_name(l, minor, (uint32_t)(c << 24 | id), buf,
				   sizeof(buf)))
		return;
	name = strchr(buf, ':') + 1;
	if (strncmp(name, "<unknown ", 9))
		printf("event %u %zu %s\n", c, id, name);
}

int main(int argc, char **argv)
{
	const struct vm_pg_layout *l;
	unsigned minor;
	char *dot;

	if (argc == 4 && !strcmp(argv[1], "--release-of"))
		return release_of(argv[2], argv[3]);
	if (argc != 2) {
		fprintf(stderr,
			"usage: pgwait-dump MAJOR[.MINOR]\n"
			"       pgwait-dump --release-of EXECUTABLE MAJOR\n");
		return 2;
	}
	l = vm_pg_layout((unsigned)strtoul(argv[1], &dot, 10));
	if (!l) {
		fprintf(stderr, "pgwait-dump: no table for PostgreSQL %s\n",
			argv[1]);
		return 1;
	}
	if (*dot != '.')
		dot = strchr(l->written_from, '.');
	minor = (unsigned)strtoul(dot + 1, NULL, 10);
	for (unsigned c = 0; c < VM_PG_CLASSES; c++) {
		if (!l->classes[c])
			continue;
		printf("class %u %s\n", c, l->classes[c]);
		if (l->single[c])
			printf("single %u %s\n", c, l->single[c]);
		for (size_t i = 0; i < l->events[c].n; i++)
			if (l->events[c].names[i])
				event(l, minor, c, i);
	}
	printf("lwlock_first_extension %u\n", l->lwlock_first_extension);
	printf("query_id_offset %u\n", l->query_id_offset);
	return 0;
}
