// SPDX-License-Identifier: Apache-2.0
/*
 * ext2_error.c - a libext2fs error code as a struct vm_error
 * (ext2_error.h).
 */
#include "imagebuilder/ext2_error.h"

#include <errno.h>

int vm_ext2_error(struct vm_error *err, errcode_t code, const char *what,
		  const char *path)
{
	return vm_error_set(err, EIO, "%s %s: %s", what, path,
			    error_message(code));
}
