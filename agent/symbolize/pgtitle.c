// SPDX-License-Identifier: Apache-2.0
/*
 * pgtitle.c - naming a PostgreSQL process's backend type from its process
 * title (see pgtitle.h).
 *
 * PostgreSQL rewrites its argv area to "postgres: [CLUSTER: ]ACTIVITY"
 * (init_ps_display).  Auxiliary processes and background workers put their
 * type first ("checkpointer", "autovacuum worker DB", "parallel worker for
 * PID 42", "walsender USER HOST ..."); client backends put
 * "USER DATABASE HOST[(PORT)] STATE".  The postmaster keeps its original
 * command line.
 */
#include "agent/symbolize/pgtitle.h"

#include <stddef.h>
#include <string.h>

static const struct {
	const char *prefix; /* title text after "postgres: [cluster: ]" */
	const char *type;
} known[] = {
	{ "checkpointer", "checkpointer" },
	{ "background writer", "background writer" },
	{ "walwriter", "walwriter" },
	{ "autovacuum launcher", "autovacuum launcher" },
	{ "autovacuum worker", "autovacuum worker" },
	{ "archiver", "archiver" },
	{ "stats collector", "stats collector" },
	{ "logger", "logger" },
	{ "startup", "startup" },
	{ "walreceiver", "walreceiver" },
	{ "walsender", "walsender" },
	{ "wal receiver", "walreceiver" },
	{ "wal sender", "walsender" },
	{ "logical replication launcher", "logical replication launcher" },
	{ "logical replication worker", "logical replication worker" },
	{ "logical replication apply worker", "logical replication worker" },
	{ "logical replication tablesync worker",
	  "logical replication worker" },
	{ "parallel worker", "parallel worker" },
	{ "io worker", "io worker" },
	{ "walsummarizer", "walsummarizer" },
	{ "slotsync worker", "slotsync worker" },
};

static const char *match_known(const char *s)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		size_t n = strlen(known[i].prefix);

		if (!strncmp(s, known[i].prefix, n) &&
		    (s[n] == '\0' || s[n] == ' '))
			return known[i].type;
	}
	return NULL;
}

static size_t count_words(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (*s != ' ' && (s[1] == ' ' || s[1] == '\0'))
			n++;
	return n;
}

const char *vm_pg_backend_type(const char *comm, const char *title)
{
	const char *s, *colon, *type;

	if (!title)
		return comm && !strcmp(comm, "postgres") ? "postgres" : NULL;
	if (strncmp(title, "postgres: ", 10)) {
		/* The postmaster keeps its command line. */
		if ((comm && !strcmp(comm, "postgres")) ||
		    strstr(title, "/postgres ") ||
		    !strncmp(title, "postgres ", 9) ||
		    !strcmp(title, "postgres"))
			return "postmaster";
		return NULL;
	}
	s = title + 10;
	type = match_known(s);
	if (type)
		return type;
	/* "postgres: CLUSTER: activity" when cluster_name is set. */
	colon = strstr(s, ": ");
	if (colon && !memchr(s, ' ', colon - s)) {
		s = colon + 2;
		type = match_known(s);
		if (type)
			return type;
	}
	/* USER DATABASE HOST STATE: at least three words. */
	if (count_words(s) >= 3)
		return "client backend";
	return "background worker";
}
