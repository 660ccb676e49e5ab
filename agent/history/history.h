/* SPDX-License-Identifier: Apache-2.0 */
/*
 * history.h - the windows of continuous profiling kept in memory, compact,
 * for GET /profile/cpu/history and its merged profiles (history.c).
 *
 * A window is a list of (stack, count) pairs.  Stacks, their frames, the
 * mappings and every string are interned once for the whole history, so an
 * hour of windows of a steady workload costs little more than its distinct
 * stacks; what no window uses any more is dropped by a compaction when old
 * windows go.  The history is bounded by age (max_seconds, counted back
 * from the newest window's end) and by size (max_bytes, what the tables
 * and windows take): the oldest windows go first.
 *
 * Windows come in symbolized (vm_history_add, from a sealed window of the
 * engine) or as pprof read back from disk (history_pprof.c); they go out
 * merged, as the struct vm_symbolized the encoders take, for any span.
 * Every function takes the history's lock: one thread adds while others
 * ask.
 */
#ifndef VMTOOLS_AGENT_HISTORY_H
#define VMTOOLS_AGENT_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/symbolize/symbolize.h"
#include "common/error.h"

#define VM_HISTORY_DEFAULT_SECONDS 3600
#define VM_HISTORY_DEFAULT_BYTES (32u << 20)

struct vm_history_config {
	uint32_t max_seconds;
	uint64_t max_bytes;
	/*
	 * What its windows are: CPU windows (VM_KIND_CPU), or memory
	 * snapshots (VM_KIND_MEMORY), each kept with its bytes and contexts
	 * per stack and its comment, answered one at a time
	 * (vm_history_nearest) or two compared (vm_history_growth).
	 */
	enum vm_profile_kind kind;
};

/* One window as the index shows it; times are Unix nanoseconds. */
struct vm_history_window {
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t samples;
	uint64_t lost;
	uint32_t frequency;
};

struct vm_history_index {
	struct vm_history_window *v; /* oldest first, malloc'd */
	size_t n;
	uint64_t bytes;
	uint64_t dropped; /* windows dropped for age or size, ever */
};

struct vm_history;

int vm_history_new(const struct vm_history_config *cfg, struct vm_history **out,
		   struct vm_error *err);
void vm_history_free(struct vm_history *h);

/*
 * Keep a window: y symbolized from its samples (engine's
 * vm_session_seal()); w says when it was.  Then drop what is too old or
 * too much.  0 or -ENOMEM.
 */
int vm_history_add(struct vm_history *h, const struct vm_history_window *w,
		   const struct vm_symbolized *y, struct vm_error *err);

/* A copy of the index; free idx->v. */
int vm_history_get_index(struct vm_history *h, struct vm_history_index *idx);

/* Bytes the history takes now, and windows dropped so far. */
void vm_history_usage(struct vm_history *h, uint64_t *bytes, uint64_t *dropped);

/*
 * Called with the windows overlapping [from_ns, until_ns) merged into one
 * profile; y and what it points to are valid during the call only (they
 * are the merge's own copy: fn runs without the history's lock, so
 * sealing and other readers do not wait for it).  span says from when to
 * when the merged windows go.  Returns what fn returns, or -ENOENT
 * (nothing stored there, with a sentence), -EBUSY (VM_HISTORY_MERGES_MAX
 * merges under way already), -ENOMEM.
 */
typedef int vm_history_use_fn(const struct vm_symbolized *y,
			      const struct vm_history_window *span, void *ctx,
			      struct vm_error *err);
int vm_history_merge(struct vm_history *h, uint64_t from_ns, uint64_t until_ns,
		     vm_history_use_fn *fn, void *ctx, struct vm_error *err);

/*
 * A memory history's answers, as vm_history_merge's (same fn, -ENOENT,
 * -EBUSY, -ENOMEM):
 *
 * vm_history_nearest: the one snapshot nearest at_ns (the one holding
 * it, else the closest in time), its comment saying when it was taken.
 *
 * vm_history_growth: the snapshot nearest until_ns minus the one nearest
 * from_ns, per pid and context path (the labels that change while a
 * context stays, wait event, query id and ident, are left out; the rest
 * come from the later snapshot): y's samples have signed_values, a
 * negative value being memory given back; paths that did not change are
 * left out; the comment says which two snapshots were compared.  One
 * snapshot nearest both times is -ENOENT with a sentence.
 */
int vm_history_nearest(struct vm_history *h, uint64_t at_ns,
		       vm_history_use_fn *fn, void *ctx, struct vm_error *err);
int vm_history_growth(struct vm_history *h, uint64_t from_ns, uint64_t until_ns,
		      vm_history_use_fn *fn, void *ctx, struct vm_error *err);

/*
 * pprof (gzipped or not, as vm_pprof_encode writes it) back into a window
 * of the history: the files of --history-dir at start-up.  w says when
 * the file's name puts it; the profile's finer times win when they agree.  The bytes are
 * not trusted: anything malformed is -EINVAL with a sentence, and nothing
 * is kept (history_pprof.c).
 */
int vm_history_add_pprof(struct vm_history *h,
			 const struct vm_history_window *w, const void *data,
			 size_t len, struct vm_error *err);

/* Largest file vm_history_add_pprof() reads, packed and unpacked. */
#define VM_HISTORY_MAX_FILE (8u << 20)
#define VM_HISTORY_MAX_UNPACKED (32u << 20)
/*
 * Merged answers built at once, at most: each takes memory in proportion
 * to the history (8 folded merges of a 30 MB history took 1.49 GB).
 */
#define VM_HISTORY_MERGES_MAX 2
/* What reading one file may allocate, at most. */
#define VM_HISTORY_MAX_DECODED (128u << 20)

#endif
