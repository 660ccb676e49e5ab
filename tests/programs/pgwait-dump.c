// SPDX-License-Identifier: Apache-2.0
/*
 * pgwait-dump.c - prints the agent's wait-event table of one PostgreSQL
 * major version (agent/symbolize/pgwait_NN.c) as the facts that
 * tests/lib/pg-wait-events.sh asks a running PostgreSQL of that version
 * for, one a line, so tests/integration/36-pg-versions.sh can compare
 * them whole:
 *
 *	class CLASS TYPE
 *	event CLASS ID NAME
 *	single CLASS NAME
 *	lwlock_first_extension ID
 *	query_id_offset N
 *
 * usage: pgwait-dump MAJOR   (exit 1 when the agent has no table for it)
 */
#include <stdio.h>
#include <stdlib.h>

#include "agent/symbolize/pgwait.h"

int main(int argc, char **argv)
{
	const struct vm_pg_layout *l;

	if (argc != 2) {
		fprintf(stderr, "usage: pgwait-dump MAJOR\n");
		return 2;
	}
	l = vm_pg_layout((unsigned)strtoul(argv[1], NULL, 10));
	if (!l) {
		fprintf(stderr, "pgwait-dump: no table for PostgreSQL %s\n",
			argv[1]);
		return 1;
	}
	for (unsigned c = 0; c < VM_PG_CLASSES; c++) {
		if (!l->classes[c])
			continue;
		printf("class %u %s\n", c, l->classes[c]);
		if (l->single[c])
			printf("single %u %s\n", c, l->single[c]);
		for (size_t i = 0; i < l->events[c].n; i++)
			if (l->events[c].names[i])
				printf("event %u %zu %s\n", c, i,
				       l->events[c].names[i]);
	}
	printf("lwlock_first_extension %u\n", l->lwlock_first_extension);
	printf("query_id_offset %u\n", l->query_id_offset);
	return 0;
}
