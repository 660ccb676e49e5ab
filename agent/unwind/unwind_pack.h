/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind_pack.h - a binary's unwind table (unwind_table.h) as the walk in
 * the kernel reads it (bpf/unwind.h), in unwind_pack.c: its rows made
 * small, followed by the index of their pages, and the bias that turns a
 * pc of a mapping of it into a row address.  What the BPF profile's store
 * (agent/profile/bpf/bpf_unwind.c) writes into its map, what the
 * user-space walk (unwind.c) steps by, and what the test that holds both
 * walks equal (tests/unit/test_unwind_steps.c) gives the BPF one.  Pure:
 * no I/O.
 */
#ifndef VMTOOLS_AGENT_UNWIND_PACK_H
#define VMTOOLS_AGENT_UNWIND_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/samples/sample.h"
#include "agent/unwind/unwind_table.h"
#include "bpf/unwind.h"

/*
 * The rule of row, packed (bpf/unwind.h): offsets that do not fit leave
 * the row to the frame pointer, which never happens with a compiler's
 * tables.
 */
uint32_t vm_unwind_rule(const struct vm_unwind_row *row);

/*
 * The entries t (with rows) packs into: its rows, then its index of
 * *pages + 1 entries, pages of 1 << *shift bytes.
 */
size_t vm_unwind_pack_size(const struct vm_unwind_table *t, uint32_t *shift,
			   uint32_t *pages);

/*
 * t's rows and index into out (vm_unwind_pack_size's entries, with its
 * shift and pages); false when its code spans 4 GiB or more.
 */
bool vm_unwind_pack(const struct vm_unwind_table *t, uint32_t shift,
		    uint32_t pages, struct unwind_row *out);

/* Row address = pc - *bias, for mapping m of the binary with table t. */
bool vm_unwind_bias(const struct vm_unwind_table *t, const struct vm_mapping *m,
		    uint64_t *bias);

#endif
