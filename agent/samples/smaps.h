/* SPDX-License-Identifier: Apache-2.0 */
/*
 * smaps.h - what the kernel says a process holds (smaps.c): the totals of
 * /proc/PID/smaps_rollup, and /proc/PID/smaps summed by the kind of
 * mapping, for memory profiles (docs/memory.md).  Pure parsers of the
 * text; the caller reads it (through the I/O pool: a process stuck with
 * its mappings locked makes the read wait).
 */
#ifndef VMTOOLS_AGENT_SMAPS_H
#define VMTOOLS_AGENT_SMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The bytes of /proc/PID/smaps read at most; past it the rest is left. */
#define VM_SMAPS_MAX_BYTES ((size_t)8 << 20)

/* smaps_rollup's lines, in bytes. */
struct vm_smaps_rollup {
	uint64_t rss, pss, pss_anon, pss_file, pss_shmem, anonymous, swap;
	/* Pss_Anon, Pss_File and Pss_Shmem were there (Linux 5.8 on) */
	bool split;
};

/*
 * The text of /proc/PID/smaps_rollup into out.  0; -EINVAL when it has
 * no Pss line.
 */
int vm_smaps_rollup_parse(const char *text, struct vm_smaps_rollup *out);

/* The kinds of mapping a process's memory is told apart by. */
enum vm_smaps_kind {
	VM_SMAPS_HEAP, /* [heap], the brk area */
	VM_SMAPS_ANON, /* anonymous mappings: malloc's arenas, mmap */
	VM_SMAPS_STACK, /* [stack] */
	VM_SMAPS_SHMEM, /* System V and POSIX shared memory, memfd */
	VM_SMAPS_FILE, /* files mapped, the executable and libraries */
	VM_SMAPS_OTHER, /* [vdso], [vvar] and the like */
	VM_SMAPS_KINDS
};

/* The pseudo-frame a kind reads as: "[heap]", "[anonymous mappings]"... */
const char *vm_smaps_kind_frame(enum vm_smaps_kind k);

/*
 * The kind of the mapping whose line of /proc/PID/maps (or header in
 * smaps) is line, len bytes without its '\n': by its path.
 */
enum vm_smaps_kind vm_smaps_line_kind(const char *line, size_t len);

struct vm_smaps_kinds {
	uint64_t pss[VM_SMAPS_KINDS]; /* bytes */
	size_t mappings;
};

/*
 * The text of /proc/PID/smaps (len bytes; a last mapping cut short counts
 * what it has) summed by kind into out.
 */
void vm_smaps_parse(const char *text, size_t len, struct vm_smaps_kinds *out);

#endif
