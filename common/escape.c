// SPDX-License-Identifier: Apache-2.0
/*
 * escape.c - outside bytes written as \xHH where they are unsafe (see
 * escape.h).  UTF-8 is checked here rather than with a library: neither
 * binary links one that exports a validator, and RFC 3629's table is
 * short.
 */
#include "common/escape.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

size_t vm_utf8_char(const unsigned char *s, size_t len, unsigned *cp)
{
	/* The smallest code point each length may encode. */
	static const unsigned min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t n;
	unsigned c;

	if (len == 0)
		return 0;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		c = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		c = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/* Whether a code point is written as its bytes' escapes in a log. */
static bool unsafe_in_log(unsigned cp)
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
	unsigned cp;
	size_t n;

	if (size > 0)
		out[0] = '\0';
	for (size_t i = 0; i < len; i += n) {
		n = vm_utf8_char(u + i, len - i, &cp);
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
