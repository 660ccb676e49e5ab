/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elf_plt.h - names for a binary's PLT stubs, NAME@plt (elf_plt.c): read
 * by elf.c with the file's other symbols.  Mapping symbols ($x, $d: where
 * arm64 code and data start) are never names here or there: only
 * function symbols are.
 */
#ifndef VMTOOLS_AGENT_ELF_PLT_H
#define VMTOOLS_AGENT_ELF_PLT_H

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Keep one symbol; 0 or a negative errno, which ends the reading. */
typedef int (*vm_elf_symbol_fn)(void *arg, uint64_t addr, uint64_t size,
				const char *name);

/*
 * Where the first of n stubs is (*first), given the machine (EM_*) and
 * the addresses and sizes of .plt and .plt.sec (0: none); false when the
 * sections' sizes are not the layout this architecture's linker gives n
 * stubs.
 */
bool vm_elf_plt_layout(uint16_t machine, uint64_t plt, uint64_t plt_size,
		       uint64_t sec, uint64_t sec_size, size_t n,
		       uint64_t *first);

/* The sections the stubs' names come from, noted as a reader meets them. */
struct vm_elf_plt {
	Elf_Scn *rela; /* .rela.plt */
	GElf_Shdr rela_sh;
	uint64_t plt, plt_size, sec, sec_size; /* .plt, .plt.sec */
};

/* Note section scn (its header sh, its name) if it is one of those. */
void vm_elf_plt_section(struct vm_elf_plt *p, Elf_Scn *scn, const GElf_Shdr *sh,
			const char *name);

/*
 * Each PLT stub of e, from the sections noted in p, given to add as
 * NAME@plt, 16 bytes.  0, or add's error.
 */
int vm_elf_plt_symbols(Elf *e, const struct vm_elf_plt *p, vm_elf_symbol_fn add,
		       void *arg);

#endif
