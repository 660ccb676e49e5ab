/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind_cache.h - the unwind tables of the binaries targets map
 * (unwind_table.h), each built once and kept as its binary's unwind facet
 * in the agent's home of binaries (agent/binaries/binaries.h), like its
 * symbols (unwind_cache.c): a binary first seen costs one build, whatever
 * the processes, sessions and backends that use it after.
 *
 * A table is known by its file's identity (device, inode, size,
 * modification time), never by the build id the file claims: a copy of a
 * binary is another file, with a table of its own.  Memory is bounded
 * with every other facet of the home: a table that would pass the bound
 * first evicts entries no one holds, least recently used first, and is
 * skipped (its binary walked by frame pointer) when that is not enough;
 * /healthz and /metrics count both.
 */
#ifndef VMTOOLS_AGENT_UNWIND_CACHE_H
#define VMTOOLS_AGENT_UNWIND_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/binaries/binaries.h"
#include "agent/iopool/iopool.h"
#include "agent/unwind/unwind_table.h"

struct vm_unwind_cache_stats {
	uint64_t tables; /* tables held */
	uint64_t bytes; /* memory they hold */
	uint64_t max_bytes; /* the bound, the home's for every facet */
	uint64_t builds; /* tables built since start */
	uint64_t hits; /* asks answered from the cache */
	uint64_t skipped; /* binaries left without one: past the bound */
	char last_skipped[448]; /* the last one's path and why, "" if none */
};

/*
 * The table of the ELF file open on fd (what: its path, for messages),
 * read on pool's workers, built on the first ask and kept in h; NULL when
 * it has none (no call frame information, unreadable, or past a bound:
 * counted in skipped).  A build past a bound of unwind_table.h (rows,
 * CPU time, or a function's rows: then a table with those functions cut
 * short) is noted in h's skipped list and, for the ask that built it, in
 * skip (may be NULL): why, a sentence without the path.
 * With a table, *held is its binary's entry, held so that the table stays
 * valid until vm_binaries_put(h, *held); without, *held is NULL.  The
 * file is read on an I/O pool worker (agent/iopool/iopool.h) with a
 * deadline, outside the home's lock: a file on a frozen mount costs its
 * table, not the caller.
 */
const struct vm_unwind_table *vm_unwind_cache_get(struct vm_iopool *pool,
						  struct vm_binaries *h, int fd,
						  const char *what,
						  struct vm_binary **held,
						  struct vm_error *skip);

void vm_unwind_cache_stats(struct vm_binaries *h,
			   struct vm_unwind_cache_stats *out);

#endif
