// SPDX-License-Identifier: Apache-2.0
/*
 * sha256.c - SHA-256 through libcrypto's EVP interface, libcrypto being
 * opened when first needed (common/dl.h; VM_CRYPTO_SONAME comes from the
 * Makefile): the agent's `profile` never hashes and does not pay for
 * loading it.
 */
#include "common/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/dl.h"

#ifndef VM_CRYPTO_SONAME
#error "VM_CRYPTO_SONAME: the Makefile gives libcrypto's soname"
#endif

static typeof(EVP_MD_CTX_new) *sym_EVP_MD_CTX_new;
static typeof(EVP_MD_CTX_free) *sym_EVP_MD_CTX_free;
static typeof(EVP_DigestInit_ex) *sym_EVP_DigestInit_ex;
static typeof(EVP_DigestUpdate) *sym_EVP_DigestUpdate;
static typeof(EVP_DigestFinal_ex) *sym_EVP_DigestFinal_ex;
static typeof(EVP_Digest) *sym_EVP_Digest;
static typeof(EVP_sha256) *sym_EVP_sha256;
static typeof(EVP_MD_fetch) *sym_EVP_MD_fetch;
static typeof(EVP_DigestInit_ex2) *sym_EVP_DigestInit_ex2;
static typeof(CRYPTO_memcmp) *sym_CRYPTO_memcmp;

static const struct vm_dl_func funcs[] = {
	VM_DL_FUNC(EVP_MD_CTX_new, sym_EVP_MD_CTX_new),
	VM_DL_FUNC(EVP_MD_CTX_free, sym_EVP_MD_CTX_free),
	VM_DL_FUNC(EVP_DigestInit_ex, sym_EVP_DigestInit_ex),
	VM_DL_FUNC(EVP_DigestUpdate, sym_EVP_DigestUpdate),
	VM_DL_FUNC(EVP_DigestFinal_ex, sym_EVP_DigestFinal_ex),
	VM_DL_FUNC(EVP_Digest, sym_EVP_Digest),
	VM_DL_FUNC(EVP_sha256, sym_EVP_sha256),
	VM_DL_FUNC(EVP_MD_fetch, sym_EVP_MD_fetch),
	VM_DL_FUNC(EVP_DigestInit_ex2, sym_EVP_DigestInit_ex2),
	VM_DL_FUNC(CRYPTO_memcmp, sym_CRYPTO_memcmp),
};

static struct vm_dl crypto = {
	.soname = VM_CRYPTO_SONAME,
	.funcs = funcs,
	.n_funcs = ARRAY_SIZE(funcs),
};

struct vm_sha256 {
	EVP_MD_CTX *md;
};

struct vm_sha256 *vm_sha256_new(void)
{
	struct vm_sha256 *ctx;

	if (vm_dl_load(&crypto, NULL) < 0)
		return NULL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	ctx->md = sym_EVP_MD_CTX_new();
	if (!ctx->md ||
	    !sym_EVP_DigestInit_ex(ctx->md, sym_EVP_sha256(), NULL)) {
		vm_sha256_free(ctx);
		return NULL;
	}
	return ctx;
}

void vm_sha256_update(struct vm_sha256 *ctx, const void *data, size_t len)
{
	sym_EVP_DigestUpdate(ctx->md, data, len);
}

static void to_hex(const unsigned char *d, unsigned int n, char *hex)
{
	static const char digits[] = "0123456789abcdef";

	for (unsigned int i = 0; i < n; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[2 * n] = '\0';
}

void vm_sha256_final_hex(struct vm_sha256 *ctx, char hex[VM_SHA256_HEX_LEN])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	sym_EVP_DigestFinal_ex(ctx->md, d, &n);
	to_hex(d, n, hex);
	vm_sha256_free(ctx);
}

void vm_sha256_free(struct vm_sha256 *ctx)
{
	if (!ctx)
		return;
	sym_EVP_MD_CTX_free(ctx->md);
	free(ctx);
}

/*
 * One-shot hashes reuse a context per thread and a SHA-256 fetched once:
 * EVP_Digest() allocates a context and looks the algorithm up each time,
 * which an image pays once per file.
 */
static EVP_MD *sha256_md;
static pthread_key_t ctx_key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void free_ctx(void *ctx)
{
	sym_EVP_MD_CTX_free(ctx);
}

static void init_once(void)
{
	sha256_md = sym_EVP_MD_fetch(NULL, "SHA256", NULL);
	if (pthread_key_create(&ctx_key, free_ctx))
		sha256_md = NULL;
}

static EVP_MD_CTX *thread_ctx(void)
{
	EVP_MD_CTX *c;

	pthread_once(&once, init_once);
	if (!sha256_md)
		return NULL;
	c = pthread_getspecific(ctx_key);
	if (!c) {
		c = sym_EVP_MD_CTX_new();
		if (c && pthread_setspecific(ctx_key, c)) {
			sym_EVP_MD_CTX_free(c);
			c = NULL;
		}
	}
	return c;
}

int vm_sha256_hex(const void *data, size_t len, char hex[VM_SHA256_HEX_LEN])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	EVP_MD_CTX *c;

	hex[0] = '\0';
	if (vm_dl_load(&crypto, NULL) < 0)
		return -ENOENT;
	c = thread_ctx();
	if (c && sym_EVP_DigestInit_ex2(c, sha256_md, NULL) &&
	    sym_EVP_DigestUpdate(c, data, len) &&
	    sym_EVP_DigestFinal_ex(c, d, &n)) {
		to_hex(d, n, hex);
		return 0;
	}
	if (!sym_EVP_Digest(data, len, d, &n, sym_EVP_sha256(), NULL))
		return -ENOMEM;
	to_hex(d, n, hex);
	return 0;
}

bool vm_sha256_hex_equal(const char a[VM_SHA256_HEX_LEN],
			 const char b[VM_SHA256_HEX_LEN])
{
	return vm_dl_load(&crypto, NULL) == 0 && a[0] && b[0] &&
	       sym_CRYPTO_memcmp(a, b, VM_SHA256_HEX_LEN) == 0;
}

int vm_sha256_fd(int fd, const char *name, char hex[VM_SHA256_HEX_LEN],
		 struct vm_error *err)
{
	struct vm_sha256 *ctx;
	char buf[1 << 16];
	ssize_t n;

	int r = vm_dl_load(&crypto, err);

	hex[0] = '\0';
	if (r < 0)
		return r;
	ctx = vm_sha256_new();
	if (!ctx)
		return vm_error_set(err, ENOMEM, "out of memory hashing %s",
				    name);
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			vm_sha256_free(ctx);
			return vm_error_errno(err, errno, "cannot read %s",
					      name);
		}
		vm_sha256_update(ctx, buf, (size_t)n);
	}
	vm_sha256_final_hex(ctx, hex);
	return 0;
}
