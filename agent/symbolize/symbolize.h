/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolize.h - turning the raw stacks of a struct vm_samples into named
 * frames with their mappings (symbolize.c), the input of both encoders
 * (pprof.c, folded.c).  Written once for every backend.
 *
 * User frames are looked up in the process's captured mappings and the
 * symbols of the mapped file or its debug file (symcache.h); kernel frames
 * in kallsyms.  Every frame gets a function name: where no symbol knows
 * it, FILE+0xSTART, START the link-time start of the function holding it
 * from .eh_frame_hdr (ehframe.h), as nm and addr2line number it; where no
 * function is known either, FILE+0xADDR, ADDR the link-time address;
 * "[kernel.kallsyms]+0xADDR" for a kernel address kallsyms does not name,
 * "[unknown]" for an address in no mapping.
 */
#ifndef VMTOOLS_AGENT_SYMBOLIZE_H
#define VMTOOLS_AGENT_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/samples/sample.h"
#include "agent/symbolize/symcache.h"
#include "common/error.h"
#include "common/strpool.h"

#define VM_KERNEL_MAPPING "[kernel.kallsyms]"

struct vm_sym_mapping {
	uint64_t start, end, pgoff;
	const char *file; /* interned */
	char build_id[2 * VM_BUILD_ID_MAX + 1]; /* hex, "" when unknown */
	bool kernel;
	bool has_functions; /* at least one of its frames was named */
};

/* Where a frame's function name came from, in the order they are tried. */
enum vm_name_source {
	VM_NAME_SYMBOL, /* the file's own symbols, kallsyms, a lost marker */
	VM_NAME_DEBUG_FILE, /* a separate debug file's symbols */
	VM_NAME_FUNCTION_START, /* FILE+0xSTART from .eh_frame_hdr */
	VM_NAME_ADDRESS, /* FILE+0xADDR, [unknown]: no function known */
	VM_NAME_SOURCES,
};

struct vm_sym_frame {
	uint64_t addr; /* as sampled: a process or kernel address */
	uint32_t mapping; /* index + 1 in vm_symbolized.mappings, 0: none */
	const char *function; /* interned, never NULL once symbolized */
	enum vm_name_source source;
};

struct vm_sym_stack {
	const struct vm_sample *sample;
	const struct vm_process *proc; /* NULL when never captured */
	const char *backend_type; /* PostgreSQL's, or NULL */
	const char *wait_event; /* "Class:Name" (pgwait.h), or NULL */
	/* A memory profile's context: its ident and type, or NULL */
	const char *context_ident, *context_type;
	struct vm_sym_frame *frames; /* leaf first: kernel, then user */
	size_t n_frames;
};

struct vm_symbolized {
	const struct vm_samples *samples;
	struct vm_sym_mapping *mappings;
	size_t n_mappings, cap_mappings;
	struct vm_sym_stack *stacks; /* one per sample, same order */
	size_t n_stacks;
	uint64_t frames_total; /* for tests, logs and the pprof's comment */
	uint64_t frames_by[VM_NAME_SOURCES]; /* per vm_name_source */
	struct vm_strpool strings; /* every name, once */
};

/*
 * Symbolize every sample of s (which must outlive out), the symbols of
 * its files kept in sc (NULL: read for this call only).  Fails only when
 * out of memory: what cannot be named stays an address.
 */
int vm_symbolize(struct vm_symcache *sc, const struct vm_samples *s,
		 struct vm_symbolized *out, struct vm_error *err);

void vm_symbolized_free(struct vm_symbolized *y);

/*
 * One copy of str in y->strings, shared by every use (freed with y):
 * the copy, or NULL when out of memory.
 */
const char *vm_symbolized_intern(struct vm_symbolized *y, const char *str);

/*
 * Warm the caches while a profile runs, so that symbolizing at its end is
 * quick: the kernel's symbols, and those of every file p maps.
 */
void vm_symbolize_prefetch_kernel(struct vm_symcache *sc);
void vm_symbolize_prefetch_process(struct vm_symcache *sc,
				   const struct vm_process *p);

/*
 * vm_kallsyms_addrs() on the running kernel's table sc keeps (read only
 * if it is not kept yet), under sc's lock: kernel frames known by name
 * (/proc/PID/stack) to addresses.  0, or -errno when the table cannot be
 * read or there is no sc (addrs all 0).
 */
int vm_symbolize_kernel_addrs(struct vm_symcache *sc, const char *const *names,
			      size_t n, uint64_t *addrs);

#endif
