// SPDX-License-Identifier: Apache-2.0
/*
 * pg-status-offset.c - where a PostgreSQL backend keeps its query id in
 * its status entry, held at compile time to the agent's table
 * (agent/symbolize/pgwait_NN.c's query_id_offset, passed as
 * -DPG_QUERY_ID_OFFSET=N): compiled, never run, by another
 * architecture's compiler against that architecture's server headers
 * (tests/integration/23-cross-arm64.sh: arm64's, from
 * postgresql-server-dev-15:arm64), so the offset is checked for it, not
 * assumed.  An offset that differs fails the compile.
 */
#include "postgres.h"

#include <stddef.h>

#include "utils/backend_status.h"

_Static_assert(offsetof(PgBackendStatus, st_query_id) == PG_QUERY_ID_OFFSET,
	       "st_query_id is where the agent's table says");

int pg_status_offset_checked;
