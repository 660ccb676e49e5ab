// SPDX-License-Identifier: Apache-2.0
/*
 * elf.c - reading one ELF file with libelf for the symbolizer: function
 * symbols (.symtab, .dynsym, and .gnu_debugdata's .symtab; no other
 * kind, so arm64's mapping symbols $x and $d never name a frame), PLT
 * stubs' names (elf_plt.c), PT_LOAD segments, the GNU build id and the
 * .gnu_debuglink (see elf.h).
 *
 * Everything is bounds-checked by libelf (gelf_getsym, elf_strptr return
 * NULL past the end); we add checks of our own where libelf trusts the file
 * (entry sizes, note lengths, the debuglink's terminator).
 */
#include "agent/symbolize/elf.h"

#include "agent/symbolize/elf_plt.h"
#include "agent/unwind/ehframe.h"
#include "common/array.h"
#include "common/search.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

/* Biggest decompressed .gnu_debugdata we accept (real ones are < 4 MiB). */
#define DEBUGDATA_MAX (64u << 20)
/* Sanity bound on one symbol table (real ones: ~1e5 entries). */
#define MAX_SYMS_PER_TABLE (8u << 20)

static int libelf_ready(struct vm_error *err)
{
	static int ready; /* EV_CURRENT once; benign race, same result */

	if (!ready) {
		if (elf_version(EV_CURRENT) == EV_NONE)
			return vm_error_set(err, EINVAL,
					    "libelf is out of date: %s",
					    elf_errmsg(-1));
		ready = 1;
	}
	return 0;
}

static size_t limit_of(const struct vm_elf_info *info)
{
	return info->max_bytes ? info->max_bytes : VM_ELF_SYMBOLS_MAX_BYTES;
}

size_t vm_elf_info_bytes(const struct vm_elf_info *info)
{
	return info->cap_syms * sizeof(*info->syms) + info->names.bytes +
	       info->cap_segs * sizeof(*info->segs) +
	       info->n_fn_starts * sizeof(*info->fn_starts);
}

/* -EFBIG when the symbols would take more than the file's bound. */
static int add_symbol(struct vm_elf_info *info, uint64_t addr, uint64_t size,
		      const char *name, bool from_debug_file)
{
	size_t limit = limit_of(info);
	struct vm_elf_symbol *s;
	const char *kept;

	if (info->n_syms == info->cap_syms) {
		/* vm_grow doubles (or starts at 16): count that first. */
		size_t more = info->cap_syms ? info->cap_syms : 16;

		if (vm_elf_info_bytes(info) + more * sizeof(*s) > limit)
			return -EFBIG;
		if (vm_grow(info->syms, &info->cap_syms, info->n_syms + 1))
			return -ENOMEM;
	}
	kept = vm_strpool_intern(&info->names, name);
	if (!kept)
		return -ENOMEM;
	if (vm_elf_info_bytes(info) > limit)
		return -EFBIG;
	s = &info->syms[info->n_syms];
	s->name = kept;
	s->addr = addr;
	s->size = size;
	s->from_debug_file = from_debug_file;
	info->n_syms++;
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct vm_elf_symbol *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Sized symbols first: they say where the function ends. */
	if ((x->size != 0) != (y->size != 0))
		return x->size ? -1 : 1;
	/* The file's own before a debug file's: it names it first. */
	if (x->from_debug_file != y->from_debug_file)
		return x->from_debug_file ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Sort and keep one symbol per address. */
static void sort_symbols(struct vm_elf_info *info)
{
	size_t out = 0;

	if (info->n_syms == 0)
		return;
	qsort(info->syms, info->n_syms, sizeof(*info->syms), cmp_sym);
	for (size_t i = 0; i < info->n_syms; i++) {
		if (out > 0 && info->syms[out - 1].addr == info->syms[i].addr)
			continue;
		info->syms[out++] = info->syms[i];
	}
	info->n_syms = out;
}

/* A PLT stub's name, as elf_plt.c gives it. */
static int add_plt_symbol(void *arg, uint64_t addr, uint64_t size,
			  const char *name)
{
	return add_symbol(arg, addr, size, name, false);
}

static int read_symtab(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh,
		       struct vm_elf_info *info)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;
	int r;

	if (!data || sh->sh_entsize == 0)
		return 0;
	n = data->d_size / sh->sh_entsize;
	if (n > MAX_SYMS_PER_TABLE)
		n = MAX_SYMS_PER_TABLE;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		int type;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
		    sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name || !name[0])
			continue;
		r = add_symbol(info, sym.st_value, sym.st_size, name, false);
		if (r)
			return r;
	}
	return 0;
}

static void read_build_id(Elf_Scn *scn, struct vm_elf_info *info)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	if (!data)
		return;
	while (off < data->d_size &&
	       (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    name_off + 4 <= data->d_size &&
		    !memcmp((char *)data->d_buf + name_off, "GNU", 4) &&
		    nh.n_descsz > 0 && nh.n_descsz <= VM_BUILD_ID_MAX &&
		    desc_off + nh.n_descsz <= data->d_size) {
			memcpy(info->build_id, (char *)data->d_buf + desc_off,
			       nh.n_descsz);
			info->build_id_len = nh.n_descsz;
			return;
		}
	}
}

static void read_debuglink(Elf *e, Elf_Scn *scn, struct vm_elf_info *info)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	const char *p, *ident;
	size_t len, crc_off;
	uint32_t crc;

	if (!data || !data->d_buf || data->d_size < 6)
		return;
	p = data->d_buf;
	len = strnlen(p, data->d_size);
	crc_off = (len + 4) & ~(size_t)3;
	if (len == 0 || crc_off + 4 > data->d_size || memchr(p, '/', len))
		return;
	memcpy(&crc, p + crc_off, 4);
	ident = elf_getident(e, NULL);
	/* The CRC is stored in the file's byte order. */
	if (ident &&
	    ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ?
				       ELFDATA2LSB :
				       ELFDATA2MSB))
		crc = __builtin_bswap32(crc);
	info->debuglink = strndup(p, len);
	info->debuglink_crc = crc;
}

/*
 * The symbols of .gnu_debugdata, within what the file's bound leaves:
 * -ENOMEM or -EFBIG; a section that is not valid xz or ELF costs its
 * symbols only.
 */
static int read_debugdata(Elf_Scn *scn, struct vm_elf_info *info,
			  const char *what)
{
	Elf_Data *data = elf_rawdata(scn, NULL);
	struct vm_elf_info mini = { 0 };
	size_t len, used = vm_elf_info_bytes(info), limit = limit_of(info);
	size_t room = limit > used ? limit - used : 0;
	void *buf = NULL;
	int r;

	if (!data || !data->d_buf || data->d_size == 0)
		return 0;
	r = vm_xz_decompress(data->d_buf, data->d_size,
			     room < DEBUGDATA_MAX ? room : DEBUGDATA_MAX, &buf,
			     &len, NULL);
	if (r)
		return r == -EFBIG && room < DEBUGDATA_MAX ? -EFBIG : 0;
	/* The decompressed file counts against the bound while it is read. */
	mini.max_bytes = room > len ? room - len : 1;
	r = vm_elf_read_mem(buf, len, &mini, what, NULL);
	if (r == 0 && mini.n_syms) {
		r = vm_elf_merge_symbols(info, &mini, false);
		info->has_debugdata = r == 0;
	}
	vm_elf_info_free(&mini);
	free(buf);
	return r == -ENOMEM || r == -EFBIG ? r : 0;
}

static int too_big(const struct vm_elf_info *info, const char *what,
		   struct vm_error *err)
{
	return vm_error_set(err, EFBIG,
			    "the symbols of %s take more than %zu MiB, "
			    "the most one file may have",
			    what, limit_of(info) >> 20);
}

static int read_elf(Elf *e, struct vm_elf_info *info, const char *what,
		    bool nested, struct vm_error *err)
{
	struct vm_elf_plt plt = { 0 };
	Elf_Scn *scn = NULL;
	size_t shstrndx, nph = 0;
	int r;

	if (elf_kind(e) != ELF_K_ELF)
		return vm_error_set(err, ENOEXEC, "%s is not an ELF file",
				    what);
	if (elf_getshdrstrndx(e, &shstrndx))
		return vm_error_set(err, ENOEXEC,
				    "%s has no valid section headers: %s", what,
				    elf_errmsg(-1));

	/* A table that cannot be read costs those names (frames keep addresses). */
	if (!nested && vm_ehframe_starts_of_elf(e, &info->fn_starts,
						&info->n_fn_starts) == -ENOMEM)
		return vm_error_set(err, ENOMEM, "out of memory");
	if (vm_elf_info_bytes(info) > limit_of(info))
		return too_big(info, what, err);
	if (elf_getphdrnum(e, &nph) == 0)
		for (size_t i = 0; i < nph && i < 1024; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, (int)i, &ph))
				continue;
			if (ph.p_type != PT_LOAD)
				continue;
			if (vm_grow(info->segs, &info->cap_segs,
				    info->n_segs + 1) < 0)
				return vm_error_set(err, ENOMEM,
						    "out of memory");
			info->segs[info->n_segs++] = (struct vm_elf_segment){
				.vaddr = ph.p_vaddr,
				.offset = ph.p_offset,
				.filesz = ph.p_filesz,
			};
		}

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		vm_elf_plt_section(&plt, scn, &sh, name);
		r = 0;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) {
			r = read_symtab(e, scn, &sh, info);
			if (sh.sh_type == SHT_SYMTAB)
				info->has_symtab = true;
		} else if (sh.sh_type == SHT_NOTE && !info->build_id_len) {
			read_build_id(scn, info);
		} else if (name && !strcmp(name, ".gnu_debuglink") &&
			   !info->debuglink) {
			read_debuglink(e, scn, info);
		} else if (name && !strcmp(name, ".gnu_debugdata") && !nested) {
			r = read_debugdata(scn, info, what);
		}
		if (r == -EFBIG)
			return too_big(info, what, err);
		if (r)
			return vm_error_set(err, ENOMEM, "out of memory");
	}
	r = nested ? 0 : vm_elf_plt_symbols(e, &plt, add_plt_symbol, info);
	if (r == -EFBIG)
		return too_big(info, what, err);
	if (r)
		return vm_error_set(err, ENOMEM, "out of memory");
	sort_symbols(info);
	return 0;
}

int vm_elf_read_fd(int fd, struct vm_elf_info *info, const char *what,
		   struct vm_error *err)
{
	Elf *e;
	int r = libelf_ready(err);

	if (r)
		return r;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return vm_error_set(err, ENOEXEC, "cannot read %s as ELF: %s",
				    what, elf_errmsg(-1));
	r = read_elf(e, info, what, false, err);
	elf_end(e);
	return r;
}

int vm_elf_read_mem(const void *buf, size_t len, struct vm_elf_info *info,
		    const char *what, struct vm_error *err)
{
	Elf *e;
	int r = libelf_ready(err);

	if (r)
		return r;
	/* libelf does not write through the pointer with ELF_C_READ. */
	e = elf_memory((char *)buf, len);
	if (!e)
		return vm_error_set(err, ENOEXEC, "cannot read %s as ELF: %s",
				    what, elf_errmsg(-1));
	r = read_elf(e, info, what, true, err);
	elf_end(e);
	return r;
}

int vm_elf_merge_symbols(struct vm_elf_info *info,
			 const struct vm_elf_info *other, bool from_debug_file)
{
	size_t had = info->n_syms;

	for (size_t i = 0; i < other->n_syms; i++) {
		int r = add_symbol(info, other->syms[i].addr,
				   other->syms[i].size, other->syms[i].name,
				   from_debug_file);

		if (r) {
			/* Still sorted: only appended to.  Names stay pooled. */
			info->n_syms = had;
			return r;
		}
	}
	sort_symbols(info);
	return 0;
}

const struct vm_elf_symbol *vm_elf_lookup(const struct vm_elf_info *info,
					  uint64_t addr)
{
	const struct vm_elf_symbol *s =
		VM_BSEARCH_FLOOR(addr, info->syms, info->n_syms, addr);

	if (s && s->size && addr - s->addr >= s->size)
		return NULL; /* in a gap after the function */
	return s;
}

bool vm_elf_function_start(const struct vm_elf_info *info, uint64_t addr,
			   uint64_t *start)
{
	return vm_ehframe_lookup(info->fn_starts, info->n_fn_starts, addr,
				 start);
}

bool vm_elf_offset_to_addr(const struct vm_elf_info *info, uint64_t offset,
			   uint64_t *addr)
{
	for (size_t i = 0; i < info->n_segs; i++) {
		const struct vm_elf_segment *g = &info->segs[i];

		if (offset >= g->offset && offset - g->offset < g->filesz) {
			*addr = g->vaddr + (offset - g->offset);
			return true;
		}
	}
	return false;
}

void vm_elf_info_free(struct vm_elf_info *info)
{
	if (!info)
		return;
	vm_strpool_free(&info->names);
	free(info->syms);
	free(info->segs);
	free(info->fn_starts);
	free(info->debuglink);
	memset(info, 0, sizeof(*info));
}
