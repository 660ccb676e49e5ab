// SPDX-License-Identifier: Apache-2.0
/*
 * base64.c - base64 with libcrypto's EVP_EncodeBlock and EVP_DecodeBlock,
 * libcrypto opened when first needed (common/dl.h).  EVP_DecodeBlock
 * tolerates blanks and keeps the padding's zero bytes: a decoding is
 * accepted only when encoding it again gives the same text, so every name
 * has one spelling.
 */
#include "common/base64.h"

#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/dl.h"

#ifndef VM_CRYPTO_SONAME
#error "VM_CRYPTO_SONAME: the Makefile gives libcrypto's soname"
#endif

static typeof(EVP_EncodeBlock) *sym_EVP_EncodeBlock;
static typeof(EVP_DecodeBlock) *sym_EVP_DecodeBlock;

static const struct vm_dl_func funcs[] = {
	VM_DL_FUNC(EVP_EncodeBlock, sym_EVP_EncodeBlock),
	VM_DL_FUNC(EVP_DecodeBlock, sym_EVP_DecodeBlock),
};

static struct vm_dl crypto = {
	.soname = VM_CRYPTO_SONAME,
	.funcs = funcs,
	.n_funcs = ARRAY_SIZE(funcs),
};

int vm_base64_encode(const void *data, size_t len, char **out)
{
	char *s;

	*out = NULL;
	if (vm_dl_load(&crypto, NULL) < 0)
		return -ENOENT;
	if (len > (size_t)INT_MAX / 2)
		return -ENOMEM;
	s = malloc((len + 2) / 3 * 4 + 1);
	if (!s)
		return -ENOMEM;
	sym_EVP_EncodeBlock((unsigned char *)s, data, (int)len);
	*out = s;
	return 0;
}

int vm_base64_decode(const char *s, size_t len, char **out, size_t *out_len)
{
	_cleanup_free_ char *bytes = NULL, *again = NULL;
	size_t n;
	int r;

	*out = NULL;
	if (vm_dl_load(&crypto, NULL) < 0)
		return -ENOENT;
	if (len == 0 || len % 4 || len > (size_t)INT_MAX)
		return -EINVAL;
	bytes = malloc(len / 4 * 3 + 1);
	if (!bytes)
		return -ENOMEM;
	r = sym_EVP_DecodeBlock((unsigned char *)bytes,
				(const unsigned char *)s, (int)len);
	if (r < 0)
		return -EINVAL;
	n = (size_t)r - (s[len - 1] == '=') - (s[len - 2] == '=');
	bytes[n] = '\0';
	r = vm_base64_encode(bytes, n, &again);
	if (r < 0)
		return r;
	if (strlen(again) != len || memcmp(again, s, len))
		return -EINVAL;
	*out = TAKE_PTR(bytes);
	*out_len = n;
	return 0;
}
