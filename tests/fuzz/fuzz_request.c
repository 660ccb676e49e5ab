// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_request.c - libFuzzer target for what the agent reads from a
 * client: the body of POST /profile/cpu and the `seconds` and `format`
 * query arguments of /debug/pprof/profile (agent/serve/request.c,
 * request_strict.c), and the same bytes as a request head: a target line,
 * then "Name: value" lines (agent/serve/http_framing.c).  Beyond not
 * crashing: a request that parses is within the contract's ranges; a head
 * that passes frames its body one way only and has no control byte where
 * the checks forbid one; every refusal is one line of UTF-8 text (what a
 * client sent is quoted escaped), and so is every log field escaped from
 * the input.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/serve/http_framing.h"
#include "agent/serve/request.h"
#include "common/escape.h"
#include "common/utf8.h"

#define MAX_HEADERS 64

/* Valid UTF-8 without a control character: one line of text. */
static bool one_line(const char *s, size_t len)
{
	uint32_t cp;
	size_t n;

	for (size_t i = 0; i < len; i += n) {
		n = vm_utf8_char(s + i, len - i, &cp);
		if (n == 0 || cp < 0x20 || cp == 0x7f)
			return false;
	}
	return true;
}

static void check_body(const uint8_t *data, size_t size)
{
	static const char *const comms[] = { "postgres" };
	struct vm_request_limits limits = { .max_seconds = 0,
					    .default_comms = comms,
					    .n_default_comms = 1 };
	struct vm_api_request r;
	struct vm_error err = { 0 };
	char *query;
	int rc;

	rc = vm_request_parse_json((const char *)data, size, VM_KIND_CPU,
				   &limits, &r, &err);
	if (rc == 0) {
		if (r.req.frequency < 1 || r.req.frequency > 1000 ||
		    r.req.seconds < 1 || r.req.seconds > 60 ||
		    r.req.n_comms > VM_MAX_TARGETS ||
		    r.req.n_pids > VM_MAX_TARGETS ||
		    r.req.n_comms + r.req.n_pids == 0)
			abort();
		for (size_t i = 0; i < r.req.n_comms; i++)
			if (strlen(r.req.comms[i]) < 1 ||
			    strlen(r.req.comms[i]) >= VM_COMM_LEN)
				abort();
	} else if ((rc != -EINVAL && rc != -EBADMSG && rc != -EFBIG) ||
		   err.msg[0] == '\0') {
		abort();
	}

	query = strndup((const char *)data, size);
	if (!query)
		return;
	vm_error_clear(&err);
	rc = vm_request_from_pprof_query(query, &limits, &r, &err);
	if (rc == 0 && (r.req.seconds < 1 || r.req.seconds > 60))
		abort();
	/* The same bytes as its format argument. */
	vm_error_clear(&err);
	rc = vm_request_pprof_format(query, &r, &err);
	if ((rc == 0 && r.req.format != VM_FORMAT_PPROF &&
	     r.req.format != VM_FORMAT_FOLDED &&
	     r.req.format != VM_FORMAT_SVG) ||
	    (rc < 0 && (rc != -EINVAL || err.msg[0] == '\0')))
		abort();
	free(query);
}

static bool has_control(const char *s, size_t len, bool tab_allowed)
{
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] < 0x20 || s[i] == 0x7f) &&
		    !(tab_allowed && s[i] == '\t'))
			return true;
	return false;
}

static void check_head(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *eol, *colon;
	struct vm_http_header h[MAX_HEADERS];
	struct vm_http_framing f;
	struct vm_error err = { 0 };
	size_t n = 0, lengths = 0, codings = 0;
	int rc;

	eol = memchr(p, '\n', size);
	if (!eol)
		eol = end;
	rc = vm_http_check_target(p, (size_t)(eol - p), &err);
	if (rc == 0 && has_control(p, (size_t)(eol - p), false))
		abort();
	if (rc < 0 && (rc != -EBADMSG || !one_line(err.msg, strlen(err.msg))))
		abort();

	for (p = eol < end ? eol + 1 : end; p < end && n < MAX_HEADERS;
	     p = eol < end ? eol + 1 : end) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon)
			continue;
		h[n++] = (struct vm_http_header){ p, (size_t)(colon - p),
						  colon + 1,
						  (size_t)(eol - colon - 1) };
	}
	vm_error_clear(&err);
	rc = vm_http_check_headers(h, n, &f, &err);
	if (rc < 0) {
		if ((rc != -EBADMSG && rc != -EOPNOTSUPP) ||
		    !one_line(err.msg, strlen(err.msg)))
			abort();
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (has_control(h[i].name, h[i].name_len, false) ||
		    has_control(h[i].value, h[i].value_len, true))
			abort();
		if (h[i].name_len == 14 &&
		    !strncasecmp(h[i].name, "Content-Length", 14))
			lengths++;
		if (h[i].name_len == 17 &&
		    !strncasecmp(h[i].name, "Transfer-Encoding", 17))
			codings++;
	}
	if (lengths > 1 || codings > 1 || (lengths && codings) ||
	    f.has_length != (lengths == 1) || f.chunked != (codings == 1))
		abort();
}

static void check_escape(const uint8_t *data, size_t size)
{
	char out[1024];
	size_t n;

	n = vm_escape(out, sizeof(out), (const char *)data, size,
		      VM_ESCAPE_WORD);
	if (!one_line(out, strlen(out)) || strchr(out, ' ') ||
	    (n < sizeof(out) && strlen(out) != n))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_body(data, size);
	check_head(data, size);
	check_escape(data, size);
	return 0;
}
