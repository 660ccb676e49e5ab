/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_pg.h - telling the BPF programs where a PostgreSQL backend keeps its
 * wait event and query id (bpf_pg.c, bpf/pg.h), reading them there from
 * user space too, and remembering why a PostgreSQL process gets no such
 * labels, for /healthz.  What is read from a server executable is its
 * PostgreSQL facet in the agent's home of binaries
 * (agent/binaries/binaries.h), read once per file whatever the backends
 * and sessions that ask.
 */
#ifndef VMTOOLS_AGENT_BPF_PG_H
#define VMTOOLS_AGENT_BPF_PG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "agent/binaries/binaries.h"
#include "agent/iopool/iopool.h"
#include "agent/samples/sample.h"
#include "agent/symbolize/elf_objects.h"
#include "bpf/pg.h"

/*
 * A PostgreSQL server executable's facts (the facet VM_BINARY_PG of its
 * file): link-time addresses of the globals the labels start from, its
 * release, and the file's segments to move them by a mapping's bias.  A
 * file without my_wait_event_info has no such facet (NULL).
 */
struct vm_pg_facts {
	uint64_t wait_event_vaddr, be_entry_vaddr;
	/* TopMemoryContext, for memory profiles; 0: the file exports none. */
	uint64_t top_memory_context_vaddr;
	unsigned release_major, release_minor; /* pgrelease.h */
	struct vm_elf_objects objects;
};

/*
 * Why the labels were left out of the last profile that saw a PostgreSQL
 * of an unknown version (empty: no such profile yet), kept for /healthz
 * by the backend's state for the agent's life (bpf_kept.h).
 */
struct vm_pg_labels_note {
	pthread_mutex_t lock;
	char text[256];
};

void vm_pg_labels_note_init(struct vm_pg_labels_note *n);
void vm_pg_labels_note_destroy(struct vm_pg_labels_note *n);
/* The note into buf. */
void vm_pg_labels_note(struct vm_pg_labels_note *n, char *buf, size_t size);

/*
 * Where process p (captured, alive) keeps its labels, in out, and its
 * major version in p->pg_major, its minor release in p->pg_minor, its
 * executable's facts taken from home (NULL: read for this call only),
 * files read on pool's workers.
 * 0; -ENOENT when p is not PostgreSQL (no PG_VERSION in its working
 * directory, no my_wait_event_info in its executable); -EOPNOTSUPP when
 * its version has no table (the reason is kept in note).
 */
int vm_bpf_pg_locate(struct vm_iopool *pool, struct vm_binaries *home,
		     struct vm_pg_labels_note *note, const char *proc_root,
		     struct vm_process *p, struct pg_proc *out);

/*
 * The same for a process not captured yet, its executable's mapping read
 * from /proc/PID/maps: quick enough for before the programs attach.
 */
int vm_bpf_pg_locate_pid(struct vm_iopool *pool, struct vm_binaries *home,
			 struct vm_pg_labels_note *note, const char *proc_root,
			 uint32_t pid, struct pg_proc *out);

/*
 * The same for a memory snapshot of p (not captured: its executable's
 * mapping read from /proc/PID/maps), and in *top where its
 * TopMemoryContext is (0 when its executable exports none); p->pg_major
 * and p->pg_minor set as vm_bpf_pg_locate() does.
 */
int vm_bpf_pg_locate_memory(struct vm_iopool *pool, struct vm_binaries *home,
			    struct vm_pg_labels_note *note,
			    const char *proc_root, struct vm_process *p,
			    struct pg_proc *out, uint64_t *top);

/*
 * The wait_event_info and the query id PostgreSQL process pid shows now,
 * read from its memory where pp says (bpf/pg.h), as the programs read
 * them (bpf/pglabels.bpf.h); each 0 when unknown, all 0 when pp is NULL.
 */
void vm_bpf_pg_read_labels(uint32_t pid, const struct pg_proc *pp,
			   uint32_t *wait_event, uint64_t *query_id);

/* The major version in a PG_VERSION file's text ("15\n"), 0 if none. */
unsigned vm_pg_parse_version(const char *text, size_t len);

#endif
