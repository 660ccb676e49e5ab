/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base64.h - RFC 4648 base64 (with padding), through libcrypto opened when
 * first needed as in sha256.c.  The manifest writes a path that is not
 * UTF-8 this way, so that its JSON stays valid and the name is kept.
 */
#ifndef VMTOOLS_COMMON_BASE64_H
#define VMTOOLS_COMMON_BASE64_H

#include <stddef.h>

/* *out malloc'ed and NUL-terminated; 0 or -ENOMEM / -ENOENT (no libcrypto). */
int vm_base64_encode(const void *data, size_t len, char **out);

/*
 * Decode s[0..len): *out malloc'ed (len bytes, plus a NUL), *out_len.
 * -EINVAL unless s is canonical base64 (what vm_base64_encode gives).
 */
int vm_base64_decode(const char *s, size_t len, char **out, size_t *out_len);

#endif
