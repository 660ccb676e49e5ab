/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encode.h - the output formats of a symbolized profile: pprof protobuf
 * (pprof.c, docs/profiler.md "The pprof we emit"), folded stacks for flame graph
 * tools (folded.c), and gzip (gzip.c).  Each returns a malloc'd buffer.
 */
#ifndef VMTOOLS_AGENT_ENCODE_H
#define VMTOOLS_AGENT_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/symbolize/symbolize.h"
#include "common/error.h"

int vm_pprof_encode(const struct vm_symbolized *y, void **out, size_t *len,
		    struct vm_error *err);

/* "comm;outermost;...;innermost count\n", one line per distinct stack. */
int vm_folded_encode(const struct vm_symbolized *y, void **out, size_t *len,
		     struct vm_error *err);

int vm_gzip(const void *in, size_t in_len, void **out, size_t *out_len,
	    struct vm_error *err);

#endif
