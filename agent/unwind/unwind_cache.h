/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind_cache.h - the unwind tables of the binaries targets map
 * (unwind_table.h), built once and kept for the agent's life, like the
 * symbol cache (unwind_cache.c): a binary first seen costs one build,
 * whatever the processes, sessions and backends that use it after.
 *
 * A table is known by its file's GNU build id, so two copies of one
 * binary (another container's, a path that moved) share it; a file
 * without one is known by device, inode, size and modification time.
 * Memory is bounded (VM_UNWIND_CACHE_MAX_BYTES): a table that would pass
 * the bound first evicts those no session holds, least recently used
 * first, and is skipped (its binary walked by frame pointer) when that is
 * not enough; /healthz and /metrics count both.
 */
#ifndef VMTOOLS_AGENT_UNWIND_CACHE_H
#define VMTOOLS_AGENT_UNWIND_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/unwind/unwind_table.h"

/*
 * 256 MiB: PostgreSQL 17's postgres (116,000 rows, 2.8 MiB), libc
 * (25,000) and 30 libraries take under 10 MiB; libLLVM, which a JIT-using
 * backend maps, about 24 MiB.
 */
#define VM_UNWIND_CACHE_MAX_BYTES (256u << 20)
/* Binaries remembered, with a table or known to have none. */
#define VM_UNWIND_CACHE_MAX_ENTRIES 4096

struct vm_unwind_cache_stats {
	uint64_t tables; /* tables held */
	uint64_t bytes; /* memory they hold */
	uint64_t max_bytes; /* the bound */
	uint64_t builds; /* tables built since start */
	uint64_t hits; /* asks answered from the cache */
	uint64_t skipped; /* binaries left without one: past the bound */
	char last_skipped[256]; /* the last one's path and why, "" if none */
};

/*
 * The table of the ELF file open on fd (what: its path, for messages),
 * built on the first ask and kept; NULL when it has none (no call frame
 * information, unreadable, or past the bound: counted in skipped).  The
 * pointer stays valid until vm_unwind_cache_put().  The file is read on
 * an I/O pool worker (agent/iopool/iopool.h) with a deadline, outside the
 * cache's lock: a file on a frozen mount costs its table, not the caller.
 */
const struct vm_unwind_table *vm_unwind_cache_get(int fd, const char *what);
void vm_unwind_cache_put(const struct vm_unwind_table *t);

void vm_unwind_cache_stats(struct vm_unwind_cache_stats *out);
/* Tests: another bound. */
void vm_unwind_cache_set_limit(size_t max_bytes);
/* Shutdown, tests: the tables no one holds dropped. */
void vm_unwind_cache_clear(void);

#endif
