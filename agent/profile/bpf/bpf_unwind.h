/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bpf_unwind.h - the unwind tables one BPF profile gives its programs
 * (bpf_unwind.c; the programs' side is bpf/unwind.bpf.h): a store of rows
 * every profile's programs share, each binary's rows once, and each
 * target process's executable mappings, read from /proc and kept current
 * by a thread of its own as processes start, exec and map new files.
 */
#ifndef VMTOOLS_AGENT_BPF_UNWIND_H
#define VMTOOLS_AGENT_BPF_UNWIND_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bpf/libbpf.h>

#include "agent/binaries/binaries.h"
#include "agent/profile/bpf/bpf_unwind_rows.h"
#include "bpf/unwind.h"
#include "common/error.h"

/*
 * Rows the store holds, 8 bytes each: 8 MiB, PostgreSQL 17 (116,000
 * rows), libc (25,000) and well over 30 libraries; a binary past it is
 * walked by frame pointer, and counted.  Copies of one binary (files
 * whose tables are equal, row for row) share one run of rows, and a
 * binary's rows are given back once no process's entry points at them.
 */
#define VM_BPF_UNWIND_ROWS (1u << 20)
/*
 * The part of the store the processes of one uid may fill (a half): one
 * user's processes, whatever files they map, leave the other half to
 * the rest.  A process whose binaries would pass it is walked by frame
 * pointer there, and counted with the processes past the bounds.
 */
#define VM_BPF_UNWIND_SHARE 2
/*
 * How long rows no process entry points at any more are kept before
 * another binary may have them, in ms: far longer than a walk that read
 * the entry before it went can last.
 */
#define VM_BPF_UNWIND_GRACE_MS 1000
/*
 * Processes with mappings of their own (children share their parent's);
 * past it, and past the UNWIND_MAX_MAPS executable mappings one entry
 * holds (bpf/unwind.h), a process is walked by frame pointer, and
 * counted.
 */
#define VM_BPF_UNWIND_PROCS 16384
/*
 * Processes that asked lately to have their mappings read again, each
 * once until read (a least recently used map: past it, one asks twice).
 */
#define VM_BPF_UNWIND_ASKED 1024

struct vm_bpf_unwind_none;

/*
 * The store (bpf/unwind.h) every profile's programs share, kept from one
 * profile for the next by its owner (the backend's kept state,
 * bpf_kept.h), and what the profiles left out of it, for /healthz.
 */
struct vm_bpf_unwind_store;

/*
 * A store not made yet (its map is made at the first profile) of rows
 * rows, of which one owner may take share (0, 0: VM_BPF_UNWIND_ROWS and
 * its VM_BPF_UNWIND_SHARE-th); NULL: -ENOMEM.
 */
struct vm_bpf_unwind_store *vm_bpf_unwind_store_new(uint32_t rows,
						    uint32_t share);
/* Emptied (vm_bpf_unwind_release) and freed; NULL is nothing. */
void vm_bpf_unwind_store_free(struct vm_bpf_unwind_store *s);

struct vm_bpf_unwind {
	struct vm_bpf_unwind_store *store; /* the rows, shared */
	struct vm_binaries *home; /* where tables are kept; NULL: none */
	struct vm_iopool *iopool; /* what reads the targets' files */
	int procs_fd, asked_fd; /* -1: none */
	int rows_fd; /* the store's, kept for later profiles; -1: none */
	/* The binaries this session gave no rows, each counted once. */
	struct vm_bpf_unwind_none *nones;
	size_t n_nones, cap_nones;
	/*
	 * What went without: binaries past the store or a bound of their
	 * table's build (with functions cut short), processes past maps.
	 */
	uint64_t bins_skipped, procs_skipped;
	char last_skipped[256];
	/* The processes counted in procs_skipped, each once. */
	uint32_t *skipped_pids;
	size_t n_skipped_pids, cap_skipped_pids;
	pthread_mutex_t lock; /* all of the above, and the queue */
	/*
	 * The entries' writes: an entry and the references to the store's
	 * rows it holds change together.
	 */
	pthread_mutex_t entries_lock;
	/* Processes to read again (fed by feeder). */
	uint32_t *queue;
	size_t n_queue, cap_queue;
	pthread_cond_t wake;
	pthread_t feeder;
	bool started, stopping;
	uint64_t swept; /* ms (CLOCK_MONOTONIC): gone entries last dropped */
};

/*
 * The maps, with store's (made now if not yet), before the programs are
 * opened, the tables taken from home (the engine's,
 * agent/binaries/binaries.h; NULL: only the vDSO's), files read on
 * iopool's workers: 0, or a negative errno with err set (the profile
 * goes on without tables).  The store keeps its binaries held in their
 * home until vm_bpf_unwind_release().
 */
int vm_bpf_unwind_open(struct vm_bpf_unwind *u,
		       struct vm_bpf_unwind_store *store,
		       struct vm_binaries *home, struct vm_iopool *iopool,
		       struct vm_error *err);

/* Have obj (opened, not loaded) use the session's maps. */
int vm_bpf_unwind_use(struct vm_bpf_unwind *u, struct bpf_object *obj);

/*
 * Read pid's mappings and give the programs their tables now (ppid: its
 * parent's, 0 when none: a child whose mappings are its parent's needs
 * no entry of its own).
 */
void vm_bpf_unwind_feed(struct vm_bpf_unwind *u, uint32_t pid, uint32_t ppid);

/*
 * The same, later, on the feeder thread (started on first use); at most
 * VM_BPF_UNWIND_QUEUE processes wait.
 */
#define VM_BPF_UNWIND_QUEUE 4096
void vm_bpf_unwind_ask(struct vm_bpf_unwind *u, uint32_t pid, uint32_t ppid);

/* A process gone: its entry goes, and the references it held. */
void vm_bpf_unwind_forget(struct vm_bpf_unwind *u, uint32_t pid);

struct vm_bpf_unwind_stats {
	uint64_t bins, rows; /* runs of rows in the store, rows given out */
	uint64_t bins_skipped, procs_skipped;
};

void vm_bpf_unwind_stats(struct vm_bpf_unwind *u,
			 struct vm_bpf_unwind_stats *out);
/* The runs of rows s holds and the rows they take. */
void vm_bpf_unwind_store_usage(struct vm_bpf_unwind_store *s, uint64_t *runs,
			       uint64_t *rows);

/*
 * The kernel refused the programs with the unwinder (why: its verifier's
 * last words): kept in s for /healthz, which says stacks are walked by
 * frame pointer.  vm_bpf_unwind_refusal: the last such sentence, "" if
 * none.
 */
void vm_bpf_unwind_refused(struct vm_bpf_unwind_store *s, const char *why);
/*
 * Binaries the sessions using s left without tables (past the store,
 * code spanning 4 GiB) and the last one's path and why, "" if none.
 */
void vm_bpf_unwind_skipped(struct vm_bpf_unwind_store *s, uint64_t *n,
			   char *last, size_t size);
/*
 * Processes the sessions using s walked by frame pointer, wholly (past
 * VM_BPF_UNWIND_PROCS), past their first UNWIND_MAX_MAPS executable
 * mappings, or in binaries past their owner's share of the store, and
 * the last one's pid, name and why, "" if none.
 */
void vm_bpf_unwind_procs_skipped(struct vm_bpf_unwind_store *s, uint64_t *n,
				 char *last, size_t size);
void vm_bpf_unwind_refusal(struct vm_bpf_unwind_store *s, char *buf,
			   size_t size);
/*
 * n more walks the sessions using s cut short (a read that failed, no
 * progress, off the stack or the code); vm_bpf_unwind_cuts: how many
 * so far.
 */
void vm_bpf_unwind_cut(struct vm_bpf_unwind_store *s, uint64_t n);
uint64_t vm_bpf_unwind_cuts(struct vm_bpf_unwind_store *s);

/* The feeder stopped, the tables released, the maps closed. */
void vm_bpf_unwind_close(struct vm_bpf_unwind *u);
/*
 * The store, kept from one profile for the next, emptied and its map
 * closed when no profile uses it (the agent stopping); what it says for
 * /healthz stays.
 */
void vm_bpf_unwind_release(struct vm_bpf_unwind_store *s);

#endif
