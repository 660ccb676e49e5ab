/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request.h - turning what a client sent into a struct vm_profile_request
 * (docs/api.md): the JSON body of POST /profile/cpu and the query
 * of GET /debug/pprof/profile.  Pure logic: no I/O, unit-tested and fuzzed.
 *
 * The outcome says which status the HTTP layer answers with:
 *   0           valid
 *   -EBADMSG    the body is not JSON (400); the message names the position
 *   -EINVAL     a field is wrong (422); the message names the field and
 *               what is allowed
 *   -EFBIG      the body is larger than VM_REQUEST_MAX_BODY (413)
 *
 * The rules themselves (ranges, defaults, targets) are the profile layer's
 * (agent/profile/limits.h); this file only says them in the API's words.
 */
#ifndef VMTOOLS_AGENT_REQUEST_H
#define VMTOOLS_AGENT_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "agent/profile/engine.h"
#include "agent/samples/sample.h"
#include "common/error.h"

#define VM_REQUEST_PPROF_DEFAULT_SECONDS 30 /* Go's net/http/pprof */
/* A profile request is a small JSON object; the HTTP server reads no more. */
#define VM_REQUEST_MAX_BODY 8192

/* What the agent was started with; applies to every request. */
struct vm_request_limits {
	uint32_t max_seconds; /* 0 means VM_SECONDS_MAX */
	const char *const *default_comms; /* the agent's --comm */
	size_t n_default_comms;
};

/*
 * A parsed request.  req.comms[] point into comm_buf, so the struct is
 * self-contained and may be copied by value.
 */
struct vm_api_request {
	struct vm_profile_request req;
	char comm_buf[VM_MAX_TARGETS][VM_COMM_LEN];
};

/*
 * Parse the body of POST /profile/cpu, /profile/offcpu or /profile/wall
 * (kind).  An empty body (or only blanks) means every default.  Fields
 * not in the contract are refused, so that a typo does not silently fall
 * back to a default; offcpu also takes min_block_us, faults its period,
 * and a profiler other than the eBPF one is refused for every kind but cpu
 * with a sentence saying why.
 */
int vm_request_parse_json(const char *body, size_t len,
			  enum vm_profile_kind kind,
			  const struct vm_request_limits *limits,
			  struct vm_api_request *out, struct vm_error *err);

/*
 * What json-c 0.16 lets through, checked by request_strict.c: a byte order
 * mark at the start (-EBADMSG), and anything in a body json-c parsed that
 * is not RFC 8259 JSON: single quotes, control characters in strings,
 * leading zeros (-EBADMSG); \u0000 in a field name, a field given twice
 * (-EINVAL, as an unknown or wrong field).
 */
int vm_request_refuse_bom(const char *body, size_t len, struct vm_error *err);
int vm_request_check_strict(const char *body, size_t len, struct vm_error *err);

/*
 * Build the request of GET /debug/pprof/profile from the value of its
 * `seconds` query argument (NULL when absent: Go's default of 30 s, capped
 * to the agent's limit).  Always gzipped pprof, the agent's targets.
 */
int vm_request_from_pprof_query(const char *seconds,
				const struct vm_request_limits *limits,
				struct vm_api_request *out,
				struct vm_error *err);

/*
 * The `format` query argument of GET /debug/pprof/profile, applied to a
 * request built by vm_request_from_pprof_query (NULL: unchanged, the
 * gzipped pprof of Go's convention).  Another format is sent as itself,
 * not gzipped: an SVG flame graph opens in a browser from the URL.
 */
int vm_request_pprof_format(const char *format, struct vm_api_request *out,
			    struct vm_error *err);

/* The effective upper bound of timeout_seconds. */
uint32_t vm_request_max_seconds(const struct vm_request_limits *limits);

/*
 * The answer to a body of more than limit bytes, the same from the HTTP
 * server (which stops reading it) and from the parser: sets err, returns
 * -EFBIG.
 */
int vm_request_too_large(size_t limit, struct vm_error *err);

#endif
