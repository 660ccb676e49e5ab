// SPDX-License-Identifier: Apache-2.0
/*
 * ehframe.c - reading the binary search table of .eh_frame_hdr (see
 * ehframe.h).  Its layout (LSB "Exception Frame Header"):
 *
 *   u8 version (1), u8 eh_frame_ptr_enc, u8 fde_count_enc, u8 table_enc,
 *   eh_frame_ptr (eh_frame_ptr_enc), fde_count (fde_count_enc),
 *   fde_count x { initial_location, fde_address } (table_enc)
 *
 * each value a DWARF pointer encoding (DW_EH_PE_*): a format in the low
 * nibble, what it is relative to in bits 4-6.  Linkers write
 * datarel|sdata4: offsets from the start of .eh_frame_hdr.  The table is
 * read only where its entries have a fixed size, as a binary search needs.
 */
#include "agent/unwind/ehframe.h"

#include <gelf.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/search.h"

#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_uleb128 0x01
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sleb128 0x09
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_omit 0xff

struct cursor {
	const struct vm_ehframe_hdr *h;
	size_t off;
};

static int read_fixed(struct cursor *c, unsigned size, uint64_t *v)
{
	uint8_t b[8];

	if (size > c->h->len || c->off > c->h->len - size)
		return -EINVAL;
	memcpy(b, c->h->data + c->off, size);
	c->off += size;
	*v = 0;
	/* Most significant byte first. */
	for (unsigned i = 0; i < size; i++)
		*v = (*v << 8) | b[c->h->big_endian ? i : size - 1 - i];
	return 0;
}

static int read_leb(struct cursor *c, bool is_signed, uint64_t *v)
{
	unsigned shift = 0;
	uint8_t b;

	*v = 0;
	do {
		if (c->off >= c->h->len || shift >= 64)
			return -EINVAL;
		b = c->h->data[c->off++];
		*v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (is_signed && shift < 64 && (b & 0x40))
		*v |= ~(uint64_t)0 << shift;
	return 0;
}

/* Bytes of a fixed-size format, 0 for a variable one (LEB128). */
static unsigned format_size(uint8_t enc, unsigned ptr_size)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
		return ptr_size;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8;
	default:
		return 0;
	}
}

static uint64_t sign_extend(uint64_t v, unsigned size)
{
	unsigned bits = size * 8;

	if (bits < 64 && (v >> (bits - 1)) & 1)
		v |= ~(uint64_t)0 << bits;
	return v;
}

/* One value of encoding enc at the cursor, as a link-time address. */
static int read_encoded(struct cursor *c, uint8_t enc, uint64_t *out)
{
	size_t at = c->off;
	unsigned size;
	uint64_t v;
	int r;

	if (enc == DW_EH_PE_omit || (enc & 0x80)) /* indirect: not here */
		return -EINVAL;
	switch (enc & 0x0f) {
	case DW_EH_PE_uleb128:
	case DW_EH_PE_sleb128:
		r = read_leb(c, (enc & 0x0f) == DW_EH_PE_sleb128, &v);
		break;
	default:
		size = format_size(enc, c->h->ptr_size);
		if (!size)
			return -EINVAL;
		r = read_fixed(c, size, &v);
		if (!r && (enc & 0x08))
			v = sign_extend(v, size);
		break;
	}
	if (r)
		return r;
	switch (enc & 0x70) {
	case 0:
		break;
	case DW_EH_PE_pcrel:
		v += c->h->vaddr + at;
		break;
	case DW_EH_PE_datarel:
		v += c->h->vaddr;
		break;
	default:
		return -EINVAL;
	}
	if (c->h->ptr_size == 4)
		v &= 0xffffffffu;
	*out = v;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int vm_ehframe_hdr_starts(const struct vm_ehframe_hdr *h, uint64_t **starts,
			  size_t *n)
{
	struct cursor c = { .h = h, .off = 4 };
	uint64_t eh_frame, count, *v;
	uint8_t ptr_enc, count_enc, table_enc;
	size_t got = 0, kept = 0;
	unsigned entry;

	*starts = NULL;
	*n = 0;
	if (h->len < 4 || h->data[0] != 1 ||
	    (h->ptr_size != 4 && h->ptr_size != 8))
		return -EINVAL;
	ptr_enc = h->data[1];
	count_enc = h->data[2];
	table_enc = h->data[3];
	if (read_encoded(&c, ptr_enc, &eh_frame))
		return -EINVAL;
	if (count_enc == DW_EH_PE_omit || table_enc == DW_EH_PE_omit)
		return -ENOENT;
	if (read_encoded(&c, count_enc, &count))
		return -EINVAL;
	entry = format_size(table_enc, h->ptr_size);
	if (!entry || (table_enc & 0x70) == DW_EH_PE_pcrel)
		return -EINVAL; /* not a table a binary search can use */
	/* Never more entries than the bytes hold. */
	if (count > (h->len - c.off) / (2 * entry))
		count = (h->len - c.off) / (2 * entry);
	if (count > VM_EHFRAME_MAX_FDES)
		count = VM_EHFRAME_MAX_FDES;
	if (count == 0)
		return 0;
	v = malloc(count * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t fde;

		if (read_encoded(&c, table_enc, &v[got]) ||
		    read_encoded(&c, table_enc, &fde))
			break;
		got++;
	}
	/* Sorted by the linker; a hostile file need not be. */
	qsort(v, got, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < got; i++)
		if (kept == 0 || v[kept - 1] != v[i])
			v[kept++] = v[i];
	if (!kept) {
		free(v);
		return 0;
	}
	*starts = v;
	*n = kept;
	return 0;
}

bool vm_ehframe_lookup(const uint64_t *starts, size_t n, uint64_t addr,
		       uint64_t *start)
{
	const uint64_t *s =
		vm_bsearch_floor_at(addr, starts, n, sizeof(*starts), 0);

	if (!s)
		return false;
	*start = *s;
	return true;
}

int vm_ehframe_starts_of_elf(Elf *e, uint64_t **starts, size_t *n)
{
	const char *ident = elf_getident(e, NULL);
	size_t nph = 0;

	*starts = NULL;
	*n = 0;
	if (!ident || elf_getphdrnum(e, &nph))
		return -EINVAL;
	for (size_t i = 0; i < nph && i < 1024; i++) {
		struct vm_ehframe_hdr h;
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(e, (int)i, &ph) ||
		    ph.p_type != PT_GNU_EH_FRAME || ph.p_filesz == 0)
			continue;
		/* libelf checks the range against the file's size. */
		d = elf_getdata_rawchunk(e, ph.p_offset, ph.p_filesz,
					 ELF_T_BYTE);
		if (!d || !d->d_buf)
			return -EINVAL;
		h = (struct vm_ehframe_hdr){
			.data = d->d_buf,
			.len = d->d_size,
			.vaddr = ph.p_vaddr,
			.ptr_size = ident[EI_CLASS] == ELFCLASS32 ? 4 : 8,
			.big_endian = ident[EI_DATA] == ELFDATA2MSB,
		};
		return vm_ehframe_hdr_starts(&h, starts, n);
	}
	return -ENOENT;
}
