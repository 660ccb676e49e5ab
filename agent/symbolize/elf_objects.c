// SPDX-License-Identifier: Apache-2.0
/*
 * elf_objects.c - named global variables of an ELF executable from its
 * .dynsym, and where they are at run time (elf_objects.h), through
 * libelf.
 */
#include "agent/symbolize/elf_objects.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>

static void read_segments(Elf *e, struct vm_elf_objects *out)
{
	size_t n = 0;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n) != 0)
		return;
	for (size_t i = 0; i < n && out->n_segs < VM_ELF_OBJECTS_MAX_SEGS;
	     i++) {
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		out->segs[out->n_segs++] = (struct vm_elf_segment){
			.vaddr = ph.p_vaddr,
			.offset = ph.p_offset,
			.filesz = ph.p_filesz,
		};
	}
}

static void read_dynsym(Elf *e, const char *const *names, size_t n,
			uint64_t *values)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		size_t count;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM ||
		    !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		count = d->d_size / sh.sh_entsize;
		for (size_t i = 0; i < count; i++) {
			const char *name;
			GElf_Sym sym;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    GELF_ST_TYPE(sym.st_info) != STT_OBJECT ||
			    sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			for (size_t j = 0; name && j < n; j++)
				if (!strcmp(name, names[j]))
					values[j] = sym.st_value;
		}
	}
}

static int read_elf(Elf *e, const char *const *names, size_t n,
		    uint64_t *values, struct vm_elf_objects *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t j = 0; j < n; j++)
		values[j] = 0;
	if (!e || elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return -EINVAL;
	}
	read_segments(e, out);
	read_dynsym(e, names, n, values);
	elf_end(e);
	return 0;
}

int vm_elf_objects_fd(int fd, const char *const *names, size_t n,
		      uint64_t *values, struct vm_elf_objects *out)
{
	elf_version(EV_CURRENT);
	return read_elf(elf_begin(fd, ELF_C_READ_MMAP, NULL), names, n, values,
			out);
}

int vm_elf_objects_mem(const void *buf, size_t len, const char *const *names,
		       size_t n, uint64_t *values, struct vm_elf_objects *out)
{
	elf_version(EV_CURRENT);
	return read_elf(elf_memory((char *)buf, len), names, n, values, out);
}

bool vm_elf_objects_runtime(const struct vm_elf_objects *o, uint64_t start,
			    uint64_t pgoff, uint64_t vaddr, uint64_t *addr)
{
	for (size_t i = 0; i < o->n_segs; i++) {
		const struct vm_elf_segment *s = &o->segs[i];

		if (pgoff < s->offset || pgoff - s->offset >= s->filesz)
			continue;
		/* start maps pgoff, at link-time address s->vaddr + delta. */
		*addr = vaddr - (s->vaddr + (pgoff - s->offset)) + start;
		return true;
	}
	return false;
}
