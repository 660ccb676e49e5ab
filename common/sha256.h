/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sha256.h - SHA-256 of files and buffers (OpenSSL's libcrypto underneath),
 * used by the image builder to write the manifest and by both binaries to
 * verify it.
 */
#ifndef VMTOOLS_COMMON_SHA256_H
#define VMTOOLS_COMMON_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define VM_SHA256_LEN 32
#define VM_SHA256_HEX_LEN (2 * VM_SHA256_LEN + 1)

struct vm_sha256;

struct vm_sha256 *vm_sha256_new(void);
void vm_sha256_update(struct vm_sha256 *ctx, const void *data, size_t len);
/* Finishes and frees ctx; writes the digest as lowercase hex. */
void vm_sha256_final_hex(struct vm_sha256 *ctx, char hex[VM_SHA256_HEX_LEN]);
void vm_sha256_free(struct vm_sha256 *ctx);

void vm_sha256_hex(const void *data, size_t len, char hex[VM_SHA256_HEX_LEN]);

/* Hash a whole file by path; errors name the path. */
int vm_sha256_file(const char *path, char hex[VM_SHA256_HEX_LEN],
		   struct vm_error *err);

#endif
