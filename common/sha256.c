// SPDX-License-Identifier: Apache-2.0
/*
 * sha256.c - SHA-256 through libcrypto's EVP interface.
 */
#include "common/sha256.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <unistd.h>

#include "common/cleanup.h"

struct vm_sha256 {
	EVP_MD_CTX *md;
};

struct vm_sha256 *vm_sha256_new(void)
{
	struct vm_sha256 *ctx = calloc(1, sizeof(*ctx));

	if (!ctx)
		return NULL;
	ctx->md = EVP_MD_CTX_new();
	if (!ctx->md || !EVP_DigestInit_ex(ctx->md, EVP_sha256(), NULL)) {
		vm_sha256_free(ctx);
		return NULL;
	}
	return ctx;
}

void vm_sha256_update(struct vm_sha256 *ctx, const void *data, size_t len)
{
	EVP_DigestUpdate(ctx->md, data, len);
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

	EVP_DigestFinal_ex(ctx->md, d, &n);
	to_hex(d, n, hex);
	vm_sha256_free(ctx);
}

void vm_sha256_free(struct vm_sha256 *ctx)
{
	if (!ctx)
		return;
	EVP_MD_CTX_free(ctx->md);
	free(ctx);
}

void vm_sha256_hex(const void *data, size_t len, char hex[VM_SHA256_HEX_LEN])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	EVP_Digest(data, len, d, &n, EVP_sha256(), NULL);
	to_hex(d, n, hex);
}

int vm_sha256_file(const char *path, char hex[VM_SHA256_HEX_LEN],
		   struct vm_error *err)
{
	_cleanup_close_ int fd = -1;
	struct vm_sha256 *ctx;
	char buf[1 << 16];
	ssize_t n;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return vm_error_errno(err, errno, "cannot open %s", path);
	ctx = vm_sha256_new();
	if (!ctx)
		return vm_error_set(err, ENOMEM, "out of memory hashing %s",
				    path);
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			vm_sha256_free(ctx);
			return vm_error_errno(err, errno, "cannot read %s",
					      path);
		}
		vm_sha256_update(ctx, buf, (size_t)n);
	}
	vm_sha256_final_hex(ctx, hex);
	return 0;
}
