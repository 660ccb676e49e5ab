// SPDX-License-Identifier: Apache-2.0
/*
 * elf_plt.c - names for a binary's PLT stubs (elf_plt.h): a call into a
 * shared library goes through a stub in .plt that no symbol covers, so a
 * sample there would be charged to whatever function precedes it.  Each
 * stub is named NAME@plt after the function its jump slot binds: the
 * slots' relocations (.rela.plt) are in the stubs' order, and the stubs
 * are of one size after a header, by architecture (the linker's layout):
 *   x86-64  .plt: a 16-byte header, 16-byte stubs; with IBT, .plt.sec
 *           holds the stubs calls go to, 16 bytes each, no header
 *   arm64   .plt: a 32-byte header, 16-byte stubs
 * A section whose size is not what that layout gives for its relocations
 * (another layout: arm64's BTI stubs, a linker of its own) gets no names:
 * an unnamed stub is better than a wrongly named one.
 */
#include "agent/symbolize/elf_plt.h"

#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>

#define PLT_STUB 16

void vm_elf_plt_section(struct vm_elf_plt *p, Elf_Scn *scn, const GElf_Shdr *sh,
			const char *name)
{
	if (!name)
		return;
	if (!strcmp(name, ".rela.plt") && sh->sh_type == SHT_RELA) {
		p->rela = scn;
		p->rela_sh = *sh;
	} else if (!strcmp(name, ".plt") && sh->sh_type == SHT_PROGBITS) {
		p->plt = sh->sh_addr;
		p->plt_size = sh->sh_size;
	} else if (!strcmp(name, ".plt.sec") && sh->sh_type == SHT_PROGBITS) {
		p->sec = sh->sh_addr;
		p->sec_size = sh->sh_size;
	}
}

bool vm_elf_plt_layout(uint16_t machine, uint64_t plt, uint64_t plt_size,
		       uint64_t sec, uint64_t sec_size, size_t n,
		       uint64_t *first)
{
	uint64_t header;

	if (!n)
		return false;
	if (machine == EM_X86_64 && sec_size) {
		*first = sec;
		return sec_size == n * PLT_STUB;
	}
	if (machine == EM_X86_64)
		header = 16;
	else if (machine == EM_AARCH64)
		header = 32;
	else
		return false;
	*first = plt + header;
	return plt_size == header + n * PLT_STUB;
}

int vm_elf_plt_symbols(Elf *e, const struct vm_elf_plt *p, vm_elf_symbol_fn add,
		       void *arg)
{
	Elf_Data *rela, *syms;
	Elf_Scn *dynsym;
	GElf_Shdr dyn_sh;
	GElf_Ehdr eh;
	uint64_t first;
	size_t n;

	if (!p->rela || !p->rela_sh.sh_entsize || !gelf_getehdr(e, &eh))
		return 0;
	n = p->rela_sh.sh_size / p->rela_sh.sh_entsize;
	if (!vm_elf_plt_layout(eh.e_machine, p->plt, p->plt_size, p->sec,
			       p->sec_size, n, &first))
		return 0;
	dynsym = elf_getscn(e, p->rela_sh.sh_link);
	rela = elf_getdata(p->rela, NULL);
	if (!dynsym || !gelf_getshdr(dynsym, &dyn_sh) || !rela ||
	    !(syms = elf_getdata(dynsym, NULL)))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char name[256];
		const char *sym_name;
		GElf_Rela r;
		GElf_Sym sym;
		int err;

		if (!gelf_getrela(rela, (int)i, &r))
			break;
		/* An IRELATIVE slot has no symbol: its stub stays unnamed. */
		if (!GELF_R_SYM(r.r_info) ||
		    !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym))
			continue;
		sym_name = elf_strptr(e, dyn_sh.sh_link, sym.st_name);
		if (!sym_name || !sym_name[0])
			continue;
		snprintf(name, sizeof(name), "%.250s@plt", sym_name);
		err = add(arg, first + i * PLT_STUB, PLT_STUB, name);
		if (err)
			return err;
	}
	return 0;
}
