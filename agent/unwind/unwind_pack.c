// SPDX-License-Identifier: Apache-2.0
/*
 * unwind_pack.c - a binary's unwind table packed as the walk in the
 * kernel reads it (unwind_pack.h, bpf/unwind.h).
 *
 * A row's address becomes an offset from the binary's first row, its
 * rules 32 bits.  The index that follows the rows has an entry for each
 * page of row addresses: the rows before it, where in it its first row
 * starts, and the rule in effect where it starts.  Its pages are the
 * smallest of at least 16 bytes with at most one page per 2 rows.
 */
#include "agent/unwind/unwind_pack.h"

uint32_t vm_unwind_rule(const struct vm_unwind_row *row)
{
	uint32_t cfa;

	if (row->signal)
		return unwind_rule(UNWIND_SIGNAL, 0, 0, UNWIND_RA_DEFAULT);
	switch (row->cfa) {
	case VM_UNWIND_SP:
		cfa = UNWIND_SP;
		break;
	case VM_UNWIND_FP:
		cfa = UNWIND_FP;
		break;
	case VM_UNWIND_PLT:
		cfa = UNWIND_PLT;
		break;
	case VM_UNWIND_OUTERMOST:
		return unwind_rule(UNWIND_OUTERMOST, 0, 0, UNWIND_RA_DEFAULT);
	default:
		return unwind_rule(UNWIND_NONE, 0, 0, UNWIND_RA_DEFAULT);
	}
	/* 0, UNWIND_NONE's, where the offsets do not fit. */
	return unwind_rule(cfa, (int32_t)row->cfa_off, (int32_t)row->fp_off,
			   (int32_t)row->ra_off);
}

size_t vm_unwind_pack_size(const struct vm_unwind_table *t, uint32_t *shift,
			   uint32_t *pages)
{
	uint64_t span = t->rows[t->n - 1].addr - t->rows[0].addr;
	uint64_t most = t->n / 2 ? t->n / 2 : 1;

	*shift = 4;
	while (*shift < 31 && (span >> *shift) + 1 > most)
		(*shift)++;
	*pages = (uint32_t)((span >> *shift) + 1);
	return t->n + *pages + 1;
}

/*
 * The index, pages + 1 entries, into index; rows are t's rows as packed.
 * Entry k: the rows before page k, where in page k its first row starts,
 * and the rule of the last row before page k (none before the first).
 */
static void write_index(const struct vm_unwind_table *t,
			const struct unwind_row *rows, uint32_t shift,
			uint32_t pages, struct unwind_row *index)
{
	size_t i = 0;

	for (uint32_t k = 0; k <= pages; k++) {
		uint64_t start = (uint64_t)k << shift,
			 off = UNWIND_PAGE_OFF_MAX;

		while (i < t->n && rows[i].addr < start)
			i++;
		if (i < t->n && rows[i].addr - start < off)
			off = rows[i].addr - start;
		index[k].addr = (uint32_t)i | (uint32_t)off
						      << UNWIND_COUNT_BITS;
		index[k].rule =
			i ? rows[i - 1].rule :
			    unwind_rule(UNWIND_NONE, 0, 0, UNWIND_RA_DEFAULT);
	}
}

bool vm_unwind_pack(const struct vm_unwind_table *t, uint32_t shift,
		    uint32_t pages, struct unwind_row *out)
{
	uint64_t base = t->rows[0].addr;

	for (size_t i = 0; i < t->n; i++) {
		if (t->rows[i].addr - base > UINT32_MAX)
			return false;
		out[i].addr = (uint32_t)(t->rows[i].addr - base);
		out[i].rule = vm_unwind_rule(&t->rows[i]);
	}
	write_index(t, out, shift, pages, &out[t->n]);
	return true;
}

bool vm_unwind_bias(const struct vm_unwind_table *t, const struct vm_mapping *m,
		    uint64_t *bias)
{
	uint64_t len = m->end - m->start;

	for (size_t i = 0; i < t->n_segs; i++) {
		uint64_t off = t->segs[i].offset, vaddr = t->segs[i].vaddr;

		if (off >= m->pgoff + len ||
		    off + t->segs[i].filesz <= m->pgoff)
			continue;
		/* pc - start + pgoff is a file offset; + vaddr - off a link. */
		*bias = m->start - m->pgoff - (vaddr - off) + t->rows[0].addr;
		return true;
	}
	return false;
}
