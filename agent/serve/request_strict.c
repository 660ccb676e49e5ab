// SPDX-License-Identifier: Apache-2.0
/*
 * request_strict.c - a request body is JSON as RFC 8259 defines it, and
 * nothing looser.
 *
 * json-c builds the tree request.c reads, but the tokener of Debian 12's
 * json-c (0.16), even with JSON_TOKENER_STRICT, takes field names in
 * single quotes, raw control characters inside strings and numbers with
 * leading zeros; it cuts a field name at \u0000 (so "timeout_seconds\u0000x"
 * would pass for timeout_seconds, slipping past the unknown-field rule) and
 * keeps the last of two fields of the same name.  jansson is strict about
 * all of these, so a body json-c accepted is read again by jansson, and
 * refused with a sentence when it is not RFC 8259 JSON.  (A \u0000 in a
 * value is JSON; request.c refuses it by the field's name.)
 */
#include "agent/serve/request.h"

#include <errno.h>
#include <string.h>

#include <jansson.h>

static const char bom[] = "\xef\xbb\xbf";

int vm_request_refuse_bom(const char *body, size_t len, struct vm_error *err)
{
	if (len < 3 || memcmp(body, bom, 3))
		return 0;
	return vm_error_set(
		err, EBADMSG,
		"the body starts with a UTF-8 byte order mark (bytes EF BB BF), which JSON sent over a network must not have (RFC 8259, section 8.1); send the JSON text alone");
}

int vm_request_check_strict(const char *body, size_t len, struct vm_error *err)
{
	json_error_t e;
	json_t *root;
	size_t at;

	root = json_loadb(body, len,
			  JSON_DECODE_ANY | JSON_REJECT_DUPLICATES |
				  JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL,
			  &e);
	if (root) {
		json_decref(root);
		return 0;
	}
	at = e.position > 0 ? (size_t)e.position : 0;
	switch (json_error_code(&e)) {
	case json_error_out_of_memory:
		return vm_error_set(err, ENOMEM, "out of memory parsing JSON");
	case json_error_null_byte_in_key:
		/* The unknown-field rule, for a name json-c would cut short. */
		return vm_error_set(
			err, EINVAL,
			"a field name holds \\u0000 (NUL) before byte %zu, so it is none of the fields the agent knows (names are compared whole)",
			at);
	case json_error_duplicate_key:
		return vm_error_set(
			err, EINVAL,
			"a field is given twice (%s before byte %zu); give each field once",
			e.text, at);
	default:
		break;
	}
	/* The last byte read is where the tokenizer gave up. */
	if (at > 0 && at <= len && body[at - 1] == '\'')
		return vm_error_set(
			err, EBADMSG,
			"the body is not valid JSON: a single quote at byte %zu; JSON quotes field names and strings with \" only",
			at - 1);
	return vm_error_set(
		err, EBADMSG,
		"the body is not valid JSON (RFC 8259): %s before byte %zu",
		e.text, at);
}
