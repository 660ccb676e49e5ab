// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_unwind.c - libFuzzer target for the unwind table builder
 * (agent/unwind/unwind_table.c): any bytes a process might map, with
 * broken .eh_frame_hdr tables, CIEs and FDEs, must yield an error or a
 * table whose rows are sorted, never a crash or a read past the bytes;
 * lookups and a walk over a stack of the input's own bytes run on
 * whatever was built, and the walk ends.
 *
 * Seeds are made at build time by tests/fuzz/seeds/fuzz_unwind.sh (a shared
 * object without frame pointers, calling through its PLT, with alloca; the
 * same truncated), beside tests/fuzz/seeds/fuzz_unwind/libdw-huge-register:
 * 9 KiB on which libdw asks for 1.5 GiB (a register number in a CFA
 * instruction); in the fuzz runs an allocation past 256 MiB fails, as under
 * a memory limit (tests/run.sh).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/unwind/unwind.h"

struct fake {
	const struct vm_unwind_table *t;
	const uint8_t *stack;
	size_t len;
};

static const struct vm_unwind_table *find(void *arg, uint64_t pc,
					  uint64_t *link, bool *outside)
{
	*link = pc;
	*outside = false; /* the fuzzed table covers every pc */
	return ((struct fake *)arg)->t;
}

/* The stack is the input itself, based at 0x10000. */
static bool read_fake(void *arg, uint64_t addr, uint64_t *value)
{
	struct fake *f = arg;

	if (addr < 0x10000 || addr - 0x10000 + 8 > f->len)
		return false;
	memcpy(value, f->stack + (addr - 0x10000), 8);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vm_unwind_table t = { 0 };
	struct vm_unwind_counts counts = { 0 };
	uint8_t *copy = malloc(size ? size : 1);
	uint64_t ips[128];

	if (!copy)
		return 0;
	/* An exact allocation, so ASan sees any read past its end. */
	memcpy(copy, data, size);
	if (vm_unwind_table_build_mem(copy, size, &t, "fuzz", NULL) == 0) {
		struct fake f = { &t, copy, size };

		for (size_t i = 1; i < t.n; i++)
			if (t.rows[i - 1].addr >= t.rows[i].addr)
				abort();
		for (size_t i = 0; i < t.n; i++) {
			struct vm_unwind_regs r = { t.rows[i].addr, 0x10000,
						    0x10000 + size / 2, 0 };

			if (vm_unwind_lookup(&t, t.rows[i].addr) != &t.rows[i])
				abort();
			if (i < 16 &&
			    vm_unwind_stack(&r, find, read_fake, &f, ips, NULL,
					    128, &counts) > 128)
				abort();
		}
	}
	vm_unwind_table_free(&t);
	free(copy);
	return 0;
}
