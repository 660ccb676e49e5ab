// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_memctx.c - libFuzzer target for the walk of a PostgreSQL
 * memory-context tree (agent/samples/pg_memctx.c) over a synthetic
 * memory image (tests/unit/memctx_image.h): the first byte picks the
 * major version's tags, the rest is the target's memory from IMG_BASE on,
 * TopMemoryContext's pointer at its start.  Whatever the bytes, the walk
 * ends within its bounds, keeps parents before their children, and its
 * total is the sum of what it kept.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/samples/pg_memctx.h"
#include "tests/unit/memctx_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vm_memctx_limits lim = { .max_nodes = 5000,
					.max_depth = 50,
					.name_bytes = 64 << 10 };
	struct img m = { 0 };
	struct vm_memctx_tree t;
	uint64_t total = 0;

	if (size < 1)
		return 0;
	m.mem = malloc(size);
	if (!m.mem)
		return 0;
	memcpy(m.mem, data + 1, size - 1);
	m.size = size - 1;
	(void)vm_memctx_walk(vm_memctx_tags(15 + data[0] % 4), IMG_BASE,
			     img_read, &m, &lim, &t);
	if (t.n > lim.max_nodes || t.names_len > lim.name_bytes ||
	    t.tries > VM_MEMCTX_TRIES)
		abort();
	for (size_t i = 0; i < t.n; i++) {
		const struct vm_memctx_node *x = &t.v[i];

		if (i ? x->parent >= i || x->depth != t.v[x->parent].depth + 1 :
			x->parent != VM_MEMCTX_NONE)
			abort();
		if (x->depth >= lim.max_depth || x->type >= VM_MEMCTX_TYPES)
			abort();
		if (strlen(vm_memctx_str(&t, x->name)) >
		    VM_MEMCTX_NAME_MAX * 4 + 3)
			abort();
		total += x->mem_allocated;
	}
	if (total != t.total)
		abort();
	vm_memctx_tree_free(&t);
	free(m.mem);
	return 0;
}
