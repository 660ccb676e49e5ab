/* SPDX-License-Identifier: Apache-2.0 */
/*
 * binaries.h - one home for what the agent knows about each binary its
 * targets map (binaries.c), the way perf keeps one `struct dso` per file
 * and the OpenTelemetry eBPF profiler one record per file: an entry per
 * file identity (device, inode, size, modification time), with facets
 * the layers above fill lazily, each the first time it is needed:
 *
 *   VM_BINARY_SYMBOLS   the binary's symbols (agent/symbolize/)
 *   VM_BINARY_UNWIND    its unwind table (agent/unwind/unwind_cache.h)
 *   VM_BINARY_PG        PostgreSQL facts: its release, where its labels
 *                       are, and its memory-context entry point
 *                       (agent/profile/bpf/bpf_pg.h)
 *
 * The key is the file's identity, never a build id its owner writes:
 * two files claiming one build id do not share what was read from one.
 * The home knows nothing of what a facet holds; a layer above gives each
 * facet it fills its size and how to free it, so includes point down.
 *
 * One lock guards the entries.  A caller holds an entry
 * (vm_binaries_hold) while it reads or fills its facets and puts it back
 * after; a facet once filled stays while the entry lives, so a holder
 * reads it without the lock (what a layer above completes later, as the
 * symbol cache merges a debug file that arrived, it does under its own
 * lock, and says so with vm_binary_resize).  Files are read outside the lock (on
 * the I/O pool), and a fill that lost a race to another keeps the first.
 *
 * Memory is bounded together: all facets of all entries by max_bytes,
 * entries by max_entries.  Making room evicts whole entries no one holds,
 * least recently used first; a facet that still does not fit is left out
 * (its file is read again next time) and noted in the one list of
 * skipped files /healthz shows.
 */
#ifndef VMTOOLS_AGENT_BINARIES_H
#define VMTOOLS_AGENT_BINARIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/*
 * 768 MiB: what the symbols (512 MiB) and the unwind tables (256 MiB)
 * were each bounded by before they shared a home.
 */
#define VM_BINARIES_MAX_BYTES ((size_t)768 << 20)
/* Binaries remembered, with facets or known to have none. */
#define VM_BINARIES_MAX_ENTRIES 4096
/* The last files skipped, kept for /healthz. */
#define VM_BINARIES_SKIPPED_KEPT 8

enum vm_binary_facet {
	VM_BINARY_SYMBOLS,
	VM_BINARY_UNWIND,
	VM_BINARY_PG,
	VM_BINARY_FACETS
};

/* A file as fstat() knows it. */
struct vm_binary_key {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
};

void vm_binary_key_of(const struct stat *st, struct vm_binary_key *k);

struct vm_binary {
	struct vm_binary_key key;
	void *facet[VM_BINARY_FACETS]; /* NULL: none, or not filled yet */
	bool filled[VM_BINARY_FACETS]; /* facet[] is the answer */
	size_t bytes[VM_BINARY_FACETS];
	void (*free_facet[VM_BINARY_FACETS])(void *data);
	uint64_t refs; /* holders */
	uint64_t used; /* when last held, in holds */
};

struct vm_binaries_limits {
	size_t max_bytes; /* 0: VM_BINARIES_MAX_BYTES */
	size_t max_entries; /* 0: VM_BINARIES_MAX_ENTRIES */
};

/* A file left without a facet, and why (one sentence). */
struct vm_binaries_skip {
	enum vm_binary_facet facet;
	char file[256];
	char reason[160];
};

struct vm_binaries_stats {
	uint64_t entries, bytes, max_bytes, max_entries;
	struct {
		uint64_t filled; /* entries with this facet */
		uint64_t bytes; /* what those take */
		uint64_t fills; /* facets filled since start */
		uint64_t hits; /* asks answered by a facet filled before */
		uint64_t skipped; /* files left without it since start */
	} facet[VM_BINARY_FACETS];
};

struct vm_binaries;

/* A new, empty home (lim NULL: the defaults); NULL when out of memory. */
struct vm_binaries *vm_binaries_new(const struct vm_binaries_limits *lim);
/* Every entry and facet freed; entries still held are a caller's bug. */
void vm_binaries_free(struct vm_binaries *h);

/*
 * The entry of the file k, made when there is none, held until
 * vm_binaries_put(); NULL when out of memory or when every one of
 * max_entries is held.
 */
struct vm_binary *vm_binaries_hold(struct vm_binaries *h,
				   const struct vm_binary_key *k);
void vm_binaries_put(struct vm_binaries *h, struct vm_binary *b);

/*
 * Whether facet f of the held entry b is filled: then *data is it (NULL:
 * the file has none), and the ask counts as a hit.
 */
bool vm_binary_facet(struct vm_binaries *h, struct vm_binary *b,
		     enum vm_binary_facet f, void **data);

/*
 * Fill facet f of the held entry b with data (NULL: the file has none)
 * taking bytes, which free_data frees.  When another filled it meanwhile,
 * data is freed and theirs kept.  When bytes do not fit beside every
 * entry held (after evicting those unheld), data is freed, the facet is
 * left unfilled, file (its path) is noted as skipped with a sentence
 * naming what (e.g. "unwind table") and the bound, and -EFBIG returned.
 * *out (may be NULL) is then the facet as it stands.
 */
int vm_binary_fill(struct vm_binaries *h, struct vm_binary *b,
		   enum vm_binary_facet f, void *data, size_t bytes,
		   void (*free_data)(void *data), const char *what,
		   const char *file, void **out);

/*
 * What one more facet may take, at most want, after evicting unheld
 * entries to make room: for a reader that stops at a bound instead of
 * learning its size after (the entry it fills is held, so not evicted).
 */
size_t vm_binaries_room(struct vm_binaries *h, size_t want);

/*
 * The held entry b's facet f grew or shrank to bytes (a facet a layer
 * above completes later, under its own lock): counted against the bound
 * from now on, which it may pass until entries are evicted.
 */
void vm_binary_resize(struct vm_binaries *h, struct vm_binary *b,
		      enum vm_binary_facet f, size_t bytes);

/*
 * Every entry whose facet f is filled with data, held, into *out
 * (malloc'd, the caller frees it after putting each back); how many.
 */
size_t vm_binaries_hold_filled(struct vm_binaries *h, enum vm_binary_facet f,
			       struct vm_binary ***out);

/*
 * Whether an entry of device dev and inode ino (whatever its size and
 * mtime) has facet f filled: what a caller may skip opening the file for.
 */
bool vm_binaries_has(struct vm_binaries *h, enum vm_binary_facet f,
		     uint64_t dev, uint64_t ino);

/* Note a file left without facet f, and why (a facet that stopped short). */
void vm_binaries_skip(struct vm_binaries *h, enum vm_binary_facet f,
		      const char *file, const char *reason);

void vm_binaries_stats(struct vm_binaries *h, struct vm_binaries_stats *out);

/*
 * The files skipped most recently, newest first, those of facet f only
 * (VM_BINARY_FACETS: all), at most max of them into out, *n_out written.
 */
void vm_binaries_skipped(struct vm_binaries *h, enum vm_binary_facet f,
			 struct vm_binaries_skip *out, size_t max,
			 size_t *n_out);

#endif
