/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * pg.h - where a PostgreSQL backend keeps its wait event and query id, as
 * user space (agent/profile/bpf/bpf_pg.c) tells the BPF programs
 * (pglabels.bpf.h) per process.
 *
 * Both globals are pointers exported in the postgres executable's .dynsym:
 * `my_wait_event_info` (uint32 *, the backend's PGPROC->wait_event_info)
 * and `MyBEEntry` (PgBackendStatus *, whose st_query_id is at an offset
 * that depends on PostgreSQL's major version).  Addresses are the
 * process's own, the pointers' addresses, not their values: the values
 * change when a backend attaches to shared memory.
 */
#ifndef VMTOOLS_BPF_PG_H
#define VMTOOLS_BPF_PG_H

#define PG_MAX_PROCS 16384

struct pg_proc {
	__u64 wait_event_ptr; /* &my_wait_event_info; 0: not known */
	__u64 be_entry_ptr; /* &MyBEEntry; 0: no query id for this version */
	__u32 query_id_off; /* offsetof(PgBackendStatus, st_query_id) */
	__u32 pad;
};

#endif
