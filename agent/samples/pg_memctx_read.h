/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pg_memctx_read.h - a live PostgreSQL process's memory-context tree,
 * walked (pg_memctx.h) with process_vm_readv on a worker of the I/O pool
 * (pg_memctx_read.c).
 */
#ifndef VMTOOLS_AGENT_PG_MEMCTX_READ_H
#define VMTOOLS_AGENT_PG_MEMCTX_READ_H

#include <stdint.h>

#include "agent/iopool/iopool.h"
#include "agent/samples/pg_memctx.h"

/* How long one process's walk may take, its reads included. */
#define VM_MEMCTX_WALK_MS VM_IOPOOL_READ_MS

/*
 * vm_memctx_walk of process pid, top_ptr the address of TopMemoryContext
 * in it (its executable's load bias applied), on a worker of pool,
 * waited for at most timeout_ms: its return, or the pool's error
 * (-ETIMEDOUT: the walk did not end in time, out is then empty; see
 * vm_iopool_run).  The walk itself stops reading at four fifths of
 * timeout_ms and ends partial with what it read.  Reading needs the right to ptrace pid (the same user,
 * or CAP_SYS_PTRACE): -EPERM when not.  out is the caller's to free.
 */
int vm_pg_memctx_read(struct vm_iopool *pool, uint32_t pid,
		      const struct vm_memctx_tags *tags, uint64_t top_ptr,
		      const struct vm_memctx_limits *lim, unsigned timeout_ms,
		      struct vm_memctx_tree *out);

#endif
