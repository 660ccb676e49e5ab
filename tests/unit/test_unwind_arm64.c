// SPDX-License-Identifier: Apache-2.0
/*
 * test_unwind_arm64.c - arm64's unwind rules (bpf/unwind_arm64.h) taken
 * by the step both walks share (bpf/unwind_step.h), on synthetic arm64
 * frames, on any host: VMTOOLS_UNWIND_ARM64 makes bpf/unwind.h choose
 * arm64's header here, whatever the compiler's architecture, so the same
 * test runs on amd64 and, cross-built, under qemu-aarch64
 * (tests/integration/23-cross-arm64.sh).
 *
 * A stack is an array of words at a made-up address; rows are packed as
 * the BPF programs read them.  The cases: a leaf whose return address is
 * still in the link register, then its caller through a frame record
 * (CFA from x29); the link register refused for any frame but the
 * innermost; a return address signed by pointer authentication, stripped
 * (from a frame record, a row, the link register, a frame-pointer walk);
 * the kernel's signal frame, after which the interrupted frame may take
 * its return address from the saved x30; after a frame-pointer step, no
 * row that counts from the sp it could only bound; after a frame-pointer step, no
 * row that counts from the sp it could only bound; a row's rules packed and read
 * back at the ends of their ranges.  Last, the table builder
 * (agent/unwind/unwind_table.c) reads the call frame information of an
 * arm64 program built with pointer authentication
 * ($BUILD/programs/arm64-frames, tests/programs/arm64-frames.c): rows
 * from sp and x29, the return address in the link register at a
 * function's entry and saved in its frame record after, and
 * DW_CFA_AARCH64_negate_ra_state passed over.
 */
#define VMTOOLS_UNWIND_ARM64 1

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/types.h>

/* The synthetic stack: words from STACK_BASE up. */
#define STACK_BASE 0x7ffff0000000ull
#define STACK_WORDS 256
static uint64_t stack[STACK_WORDS];

static bool unwind_read_stack(void *ctx, void *dst, __u32 size, __u64 addr)
{
	(void)ctx;
	if (addr < STACK_BASE || (addr - STACK_BASE) % 8 ||
	    (addr - STACK_BASE) / 8 + size / 8 > STACK_WORDS)
		return false;
	memcpy(dst, &stack[(addr - STACK_BASE) / 8], size);
	return true;
}

#include "bpf/unwind_step.h"

#include "agent/unwind/unwind_table.h"
#include "common/error.h"

_Static_assert(UNWIND_DWARF_FP == 29 && UNWIND_DWARF_RA == 30 &&
		       UNWIND_DWARF_SP == 31,
	       "arm64's rules chosen");

/* A pointer authentication code in the bits above the 48 of an address. */
#define PAC(addr) ((addr) | 0x002d000000000000ull)

static uint64_t at(unsigned word)
{
	return STACK_BASE + 8ull * word;
}

static struct unwind_row row_of(__u32 cfa, __s32 cfa_off, __s32 fp_off,
				__s32 ra_off)
{
	return (struct unwind_row){
		.addr = 0, .rule = unwind_rule(cfa, cfa_off, fp_off, ra_off)
	};
}

/* Each test starts from a stack of zeros. */
static int clear_stack(void **state)
{
	(void)state;
	memset(stack, 0, sizeof(stack));
	return 0;
}

/*
 * A leaf (no frame of its own: CFA = sp, the return address in x30),
 * then its caller, whose frame record {x29, x30} x29 points to (CFA =
 * x29 + 32, x29 saved at CFA - 32, x30 at CFA - 24), then the caller's
 * caller by the frame pointer (no row).
 */
static void leaf_then_frame_record(void **state)
{
	struct unwind_row leaf = row_of(UNWIND_SP, 0, 0, 0);
	struct unwind_row caller = row_of(UNWIND_FP, 32, -32, -24);
	struct unwind_walk w;

	(void)state;
	/* The caller's frame record at word 8; its caller's at word 20. */
	stack[8] = at(20);
	stack[9] = PAC(0x400300ull);
	stack[20] = at(40);
	stack[21] = PAC(0x400400ull);
	unwind_walk_begin(&w, 0x400100, at(2), at(8), PAC(0x400200ull));

	assert_int_equal(unwind_walk_step(&w, &leaf, NULL), 0);
	assert_int_equal(w.r.pc, 0x400200); /* from x30, its code stripped */
	assert_int_equal(w.r.sp, at(2));
	assert_int_equal(w.r.fp, at(8));
	assert_false(w.exact);

	assert_int_equal(unwind_walk_step(&w, &caller, NULL), 0);
	assert_int_equal(w.r.pc, 0x400300);
	assert_int_equal(w.r.sp, at(12)); /* x29 + 32 */
	assert_int_equal(w.r.fp, at(20));

	assert_int_equal(unwind_walk_step(&w, NULL, NULL), 0);
	assert_int_equal(w.r.pc, 0x400400); /* by the frame pointer */
	assert_int_equal(w.r.fp, at(40));
	assert_int_equal(w.by_table, 2);
	assert_int_equal(w.by_fp, 1);
	assert_false(w.cut);
}

/*
 * The link register holds the innermost frame's return address only: a
 * caller's row that says "still in x30" (a pc before the prologue, which
 * no caller is at) cuts the walk, and so does a leaf whose x30 is not
 * known (0).
 */
static void link_register_only_innermost(void **state)
{
	struct unwind_row in_lr = row_of(UNWIND_SP, 16, 0, 0);
	struct unwind_row saved = row_of(UNWIND_SP, 16, -16, -8);
	struct unwind_walk w;

	(void)state;
	stack[2] = at(10); /* x29, x30 saved at sp */
	stack[3] = 0x400500;
	unwind_walk_begin(&w, 0x400100, at(2), at(6), 0x400200);
	assert_int_equal(unwind_walk_step(&w, &saved, NULL), 0);
	assert_int_equal(w.r.pc, 0x400500);
	assert_int_equal(w.r.lr, 0); /* the caller's x30 is not known */
	w.r.lr = 0x400200; /* and were one left there, not believed */
	assert_int_equal(unwind_walk_step(&w, &in_lr, NULL), 1);
	assert_true(w.cut);

	unwind_walk_begin(&w, 0x400100, at(2), at(6), 0);
	assert_int_equal(unwind_walk_step(&w, &in_lr, NULL), 1);
	assert_true(w.cut);
}

/*
 * A function that saved x30 without x29 (str x30, [sp, #-16]!: CFA = sp
 * + 16, x30 at CFA - 16) and one whose frame record is not at the
 * CFA's bottom (x29 at CFA - 48, x30 at CFA - 40): each return address
 * read where its row says, stripped.
 */
static void return_address_where_saved(void **state)
{
	struct unwind_row lr_only = row_of(UNWIND_SP, 16, 0, -16);
	struct unwind_row record = row_of(UNWIND_SP, 64, -48, -40);
	struct unwind_walk w;

	(void)state;
	stack[0] = PAC(0x400600ull); /* at sp: x30 */
	stack[4] = at(30); /* sp = at(2) after: CFA - 48 = at(4) */
	stack[5] = PAC(0x400700ull);
	unwind_walk_begin(&w, 0x400100, at(0), at(50), 0x400200);
	assert_int_equal(unwind_walk_step(&w, &lr_only, NULL), 0);
	assert_int_equal(w.r.pc, 0x400600);
	assert_int_equal(w.r.sp, at(2));
	assert_int_equal(w.r.fp, at(50)); /* unchanged */
	assert_int_equal(unwind_walk_step(&w, &record, NULL), 0);
	assert_int_equal(w.r.pc, 0x400700);
	assert_int_equal(w.r.sp, at(10));
	assert_int_equal(w.r.fp, at(30));
}

/*
 * The signal trampoline's row: the interrupted x29, x30, sp and pc from
 * the kernel's rt_sigframe at sp (bpf/unwind_arm64.h's offsets).  The
 * interrupted frame is exact: its pc is charged to itself, and a leaf
 * interrupted there takes its return address from the saved x30.
 */
static void signal_frame_then_leaf(void **state)
{
	struct unwind_row trampoline = row_of(UNWIND_SIGNAL, 0, 0, 0);
	struct unwind_row leaf = row_of(UNWIND_SP, 0, 0, 0);
	struct unwind_walk w;
	uint64_t sp = at(0), isp = at(STACK_WORDS - 16);

	(void)state;
	stack[UNWIND_SIGNAL_FP / 8] = at(STACK_WORDS - 8);
	stack[UNWIND_SIGNAL_LR / 8] = PAC(0x400900ull);
	stack[UNWIND_SIGNAL_SP / 8] = isp;
	stack[UNWIND_SIGNAL_PC / 8] = 0x400800;
	unwind_walk_begin(&w, 0x500000, sp, 0, 0);
	w.exact = 0; /* the handler returned here */
	assert_int_equal(unwind_walk_step(&w, &trampoline, NULL), 0);
	assert_int_equal(w.r.pc, 0x400800);
	assert_int_equal(w.r.sp, isp);
	assert_int_equal(w.r.fp, at(STACK_WORDS - 8));
	assert_true(w.exact);
	assert_int_equal(unwind_walk_pc(&w), 0x400800);
	assert_int_equal(unwind_walk_step(&w, &leaf, NULL), 0);
	assert_int_equal(w.r.pc, 0x400900);
	assert_false(w.cut);
}

/* A frame-pointer walk through frame records strips every return address. */
static void frame_pointer_walk_stripped(void **state)
{
	struct unwind_walk w;

	(void)state;
	stack[4] = at(12);
	stack[5] = PAC(0x401000ull);
	stack[12] = 0;
	stack[13] = 0xff2d000000401100ull; /* a tag in the top byte too */
	unwind_walk_begin(&w, 0x400100, at(2), at(4), 0x400200);
	assert_int_equal(unwind_walk_step(&w, NULL, NULL), 0);
	assert_int_equal(w.r.pc, 0x401000);
	assert_int_equal(w.r.sp, at(6));
	assert_int_equal(unwind_walk_step(&w, NULL, NULL), 0);
	assert_int_equal(w.r.pc, 0x401100);
	/* fp 0: the outermost frame record; the walk cannot go on. */
	assert_int_equal(unwind_walk_step(&w, NULL, NULL), 1);
}

/*
 * After a frame record, the caller's sp is only known to be at least
 * x29 + 16: a row counting from sp cuts the walk (it would read the
 * wrong slot), one counting from x29 goes on.
 */
static void sp_unknown_after_frame_record(void **state)
{
	struct unwind_row by_sp = row_of(UNWIND_SP, 48, -48, -40);
	struct unwind_row by_x29 = row_of(UNWIND_FP, 16, -16, -8);
	struct unwind_walk w;

	(void)state;
	stack[4] = at(12);
	stack[5] = 0x401000;
	stack[12] = at(20);
	stack[13] = 0x401100;
	unwind_walk_begin(&w, 0x400100, at(2), at(4), 0);
	assert_int_equal(unwind_walk_step(&w, NULL, NULL), 0);
	assert_int_equal(unwind_walk_step(&w, &by_sp, NULL), 1);
	assert_true(w.cut);

	unwind_walk_begin(&w, 0x400100, at(2), at(4), 0);
	assert_int_equal(unwind_walk_step(&w, NULL, NULL), 0);
	assert_int_equal(unwind_walk_step(&w, &by_x29, NULL), 0);
	assert_int_equal(w.r.pc, 0x401100);
	assert_int_equal(w.r.sp, at(14));
	assert_false(w.cut);
}

/*
 * arm64's packing: ra_off beside fp_off, the CFA's offset in eighths; the
 * slots of a frame record at the bottom of a large frame counted from
 * sp, not the CFA; what fits neither way is no rule.
 */
static void rules_packed_whole(void **state)
{
	static const int32_t cfa_offs[] = {
		-UNWIND_CFA_OFF_MAX - 8, -8, 0, 16, 8208, UNWIND_CFA_OFF_MAX
	};
	static const int32_t offs[] = { -1016, -16, -8, 0, 8, 1016 };
	struct unwind_row r;

	(void)state;
	assert_int_equal(UNWIND_CFA_OFF_MAX, 16376);
	for (uint32_t cfa = UNWIND_NONE; cfa <= UNWIND_SIGNAL; cfa++)
		for (size_t i = 0; i < sizeof(cfa_offs) / sizeof(*cfa_offs);
		     i++)
			for (size_t j = 0; j < sizeof(offs) / sizeof(*offs);
			     j++) {
				int32_t fp = offs[j],
					ra = offs[sizeof(offs) / sizeof(*offs) -
						  1 - j];

				r.rule = unwind_rule(cfa, cfa_offs[i], fp, ra);
				assert_int_equal(unwind_row_cfa(&r), cfa);
				assert_int_equal(unwind_row_cfa_off(&r),
						 cfa_offs[i]);
				assert_int_equal(unwind_row_fp_off(&r), fp);
				assert_int_equal(unwind_row_ra_off(&r), ra);
			}
	/* stp x29, x30, [sp] under a 2,304-byte frame: from sp. */
	r.rule = unwind_rule(UNWIND_SP, 2304, -2304, -2296);
	assert_int_equal(unwind_row_cfa(&r), UNWIND_SP);
	assert_int_equal(unwind_row_fp_off(&r), -2304);
	assert_int_equal(unwind_row_ra_off(&r), -2296);
	/* The return address still in x30, fp saved far: from sp too. */
	r.rule = unwind_rule(UNWIND_SP, 4096, -4096, 0);
	assert_int_equal(unwind_row_fp_off(&r), -4096);
	assert_int_equal(unwind_row_ra_off(&r), 0);
	/* Slots far from both, a CFA past 16 KiB, an odd offset: no rule. */
	assert_int_equal(unwind_rule(UNWIND_SP, 4096, -2048, -8), 0);
	assert_int_equal(unwind_rule(UNWIND_SP, 16384, -16, -8), 0);
	assert_int_equal(unwind_rule(UNWIND_SP, 20, -16, -8), 0);
}

/* Where the arm64 test program is: $BUILD/programs, or beside the tests. */
static int open_frames_program(char *path, size_t size)
{
	const char *build = getenv("BUILD");
	int fd;

	snprintf(path, size, "%s/programs/arm64-frames",
		 build ? build : "build");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd;
}

/* The address of the arm64 program's function name (its .symtab); 0: none. */
static uint64_t symbol_addr(int fd, const char *name)
{
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	uint64_t addr = 0;

	while (e && !addr && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0;
		     sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(d, (int)i, &sym))
				break;
			n = elf_strptr(e, sh.sh_link, sym.st_name);
			if (n && !strcmp(n, name))
				addr = sym.st_value;
		}
	}
	elf_end(e);
	return addr;
}

static void table_of_arm64_program(void **state)
{
	struct vm_unwind_table t = { 0 };
	struct vm_error err = { 0 };
	const struct vm_unwind_row *row;
	bool in_lr = false, in_record = false, by_x29 = false;
	char path[4096];
	uint64_t f;
	int fd;

	(void)state;
	fd = open_frames_program(path, sizeof(path));
	if (fd < 0) {
		skip();
		return;
	}
	assert_int_equal(vm_unwind_table_build_fd(fd, &t, path, &err), 0);
	f = symbol_addr(fd, "frames_caller");
	close(fd);
	assert_int_not_equal(f, 0);
	/* At its entry: CFA = sp, the return address still in x30. */
	row = vm_unwind_lookup(&t, f);
	assert_non_null(row);
	assert_int_equal(row->cfa, VM_UNWIND_SP);
	assert_int_equal(row->cfa_off, 0);
	assert_int_equal(row->ra_off, 0);
	/* Further in: x29 and x30 saved, the pair of a frame record. */
	for (size_t i = 0; i < t.n; i++) {
		if (t.rows[i].addr < f || t.rows[i].addr >= f + 256)
			continue;
		in_lr |= t.rows[i].cfa != VM_UNWIND_NONE && !t.rows[i].ra_off;
		in_record |= t.rows[i].ra_off &&
			     t.rows[i].fp_off == t.rows[i].ra_off - 8;
		by_x29 |= t.rows[i].cfa == VM_UNWIND_FP;
	}
	assert_true(in_lr);
	assert_true(in_record);
	assert_true(by_x29);
	/* Pointer authentication's rule is no reason to pass a row over. */
	assert_int_equal(t.unsupported, 0);
	vm_unwind_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(leaf_then_frame_record, clear_stack),
		cmocka_unit_test_setup(link_register_only_innermost,
				       clear_stack),
		cmocka_unit_test_setup(return_address_where_saved, clear_stack),
		cmocka_unit_test_setup(signal_frame_then_leaf, clear_stack),
		cmocka_unit_test_setup(frame_pointer_walk_stripped,
				       clear_stack),
		cmocka_unit_test_setup(sp_unknown_after_frame_record,
				       clear_stack),
		cmocka_unit_test(rules_packed_whole),
		cmocka_unit_test(table_of_arm64_program),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
