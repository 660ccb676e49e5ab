// SPDX-License-Identifier: Apache-2.0
/*
 * escape.c - outside bytes written as \xHH where they are unsafe (see
 * escape.h), walking the text a character at a time with common/utf8.h.
 */
#include "common/escape.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/utf8.h"

/* Whether a code point is written as its bytes' escapes in a log. */
static bool unsafe_in_log(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 ||
	       cp == 0x2029;
}

struct sink {
	char *out;
	size_t size, len;
	bool full; /* a unit did not fit: nothing after it is written */
};

/* Append one unit (a character or an escape) whole, or nothing more. */
static void put(struct sink *k, const char *p, size_t n)
{
	if (!k->full && k->len + n < k->size) {
		memcpy(k->out + k->len, p, n);
		k->out[k->len + n] = '\0';
	} else {
		k->full = true;
	}
	k->len += n;
}

static void put_hex(struct sink *k, const unsigned char *s, size_t n,
		    enum vm_escape_mode mode)
{
	char esc[8];

	for (size_t i = 0; i < n; i++) {
		snprintf(esc, sizeof(esc), "%s%02x",
			 mode == VM_ESCAPE_JSON ? "\\\\x" : "\\x", s[i]);
		put(k, esc, strlen(esc));
	}
}

size_t vm_escape(char *out, size_t size, const char *s, size_t len,
		 enum vm_escape_mode mode)
{
	const unsigned char *u = (const unsigned char *)s;
	struct sink k = { .out = out, .size = size };
	uint32_t cp;
	size_t n;

	if (size > 0)
		out[0] = '\0';
	for (size_t i = 0; i < len; i += n) {
		n = vm_utf8_char(s + i, len - i, &cp);
		if (n == 0) {
			n = 1;
			put_hex(&k, u + i, 1, mode);
		} else if (mode == VM_ESCAPE_JSON) {
			put(&k, s + i, n);
		} else if (unsafe_in_log(cp) ||
			   (mode == VM_ESCAPE_WORD && cp == ' ')) {
			put_hex(&k, u + i, n, mode);
		} else if (mode == VM_ESCAPE_WORD && cp == '\\') {
			put(&k, "\\\\", 2);
		} else {
			put(&k, s + i, n);
		}
	}
	return k.len;
}
