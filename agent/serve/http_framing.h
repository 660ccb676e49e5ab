/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_framing.h - what the agent refuses in a request's head itself,
 * before libmicrohttpd reads a body by it.  libmicrohttpd 0.9.75 lets these
 * through: with two Content-Length headers it reads the body by one of
 * them, so the bytes after it can be read as a second, smuggled request; a
 * Transfer-Encoding other than chunked leaves it waiting for a body it
 * cannot delimit; and it decodes %00 and other control bytes into the path
 * it routes.  Pure logic: unit-tested and fuzzed (tests/fuzz/fuzz_request.c).
 *
 * Each check returns 0, or sets err and returns
 *   -EBADMSG     400: the request is malformed
 *   -EOPNOTSUPP  501: a transfer coding the agent does not implement
 */
#ifndef VMTOOLS_AGENT_HTTP_FRAMING_H
#define VMTOOLS_AGENT_HTTP_FRAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct vm_http_header {
	const char *name;
	size_t name_len;
	const char *value;
	size_t value_len;
};

/*
 * The request target as it arrived (before percent-decoding, query
 * included): no control byte (below 0x20, or 0x7f), neither raw nor
 * percent-encoded.
 */
int vm_http_check_target(const char *target, size_t len, struct vm_error *err);

/*
 * The headers, every line of them in order: no control byte in a name or a
 * value (a tab is allowed in a value); at most one Content-Length, of
 * digits only; at most one Transfer-Encoding,
 * which is "chunked" alone; never both.  *out says how the body is
 * framed.
 */
struct vm_http_framing {
	bool has_length; /* a Content-Length was sent */
	uint64_t length; /* its value, saturated at UINT64_MAX */
	bool chunked;
};

int vm_http_check_headers(const struct vm_http_header *h, size_t n,
			  struct vm_http_framing *out, struct vm_error *err);

#endif
