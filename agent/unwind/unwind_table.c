// SPDX-License-Identifier: Apache-2.0
/*
 * unwind_table.c - a binary's unwind rows from its call frame information
 * through libdw (unwind_table.h).
 *
 * libdw answers "what are the rules at address A" (dwarf_cfi_addrframe)
 * and for how far they hold (dwarf_frame_info); it does not list the
 * FDEs.  Their starts are .eh_frame_hdr's search table (ehframe.c), so
 * each function is walked from its start, row after row, to the next
 * function's start; where its FDE ends first, a VM_UNWIND_NONE row marks
 * the gap.  libdw finds the rules at an address by running the FDE's
 * program from its start, so a function's rows are bounded and the
 * build's CPU time is checked as it goes (unwind_table.h).  libdw gives
 * each rule as a DWARF expression; the few shapes
 * compilers emit are recognised here, over the registers of the file's
 * architecture (struct arch_regs), and anything else is a VM_UNWIND_NONE
 * row, counted.  arm64's pointer authentication adds a rule
 * (DW_CFA_AARCH64_negate_ra_state: the return address is signed from
 * here on), which libdw reads and passes over: the walk strips the
 * code from every return address whatever the state.
 */
#include "agent/unwind/unwind_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/unwind/ehframe.h"
#include "bpf/unwind.h"
#include "common/array.h"
#include "common/search.h"

/*
 * DWARF's numbers of the frame pointer, the stack pointer and the return
 * address column, by the file's architecture; a link register holds the
 * return address until the function saves it (arm64's x30).
 */
struct arch_regs {
	unsigned fp, sp, ra;
	bool link_register;
};

static const struct arch_regs x86_64_regs = { 6, 7, 16, false };
static const struct arch_regs aarch64_regs = { 29, 31, 30, true };

/* The registers of e's architecture; NULL for another, said in err. */
static const struct arch_regs *arch_regs_of(Elf *e, const char *what,
					    struct vm_error *err)
{
	GElf_Ehdr eh;

	if (gelf_getehdr(e, &eh) && eh.e_machine == EM_X86_64)
		return &x86_64_regs;
	if (gelf_getehdr(e, &eh) && eh.e_machine == EM_AARCH64)
		return &aarch64_regs;
	vm_error_set(
		err, EINVAL,
		"%s is of an architecture whose unwind rules are not known here (x86-64 and arm64 are)",
		what);
	return NULL;
}

/* reg + off from a CFA rule of one operation; false for another shape. */
static bool breg(const Dwarf_Op *op, unsigned *reg, int64_t *off)
{
	if (op->atom == DW_OP_bregx) {
		*reg = (unsigned)op->number;
		*off = (int64_t)op->number2;
		return true;
	}
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*off = (int64_t)op->number;
		return true;
	}
	return false;
}

/*
 * The x86-64 PLT stubs' CFA: rsp + 8, plus 8 once past byte `lit` of
 * the 16 (on another architecture no rule has this shape):
 *   breg7 8; breg16 0; lit15; and; litN; ge; lit3; shl; plus
 */
static bool plt_rule(const struct arch_regs *a, const Dwarf_Op *o, size_t n,
		     int32_t *threshold)
{
	int64_t off;
	unsigned reg;

	if (a->link_register || n != 9 || !breg(&o[0], &reg, &off) ||
	    reg != a->sp || off != 8 || !breg(&o[1], &reg, &off) ||
	    reg != a->ra || off != 0 || o[2].atom != DW_OP_lit15 ||
	    o[3].atom != DW_OP_and || o[4].atom < DW_OP_lit0 ||
	    o[4].atom > DW_OP_lit15 || o[5].atom != DW_OP_ge ||
	    o[6].atom != DW_OP_lit3 || o[7].atom != DW_OP_shl ||
	    o[8].atom != DW_OP_plus)
		return false;
	*threshold = o[4].atom - DW_OP_lit0;
	return true;
}

/*
 * Where a register is saved, as libdw gives an offset(N) rule: at
 * CFA + N.  *off; false for another rule.
 */
static bool saved_at(const Dwarf_Op *o, size_t n, int32_t *off)
{
	if (n != 2 || o[0].atom != DW_OP_call_frame_cfa ||
	    o[1].atom != DW_OP_plus_uconst)
		return false;
	*off = (int32_t)(int64_t)o[1].number;
	return true;
}

/*
 * Where the return address is: saved at CFA + *off, or (*off 0, on an
 * architecture with a link register) still there, its rule "same value".
 * false for another rule.
 */
static bool ra_rule(const struct arch_regs *a, const Dwarf_Op *ops, size_t n,
		    int32_t *off)
{
	if (n == 0 && !ops && a->link_register) {
		*off = 0;
		return true;
	}
	if (!saved_at(ops, n, off) || *off == 0)
		return false;
	/* x86-64's `call` puts it at CFA - 8, and its rows assume so. */
	return a->link_register || *off == -8;
}

/* The row libdw's frame describes, from addr on. */
static void row_of(const struct arch_regs *a, Dwarf_Frame *f, uint64_t addr,
		   bool signal, struct vm_unwind_row *row, size_t *unsupported)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	int64_t off;
	unsigned reg;

	*row = (struct vm_unwind_row){ .addr = addr, .signal = signal };
	if (dwarf_frame_register(f, (int)a->ra, mem, &ops, &n) < 0)
		goto unsupported;
	if (n == 0 && ops) {
		row->cfa = VM_UNWIND_OUTERMOST; /* undefined: no caller */
		return;
	}
	if (!ra_rule(a, ops, n, &row->ra_off))
		goto unsupported;
	if (dwarf_frame_cfa(f, &ops, &n) < 0 || n == 0)
		goto unsupported;
	if (n == 1 && breg(&ops[0], &reg, &off) &&
	    (reg == a->sp || reg == a->fp) && off >= INT32_MIN &&
	    off <= INT32_MAX) {
		row->cfa = reg == a->sp ? VM_UNWIND_SP : VM_UNWIND_FP;
		row->cfa_off = (int32_t)off;
	} else if (plt_rule(a, ops, n, &row->cfa_off)) {
		row->cfa = VM_UNWIND_PLT;
	} else {
		goto unsupported;
	}
	if (dwarf_frame_register(f, (int)a->fp, mem, &ops, &n) == 0 && n &&
	    !saved_at(ops, n, &row->fp_off))
		row->fp_off = 0; /* another rule: taken as unchanged */
	return;
unsupported:
	/*
	 * A signal frame's rules are expressions over the ucontext the kernel
	 * saved; the unwinder reads that directly (signal is kept).
	 */
	*row = (struct vm_unwind_row){ .addr = addr,
				       .cfa = VM_UNWIND_NONE,
				       .signal = signal };
	if (!signal)
		(*unsupported)++;
}

static bool same_rules(const struct vm_unwind_row *a,
		       const struct vm_unwind_row *b)
{
	return a->cfa == b->cfa && a->cfa_off == b->cfa_off &&
	       a->fp_off == b->fp_off && a->ra_off == b->ra_off &&
	       a->signal == b->signal;
}

/* Append row unless it says what the last one does. */
static int add_row(struct vm_unwind_table *t, const struct vm_unwind_row *row)
{
	if (t->n && same_rules(&t->rows[t->n - 1], row))
		return 0;
	if (t->n >= VM_UNWIND_MAX_ROWS)
		return -E2BIG;
	if (vm_grow(t->rows, &t->cap, t->n + 1))
		return -ENOMEM;
	t->rows[t->n++] = *row;
	return 0;
}

/* The CPU time the calling thread has taken, in ms. */
static uint64_t thread_cpu_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The CPU time a build may take: the thread's clock is read every
 * CPU_CHECK_ROWS rows (a read is a system call; a row costs at most a
 * pass over its function's rules).
 */
#define CPU_CHECK_ROWS 16

struct cpu_budget {
	uint64_t deadline_ms; /* on the thread's clock */
	unsigned rows; /* read so far */
};

static bool past_budget(struct cpu_budget *b)
{
	return ++b->rows % CPU_CHECK_ROWS == 0 &&
	       thread_cpu_ms() > b->deadline_ms;
}

/*
 * The rows of the function starting at start, up to limit, at most
 * VM_UNWIND_MAX_FUNCTION_ROWS of them; -ETIME past the budget.
 */
static int walk_function(const struct arch_regs *a, Dwarf_CFI *cfi,
			 uint64_t start, uint64_t limit,
			 struct vm_unwind_table *t, struct cpu_budget *budget)
{
	uint64_t addr = start;
	unsigned rows = 0;
	int r = 0;

	while (addr < limit && r == 0) {
		struct vm_unwind_row row;
		Dwarf_Addr from, to;
		Dwarf_Frame *f;
		bool signal;

		if (rows == VM_UNWIND_MAX_FUNCTION_ROWS) {
			t->truncated++;
			break;
		}
		rows++;
		if (past_budget(budget))
			return -ETIME;
		if (dwarf_cfi_addrframe(cfi, addr, &f) < 0)
			break;
		if (dwarf_frame_info(f, &from, &to, &signal) < 0 ||
		    to <= addr) {
			free(f);
			break;
		}
		row_of(a, f, addr, signal, &row, &t->unsupported);
		free(f);
		r = add_row(t, &row);
		addr = to;
	}
	/* Past the FDE's end (or its rows' bound), before the next function. */
	if (r == 0 && addr < limit)
		r = add_row(t, &(struct vm_unwind_row){ .addr = addr });
	return r;
}

static void read_segments(Elf *e, struct vm_unwind_table *t)
{
	size_t nph = 0;

	if (elf_getphdrnum(e, &nph))
		return;
	for (size_t i = 0; i < nph && i < 1024; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    t->n_segs == VM_UNWIND_MAX_SEGS)
			continue;
		t->segs[t->n_segs].vaddr = ph.p_vaddr;
		t->segs[t->n_segs].offset = ph.p_offset;
		t->segs[t->n_segs].filesz = ph.p_filesz;
		t->n_segs++;
	}
}

bool vm_unwind_link_addr(const struct vm_unwind_table *t, uint64_t off,
			 uint64_t *link)
{
	for (size_t i = 0; i < t->n_segs; i++)
		if (off >= t->segs[i].offset &&
		    off - t->segs[i].offset < t->segs[i].filesz) {
			*link = t->segs[i].vaddr + (off - t->segs[i].offset);
			return true;
		}
	return false;
}

static int build(Elf *e, struct vm_unwind_table *t, const char *what,
		 struct vm_error *err)
{
	unsigned cpu_ms = t->cpu_ms ? t->cpu_ms : VM_UNWIND_BUILD_CPU_MS;
	struct cpu_budget budget = { .deadline_ms = thread_cpu_ms() + cpu_ms };
	const struct arch_regs *a;
	uint64_t *starts = NULL;
	Dwarf_CFI *cfi;
	size_t n = 0;
	int r;

	if (elf_kind(e) != ELF_K_ELF)
		return vm_error_set(err, EINVAL, "%s is not an ELF file", what);
	a = arch_regs_of(e, what, err);
	if (!a)
		return -EINVAL;
	read_segments(e, t);
	r = vm_ehframe_starts_of_elf(e, &starts, &n);
	if (r == -ENOMEM)
		return vm_error_set(err, ENOMEM, "out of memory");
	if (r < 0 || n == 0) {
		free(starts);
		return vm_error_set(err, ENOENT,
				    "%s has no .eh_frame_hdr to unwind with",
				    what);
	}
	cfi = dwarf_getcfi_elf(e);
	if (!cfi) {
		free(starts);
		return vm_error_set(err, ENOENT, "%s has no .eh_frame: %s",
				    what, dwarf_errmsg(-1));
	}
	for (size_t i = 0; i < n && r >= 0; i++)
		r = walk_function(a, cfi, starts[i],
				  i + 1 < n ? starts[i + 1] : UINT64_MAX, t,
				  &budget);
	dwarf_cfi_end(cfi);
	free(starts);
	if (r == -E2BIG)
		return vm_error_set(err, E2BIG,
				    "%s has more than %u unwind rows", what,
				    VM_UNWIND_MAX_ROWS);
	if (r == -ETIME)
		return vm_error_set(
			err, ETIME,
			"%s's unwind rules take more than %u ms of CPU time to read",
			what, cpu_ms);
	if (r < 0)
		return vm_error_set(err, ENOMEM, "out of memory");
	return 0;
}

/* The table of e, which libelf opened from what (NULL: it could not). */
static int build_elf(Elf *e, struct vm_unwind_table *t, const char *what,
		     struct vm_error *err)
{
	int r;

	if (!e)
		return vm_error_set(err, EINVAL, "cannot read %s as ELF: %s",
				    what, elf_errmsg(-1));
	r = build(e, t, what, err);
	elf_end(e);
	return r;
}

int vm_unwind_table_build_fd(int fd, struct vm_unwind_table *t,
			     const char *what, struct vm_error *err)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return vm_error_set(err, EINVAL, "libelf is out of date");
	return build_elf(elf_begin(fd, ELF_C_READ_MMAP, NULL), t, what, err);
}

int vm_unwind_table_build_mem(const void *buf, size_t len,
			      struct vm_unwind_table *t, const char *what,
			      struct vm_error *err)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return vm_error_set(err, EINVAL, "libelf is out of date");
	/* libelf does not write through the pointer with ELF_C_READ. */
	return build_elf(elf_memory((char *)buf, len), t, what, err);
}

const struct vm_unwind_row *vm_unwind_lookup(const struct vm_unwind_table *t,
					     uint64_t addr)
{
	return VM_BSEARCH_FLOOR(addr, t->rows, t->n, addr);
}

size_t vm_unwind_table_bytes(const struct vm_unwind_table *t)
{
	return t->cap * sizeof(*t->rows);
}

void vm_unwind_table_free(struct vm_unwind_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

int vm_unwind_frame_pointer_share(int fd, unsigned *percent)
{
	struct vm_unwind_table segs = { 0 };
	uint64_t *starts = NULL, with = 0, seen = 0;
	size_t n = 0, size;
	const uint8_t *image;
	Elf *e;
	int r;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -EINVAL;
	image = (const uint8_t *)elf_rawfile(e, &size);
	read_segments(e, &segs);
	r = image ? vm_ehframe_starts_of_elf(e, &starts, &n) : -EINVAL;
	for (size_t i = 0; r == 0 && i < n; i++)
		for (size_t k = 0; k < segs.n_segs; k++) {
			uint64_t off;

			if (starts[i] < segs.segs[k].vaddr ||
			    starts[i] - segs.segs[k].vaddr >=
				    segs.segs[k].filesz)
				continue;
			off = segs.segs[k].offset +
			      (starts[i] - segs.segs[k].vaddr);
			if (off < size) {
				seen++;
				with += unwind_fp_prologue(image + off,
							   size - off) != 0;
			}
			break;
		}
	free(starts);
	elf_end(e);
	if (r < 0)
		return r;
	if (!seen)
		return -ENOENT;
	*percent = (unsigned)(with * 100 / seen);
	return 0;
}
