// SPDX-License-Identifier: Apache-2.0
/*
 * utf8.c - UTF-8 validation: ASCII (almost every path) by a scan, the rest
 * by converting from UTF-8 with iconv into a scratch buffer, which stops
 * with EILSEQ or EINVAL at the first byte that is not UTF-8; and one
 * character at a time, converted alone the same way.
 */
#include "common/utf8.h"

#include <errno.h>
#include <iconv.h>

bool vm_utf8_valid(const char *s, size_t len)
{
	char out[1024];
	iconv_t cd;
	size_t i;
	bool ok = true;

	for (i = 0; i < len && !(s[i] & 0x80); i++)
		;
	if (i == len)
		return true;
	cd = iconv_open("UTF-32LE", "UTF-8");
	if (cd == (iconv_t)-1)
		return false;
	{
		char *in = (char *)s + i;
		size_t left = len - i;

		while (left > 0) {
			char *o = out;
			size_t room = sizeof(out);

			if (iconv(cd, &in, &left, &o, &room) == (size_t)-1 &&
			    errno != E2BIG) {
				ok = false;
				break;
			}
		}
	}
	iconv_close(cd);
	return ok;
}

size_t vm_utf8_char(const char *s, size_t len, uint32_t *cp)
{
	unsigned char out[4];
	char *in = (char *)s, *o = (char *)out;
	size_t left = len < sizeof(out) ? len : sizeof(out), room = sizeof(out);
	iconv_t cd;

	if (len == 0)
		return 0;
	if (!(s[0] & 0x80)) {
		*cp = (unsigned char)s[0];
		return 1;
	}
	cd = iconv_open("UTF-32LE", "UTF-8");
	if (cd == (iconv_t)-1)
		return 0;
	/* Room for one code point: it stops after the first character. */
	iconv(cd, &in, &left, &o, &room);
	iconv_close(cd);
	if (room != 0)
		return 0;
	*cp = (uint32_t)out[0] | (uint32_t)out[1] << 8 |
	      (uint32_t)out[2] << 16 | (uint32_t)out[3] << 24;
	return (size_t)(in - s);
}
