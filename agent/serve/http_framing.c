// SPDX-License-Identifier: Apache-2.0
/*
 * http_framing.c - the checks of a request's head that libmicrohttpd does
 * not make (see http_framing.h).  Values are quoted back escaped
 * (common/escape.h): they are whatever the client sent.
 */
#include "agent/serve/http_framing.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <strings.h>

#include "common/escape.h"

#define QUOTE_MAX 64 /* bytes of a client's value quoted back, escaped */

static bool is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int vm_http_check_target(const char *target, size_t len, struct vm_error *err)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)target[i];
		int hi, lo;

		if (c == '%' && i + 2 < len) {
			hi = hex_digit(target[i + 1]);
			lo = hex_digit(target[i + 2]);
			if (hi >= 0 && lo >= 0)
				c = (unsigned char)(hi << 4 | lo);
		}
		if (is_control(c))
			return vm_error_set(
				err, EBADMSG,
				"the request target has a control character (byte 0x%02x) at byte %zu; paths and query arguments are printable text",
				c, i);
	}
	return 0;
}

static bool name_is(const struct vm_http_header *h, const char *name,
		    size_t len)
{
	return h->name_len == len && !strncasecmp(h->name, name, len);
}

/* The value without the blanks around it, which HTTP ignores. */
static void trim(const char **v, size_t *len)
{
	while (*len > 0 && (**v == ' ' || **v == '\t')) {
		(*v)++;
		(*len)--;
	}
	while (*len > 0 && ((*v)[*len - 1] == ' ' || (*v)[*len - 1] == '\t'))
		(*len)--;
}

static const char *quote(const char *v, size_t len, char buf[4 * QUOTE_MAX + 1])
{
	vm_escape(buf, 4 * QUOTE_MAX + 1, v, len < QUOTE_MAX ? len : QUOTE_MAX,
		  VM_ESCAPE_TEXT);
	return buf;
}

static int check_controls(const struct vm_http_header *h, struct vm_error *err)
{
	char buf[4 * QUOTE_MAX + 1];

	for (size_t i = 0; i < h->name_len; i++)
		if (is_control((unsigned char)h->name[i]) || h->name[i] == ' ')
			return vm_error_set(
				err, EBADMSG,
				"the header name '%s' has a control character or a blank",
				quote(h->name, h->name_len, buf));
	for (size_t i = 0; i < h->value_len; i++)
		if (is_control((unsigned char)h->value[i]) &&
		    h->value[i] != '\t')
			return vm_error_set(
				err, EBADMSG,
				"the header %s has a control character (byte 0x%02x) in its value",
				quote(h->name, h->name_len, buf),
				(unsigned char)h->value[i]);
	return 0;
}

static int parse_length(const char *v, size_t len, uint64_t *out,
			struct vm_error *err)
{
	char buf[4 * QUOTE_MAX + 1];
	uint64_t n = 0;

	trim(&v, &len);
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return vm_error_set(
				err, EBADMSG,
				"Content-Length must be a number of bytes (digits only); got '%s'",
				quote(v, len, buf));
		/* Saturates: far over any body limit anyway. */
		n = n > (UINT64_MAX - 9) / 10 ? UINT64_MAX :
						n * 10 + (uint64_t)(v[i] - '0');
	}
	if (len == 0)
		return vm_error_set(
			err, EBADMSG,
			"Content-Length is empty; it must be a number of bytes");
	*out = n;
	return 0;
}

static int check_coding(const char *v, size_t len, struct vm_error *err)
{
	char buf[4 * QUOTE_MAX + 1];

	trim(&v, &len);
	if (len == 7 && !strncasecmp(v, "chunked", 7))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (v[i] == ',')
			return vm_error_set(
				err, EBADMSG,
				"Transfer-Encoding '%s' combines codings; the agent reads a body either by Content-Length or as chunked alone",
				quote(v, len, buf));
	return vm_error_set(
		err, EOPNOTSUPP,
		"Transfer-Encoding '%s' is not implemented; send the body with Content-Length or as chunked alone",
		quote(v, len, buf));
}

int vm_http_check_headers(const struct vm_http_header *h, size_t n,
			  struct vm_http_framing *out, struct vm_error *err)
{
	size_t lengths = 0, codings = 0;
	int r;

	*out = (struct vm_http_framing){ 0 };
	for (size_t i = 0; i < n; i++) {
		r = check_controls(&h[i], err);
		if (r < 0)
			return r;
		if (name_is(&h[i], "Content-Length", 14)) {
			if (++lengths > 1)
				return vm_error_set(
					err, EBADMSG,
					"the request has more than one Content-Length header; send one");
			out->has_length = true;
			r = parse_length(h[i].value, h[i].value_len,
					 &out->length, err);
		} else if (name_is(&h[i], "Transfer-Encoding", 17)) {
			if (++codings > 1)
				return vm_error_set(
					err, EBADMSG,
					"the request has more than one Transfer-Encoding header; send at most one, chunked");
			out->chunked = true;
			r = check_coding(h[i].value, h[i].value_len, err);
		}
		if (r < 0)
			return r;
	}
	if (lengths && codings)
		return vm_error_set(
			err, EBADMSG,
			"the request has both Content-Length and Transfer-Encoding; send one of them");
	return 0;
}
