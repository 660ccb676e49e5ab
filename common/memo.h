/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memo.h - a fixed-size, direct-mapped memo (memo.c): keys of three
 * 64-bit words to a nonzero 64-bit value, for work repeated with the same
 * arguments many times in a row (naming the same frame in every stack
 * of a window, finding its pprof location again).
 *
 * Each key has one slot, picked by a hash of it; a key put where another
 * was takes the slot over.  So a lookup is one probe whatever the keys:
 * a set of keys that collide (a hostile process's addresses) only makes
 * the memo miss, and the caller does the work it would have done
 * without one.  Nothing to grow, nothing to fail after init.
 *
 *	struct vm_memo m;
 *	if (vm_memo_init(&m, 14) < 0) ... out of memory ...
 *	if (!vm_memo_get(&m, a, b, c, &v)) { v = work(); vm_memo_put(&m, a, b, c, v); }
 *	vm_memo_free(&m);
 */
#ifndef VMTOOLS_COMMON_MEMO_H
#define VMTOOLS_COMMON_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vm_memo_slot {
	uint64_t key[3];
	uint64_t value; /* 0: empty */
};

struct vm_memo {
	struct vm_memo_slot *slots;
	unsigned bits; /* 1 << bits slots */
};

/* A memo of 1 << bits slots (at most 24): 0, or -ENOMEM. */
int vm_memo_init(struct vm_memo *m, unsigned bits);

void vm_memo_free(struct vm_memo *m);

/* Forget every key. */
void vm_memo_clear(struct vm_memo *m);

/* The value put for (a, b, c) in *value, if its slot still holds it. */
bool vm_memo_get(const struct vm_memo *m, uint64_t a, uint64_t b, uint64_t c,
		 uint64_t *value);

/* Remember value (nonzero) for (a, b, c), in place of its slot's key. */
void vm_memo_put(struct vm_memo *m, uint64_t a, uint64_t b, uint64_t c,
		 uint64_t value);

/*
 * A key word for the len bytes at s, for memoizing by content: different
 * strings may share it, so a hit names a candidate the caller compares.
 * Seeded at random once per process, as vm_memo_hash(): also a hash for
 * tables whose keys others choose.
 */
uint64_t vm_memo_bytes_key(const void *s, size_t len);

/* A hash of three words, seeded at random once per process. */
uint64_t vm_memo_hash(uint64_t a, uint64_t b, uint64_t c);

#endif
