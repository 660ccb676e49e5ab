/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ext2_error.h - a libext2fs error code as the sentence of a struct
 * vm_error (ext2_error.c), for the writer and the reader alike.
 */
#ifndef VMTOOLS_IMAGEBUILDER_EXT2_ERROR_H
#define VMTOOLS_IMAGEBUILDER_EXT2_ERROR_H

#include <ext2fs/ext2fs.h>

#include "common/error.h"

/*
 * "what path: libext2fs's message for code" in err, as EIO (its codes are
 * not errnos); returns -EIO.  Call initialize_ext2_error_table() first,
 * or the message is a number.
 */
int vm_ext2_error(struct vm_error *err, errcode_t code, const char *what,
		  const char *path);

#endif
