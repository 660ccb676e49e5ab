/* SPDX-License-Identifier: Apache-2.0 */
/*
 * encode.h - the output formats of a symbolized profile: pprof protobuf
 * (pprof.c, docs/profiler.md "The pprof we emit"), folded stacks for flame graph
 * tools (folded.c), an interactive flame graph (svg.c, laid out by
 * flame.c), and gzip (gzip.c).  Each returns a malloc'd buffer; format.c
 * picks one by name and sends it gzipped or not.
 */
#ifndef VMTOOLS_AGENT_ENCODE_H
#define VMTOOLS_AGENT_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/symbolize/symbolize.h"
#include "common/error.h"

enum vm_format {
	VM_FORMAT_PPROF,
	VM_FORMAT_FOLDED,
	VM_FORMAT_SVG,
};

/* The formats by name, as the API and the command line take them. */
#define VM_FORMAT_NAMES "pprof, folded or svg"
/* "pprof", "folded", "svg": the names requests give; -EINVAL for another. */
int vm_format_from_name(const char *name, enum vm_format *out);

/* A profile encoded, and what it is sent as. */
struct vm_encoded {
	void *data; /* malloc'd, the caller's */
	size_t len;
	const char *content_type; /* static string */
	const char *filename; /* static: profile.pb, profile.pb.gz, ... */
};

/*
 * A symbolized profile in one of the formats, gzipped when asked, with its
 * content type and file name (format.c): the one way every profile is
 * encoded, on-demand, a history merge or a continuous window.
 */
int vm_encode_profile(const struct vm_symbolized *y, enum vm_format format,
		      bool gzip, struct vm_encoded *out, struct vm_error *err);

int vm_pprof_encode(const struct vm_symbolized *y, void **out, size_t *len,
		    struct vm_error *err);

/* "comm;outermost;...;innermost count\n", one line per distinct stack. */
int vm_folded_encode(const struct vm_symbolized *y, void **out, size_t *len,
		     struct vm_error *err);

/*
 * One self-contained SVG flame graph: search, click to zoom, reset; each
 * frame's <title> is "NAME (COUNT samples, SHARE%)".  Same profile, same
 * bytes.
 */
int vm_svg_encode(const struct vm_symbolized *y, void **out, size_t *len,
		  struct vm_error *err);

/*
 * What one sample weighs where a stack gets one number (folded text, the
 * flame graph's widths), and whether that number is a time in nanoseconds
 * (a profile kind that measures time) rather than a count of samples (or
 * of bytes, in a memory profile).
 * Written once here for both encoders (folded.c).
 */
uint64_t vm_sample_weight(const struct vm_samples *s,
			  const struct vm_sample *x);
bool vm_weight_is_time(const struct vm_samples *s);

/* How a frame without a function reads: "[unknown]", "libc.so.6+0x1234". */
void vm_frame_fallback_name(const struct vm_symbolized *y,
			    const struct vm_sym_frame *f, char *buf,
			    size_t size);

int vm_gzip(const void *in, size_t in_len, void **out, size_t *out_len,
	    struct vm_error *err);

#endif
