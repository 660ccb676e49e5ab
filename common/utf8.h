/* SPDX-License-Identifier: Apache-2.0 */
/*
 * utf8.h - whether bytes are UTF-8, through glibc's iconv (its UTF-8
 * decoder refuses overlong forms, surrogates and truncated sequences), for
 * what the project writes into JSON: a name that is not UTF-8 must be
 * encoded (common/manifest.h) or refused, never written raw.
 */
#ifndef VMTOOLS_COMMON_UTF8_H
#define VMTOOLS_COMMON_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when s[0..len) is valid UTF-8 (ASCII is checked without iconv). */
bool vm_utf8_valid(const char *s, size_t len);

/*
 * The length (1 to 4) of the UTF-8 character at the start of s[0..len),
 * its code point in *cp; 0 when the bytes there are not one.  For walking
 * text one character at a time (common/escape.h).
 */
size_t vm_utf8_char(const char *s, size_t len, uint32_t *cp);

#endif
