/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_pg.h - telling the BPF programs where a PostgreSQL backend keeps its
 * wait event and query id (bpf_pg.c, bpf/pg.h), reading them there from
 * user space too, and remembering why a PostgreSQL process gets no such
 * labels, for /healthz.
 */
#ifndef VMTOOLS_AGENT_BPF_PG_H
#define VMTOOLS_AGENT_BPF_PG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "agent/samples/sample.h"
#include "bpf/pg.h"

/* The last executable read, so that every backend does not read it. */
struct vm_pg_cache {
	uint64_t dev, ino, mtime_ns;
	uint64_t wait_event_vaddr, be_entry_vaddr;
	unsigned release_major, release_minor; /* pgrelease.h, once read */
	bool valid;
	void *objects; /* struct vm_elf_objects, malloc'd */
};

/*
 * Where process p (captured, alive) keeps its labels, in out, and its
 * major version in p->pg_major, its minor release in p->pg_minor.  0; -ENOENT when p is not PostgreSQL
 * (no PG_VERSION in its working directory, no my_wait_event_info in its
 * executable); -EOPNOTSUPP when its version has no table (the reason is
 * kept for vm_pg_labels_note()).
 */
int vm_bpf_pg_locate(struct vm_pg_cache *c, const char *proc_root,
		     struct vm_process *p, struct pg_proc *out);

/*
 * The same for a process not captured yet, its executable's mapping read
 * from /proc/PID/maps: quick enough for before the programs attach.
 */
int vm_bpf_pg_locate_pid(struct vm_pg_cache *c, const char *proc_root,
			 uint32_t pid, struct pg_proc *out);

/*
 * The wait_event_info and the query id PostgreSQL process pid shows now,
 * read from its memory where pp says (bpf/pg.h), as the programs read
 * them (bpf/pglabels.bpf.h); each 0 when unknown, all 0 when pp is NULL.
 */
void vm_bpf_pg_read_labels(uint32_t pid, const struct pg_proc *pp,
			   uint32_t *wait_event, uint64_t *query_id);

void vm_pg_cache_free(struct vm_pg_cache *c);

/*
 * Why the labels were left out of the last profile that saw a PostgreSQL
 * of an unknown version, into buf (empty: no such profile yet).
 */
void vm_pg_labels_note(char *buf, size_t size);

/* The major version in a PG_VERSION file's text ("15\n"), 0 if none. */
unsigned vm_pg_parse_version(const char *text, size_t len);

#endif
