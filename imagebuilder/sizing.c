// SPDX-License-Identifier: Apache-2.0
/*
 * sizing.c - auto-sizing: data blocks + metadata of the groups needed to
 * hold them, iterated to a fixed point (more blocks can mean more groups,
 * hence more metadata).
 */
#include "imagebuilder/sizing.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static int is_power_of(uint64_t n, uint64_t base)
{
	while (n > 1 && n % base == 0)
		n /= base;
	return n == 1;
}

int vm_group_has_super(uint64_t g)
{
	return g <= 1 || is_power_of(g, 3) || is_power_of(g, 5) ||
	       is_power_of(g, 7);
}

uint64_t vm_size_overhead(uint64_t blocks, uint64_t inodes)
{
	uint64_t groups = div_up(blocks ? blocks : 1, VM_BLOCKS_PER_GROUP);
	uint64_t ipb = VM_BLOCK_SIZE / VM_INODE_SIZE;
	/* ext2fs_initialize rounds inodes per group up to whole blocks. */
	uint64_t ipg = div_up(div_up(inodes, groups), ipb) * ipb;
	uint64_t gdt = div_up(groups * 32, VM_BLOCK_SIZE);
	uint64_t total = 0;

	for (uint64_t g = 0; g < groups; g++) {
		if (vm_group_has_super(g))
			total += 1 + gdt;
		total += 2 + ipg / ipb; /* two bitmaps, the inode table */
	}
	return total;
}

/* Inodes to ask for: what is used plus a little, so ext4 has room. */
static uint64_t vm_size_inodes(uint64_t used)
{
	/* Read-only image: 1% spare covers lost+found and rounding. */
	return used + used / 100 + 16;
}

void vm_size_auto(const struct vm_size_need *need, struct vm_geometry *out)
{
	uint64_t inodes = vm_size_inodes(need->inodes);
	/* Margin for extents split at group boundaries: 0.2% + 64 blocks
	 * (ext2fs_initialize also wants 50 blocks beyond the metadata). */
	uint64_t data = need->data_blocks + need->data_blocks / 500 + 64;
	uint64_t blocks = data, prev = 0;

	while (blocks != prev) {
		prev = blocks;
		blocks = data + vm_size_overhead(prev, inodes);
	}
	/*
	 * ext2fs_initialize drops a last group too small for its metadata
	 * plus 50 blocks: make it big enough instead.
	 */
	if (blocks > VM_BLOCKS_PER_GROUP) {
		uint64_t groups = div_up(blocks, VM_BLOCKS_PER_GROUP);
		uint64_t rem = blocks - (groups - 1) * VM_BLOCKS_PER_GROUP;
		uint64_t last =
			vm_size_overhead(blocks, inodes) -
			vm_size_overhead((groups - 1) * VM_BLOCKS_PER_GROUP,
					 inodes);

		if (rem < last + 50)
			blocks += last + 50 - rem;
	}
	out->blocks = blocks;
	out->inodes = inodes;
}

int vm_parse_size(const char *s, uint64_t *bytes)
{
	char *end = NULL;
	unsigned long long v;
	unsigned shift = 0;

	if (!strcmp(s, "auto")) {
		*bytes = 0;
		return 0;
	}
	if (!s[0] || s[0] == '-' || s[0] == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	case 't':
	case 'T':
		shift = 40;
		break;
	case '\0':
		break;
	default:
		return -EINVAL;
	}
	if (shift) {
		end++;
		if (strcasecmp(end, "") && strcasecmp(end, "iB") &&
		    strcasecmp(end, "B"))
			return -EINVAL;
	} else if (*end) {
		return -EINVAL;
	}
	if (v > (UINT64_MAX >> shift))
		return -EINVAL;
	*bytes = (uint64_t)v << shift;
	return 0;
}
