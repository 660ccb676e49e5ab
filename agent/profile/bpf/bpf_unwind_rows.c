// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_unwind_rows.c - the unwind store's free rows (bpf_unwind_rows.h).
 * The store holds a few hundred binaries at most, so a sorted array of
 * free runs, searched from its start, is all it needs.
 */
#include "agent/profile/bpf/bpf_unwind_rows.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"

int vm_bpf_rows_init(struct vm_bpf_rows *r, uint32_t size)
{
	memset(r, 0, sizeof(*r));
	r->size = size;
	if (!size)
		return 0;
	if (vm_grow(r->free, &r->cap_free, 1))
		return -ENOMEM;
	r->free[r->n_free++] = (struct vm_bpf_rows_run){ 0, size };
	return 0;
}

void vm_bpf_rows_destroy(struct vm_bpf_rows *r)
{
	free(r->free);
	memset(r, 0, sizeof(*r));
}

int vm_bpf_rows_take(struct vm_bpf_rows *r, uint32_t n, uint32_t *at)
{
	for (size_t i = 0; i < r->n_free; i++) {
		struct vm_bpf_rows_run *f = &r->free[i];

		if (f->n < n)
			continue;
		*at = f->at;
		f->at += n;
		f->n -= n;
		if (!f->n) {
			r->n_free--;
			memmove(f, f + 1, (r->n_free - i) * sizeof(*f));
		}
		r->used += n;
		return 0;
	}
	return -ENOSPC;
}

int vm_bpf_rows_give(struct vm_bpf_rows *r, uint32_t at, uint32_t n)
{
	size_t i = 0;
	bool joins_before, joins_after;

	if (!n)
		return 0;
	while (i < r->n_free && r->free[i].at < at)
		i++;
	joins_before = i > 0 && r->free[i - 1].at + r->free[i - 1].n == at;
	joins_after = i < r->n_free && at + n == r->free[i].at;
	if (joins_before && joins_after) {
		r->free[i - 1].n += n + r->free[i].n;
		r->n_free--;
		memmove(&r->free[i], &r->free[i + 1],
			(r->n_free - i) * sizeof(r->free[0]));
	} else if (joins_before) {
		r->free[i - 1].n += n;
	} else if (joins_after) {
		r->free[i].at = at;
		r->free[i].n += n;
	} else {
		if (vm_grow(r->free, &r->cap_free, r->n_free + 1))
			return -ENOMEM;
		memmove(&r->free[i + 1], &r->free[i],
			(r->n_free - i) * sizeof(r->free[0]));
		r->free[i] = (struct vm_bpf_rows_run){ at, n };
		r->n_free++;
	}
	r->used -= n;
	return 0;
}
