/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launcher_blob.h - the bytes of the static launcher put at /bin/NAME, one
 * build per architecture a bundled tool may be of (launcher_blob.c).
 */
#ifndef VMTOOLS_IMAGEBUILDER_LAUNCHER_BLOB_H
#define VMTOOLS_IMAGEBUILDER_LAUNCHER_BLOB_H

#include <stddef.h>

/*
 * The launcher for tools of ELF machine (EM_X86_64, EM_AARCH64), its
 * length into *len; NULL when vmtools-image has none for it.
 */
const unsigned char *vm_launcher_for(int machine, size_t *len);

#endif
