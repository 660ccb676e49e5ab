/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sha256.h - SHA-256 of files and buffers (OpenSSL's libcrypto underneath,
 * opened when first needed), used by the image builder to write the
 * manifest and by both binaries to verify it.  Without libcrypto, _new()
 * gives NULL and the others fail with -ENOENT.
 */
#ifndef VMTOOLS_COMMON_SHA256_H
#define VMTOOLS_COMMON_SHA256_H

#include <stdbool.h>
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

/* 0, or -ENOENT (no libcrypto) / -ENOMEM with hex left empty. */
int vm_sha256_hex(const void *data, size_t len, char hex[VM_SHA256_HEX_LEN]);

/* Two digests of vm_sha256_hex() are equal, in constant time; false when
 * either is empty (not computed). */
bool vm_sha256_hex_equal(const char a[VM_SHA256_HEX_LEN],
			 const char b[VM_SHA256_HEX_LEN]);

/*
 * Hash what is left to read of fd, to its end; errors name name.  The
 * caller opens fd, so it chooses how (setup opens the files of the tools
 * disk without following a symlink off it).
 */
int vm_sha256_fd(int fd, const char *name, char hex[VM_SHA256_HEX_LEN],
		 struct vm_error *err);

#endif
