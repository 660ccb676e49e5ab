/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memctx_image.h - a synthetic memory image for the memory-context walk
 * (agent/samples/pg_memctx.h): a flat buffer standing for the target's
 * memory from IMG_BASE on, the reader the walk calls over it, and helpers
 * that lay out MemoryContextData nodes in it.  Shared by test_memctx.c and
 * tests/fuzz/fuzz_memctx.c, as static inline.
 */
#ifndef VMTOOLS_TESTS_MEMCTX_IMAGE_H
#define VMTOOLS_TESTS_MEMCTX_IMAGE_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "agent/samples/pg_memctx.h"

#define IMG_BASE 0x10000ull

struct img {
	uint8_t *mem;
	size_t size;
	unsigned reads; /* calls of the reader */
	/* Called before each read: a tree rewritten while it is walked. */
	void (*before_read)(struct img *m);
	/* Past this many reads, the reader's time is up (0: never). */
	unsigned time_up_after;
};

static inline int img_read(void *arg, struct vm_memctx_iov *v, size_t n)
{
	struct img *m = arg;

	m->reads++;
	if (m->time_up_after && m->reads > m->time_up_after)
		return -ETIME;
	if (m->before_read)
		m->before_read(m);
	for (size_t i = 0; i < n; i++) {
		v[i].got = 0;
		if (v[i].addr < IMG_BASE || v[i].addr - IMG_BASE >= m->size)
			continue;
		size_t off = v[i].addr - IMG_BASE, len = v[i].len;

		if (len > m->size - off)
			len = m->size - off;
		memcpy(v[i].buf, m->mem + off, len);
		v[i].got = len;
	}
	return 0;
}

static inline void img_put64(struct img *m, uint64_t addr, uint64_t v)
{
	memcpy(m->mem + (addr - IMG_BASE), &v, sizeof(v));
}

static inline void img_put32(struct img *m, uint64_t addr, uint32_t v)
{
	memcpy(m->mem + (addr - IMG_BASE), &v, sizeof(v));
}

/* A node at addr with its links, as PostgreSQL lays it out. */
static inline void img_node(struct img *m, uint64_t addr, uint32_t tag,
			    uint64_t allocated, uint64_t parent,
			    uint64_t firstchild, uint64_t prev, uint64_t next,
			    uint64_t name, uint64_t ident)
{
	img_put32(m, addr + VM_MEMCTX_OFF_TYPE, tag);
	img_put64(m, addr + VM_MEMCTX_OFF_MEM_ALLOCATED, allocated);
	img_put64(m, addr + VM_MEMCTX_OFF_PARENT, parent);
	img_put64(m, addr + VM_MEMCTX_OFF_FIRSTCHILD, firstchild);
	img_put64(m, addr + VM_MEMCTX_OFF_PREVCHILD, prev);
	img_put64(m, addr + VM_MEMCTX_OFF_NEXTCHILD, next);
	img_put64(m, addr + VM_MEMCTX_OFF_NAME, name);
	img_put64(m, addr + VM_MEMCTX_OFF_IDENT, ident);
}

static inline void img_str(struct img *m, uint64_t addr, const char *s)
{
	memcpy(m->mem + (addr - IMG_BASE), s, strlen(s) + 1);
}

#endif
