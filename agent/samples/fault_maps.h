/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_maps.h - which kind of mapping a page fault was in (fault_maps.c),
 * for the faults profile's label (docs/memory.md): anonymous memory (the
 * heap, stacks, malloc's mappings), shared memory (any shared mapping:
 * PostgreSQL's shared buffers, a file mapped shared), or a private
 * mapping of a file (code and data of the binaries, a file read by mmap).
 *
 * The kernel hands the faulting address only; its mapping is looked up in
 * /proc/PID/maps when user space reads the sample, a fraction of a second
 * later.  A mapping unmapped by then (or a process gone) leaves the
 * address in none: such faults are labelled "unmapped", never guessed.
 *
 * The parsing and the lookup are pure; vm_fault_maps_classify() keeps
 * each process's mappings and reads them again (through the I/O pool)
 * when an address falls in none of them.
 */
#ifndef VMTOOLS_AGENT_FAULT_MAPS_H
#define VMTOOLS_AGENT_FAULT_MAPS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/iopool/iopool.h"

enum vm_fault_mapping {
	VM_FAULT_NONE, /* not a faults sample */
	VM_FAULT_ANONYMOUS,
	VM_FAULT_SHARED,
	VM_FAULT_FILE,
	VM_FAULT_UNMAPPED, /* in no mapping when user space looked */
	VM_FAULT_MAPPINGS
};

/* "anonymous", "shared", "file", "unmapped"; NULL for VM_FAULT_NONE. */
const char *vm_fault_mapping_name(enum vm_fault_mapping m);

struct vm_fault_range {
	uint64_t start, end;
	uint8_t kind; /* enum vm_fault_mapping */
};

/*
 * The text of /proc/PID/maps (len bytes) into *out, *n ranges in the
 * file's order (ascending); lines that do not parse are left out.  0 or
 * -ENOMEM.  *out is malloc'd (NULL when there are none).
 */
int vm_fault_ranges_parse(const char *text, size_t len,
			  struct vm_fault_range **out, size_t *n);

/* The kind of the range holding addr, VM_FAULT_UNMAPPED when none does. */
enum vm_fault_mapping vm_fault_ranges_find(const struct vm_fault_range *r,
					   size_t n, uint64_t addr);

/* Each process's mappings as last read, for the reader of the samples. */
struct vm_fault_maps {
	struct vm_fault_proc *v;
	size_t n, cap;
	struct vm_iopool *iopool; /* NULL: read directly */
	char *buf; /* VM_FAULT_MAPS_MAX_BYTES, for /proc/PID/maps */
	uint64_t reads; /* of /proc/PID/maps, for tests and notes */
};

/* The bytes of /proc/PID/maps read at most; mappings past them are none. */
#define VM_FAULT_MAPS_MAX_BYTES ((size_t)4 << 20)

/*
 * The kind of mapping addr is in for pid, from the mappings last read,
 * read again when none holds addr (at most once a millisecond per
 * process: now_ns is CLOCK_MONOTONIC).  VM_FAULT_UNMAPPED when no
 * mapping holds it, or the process is gone, or memory ran out.
 */
enum vm_fault_mapping vm_fault_maps_classify(struct vm_fault_maps *m,
					     uint32_t pid, uint64_t addr,
					     uint64_t now_ns);

void vm_fault_maps_free(struct vm_fault_maps *m);

#endif
