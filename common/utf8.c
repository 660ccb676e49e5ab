// SPDX-License-Identifier: Apache-2.0
/*
 * utf8.c - UTF-8 validation: ASCII (almost every path) by a scan, the rest
 * by converting from UTF-8 with iconv into a scratch buffer, which stops
 * with EILSEQ or EINVAL at the first byte that is not UTF-8.
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
