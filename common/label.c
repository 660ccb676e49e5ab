// SPDX-License-Identifier: Apache-2.0
/*
 * label.c - checking a tools disk label (label.h).
 */
#include "common/label.h"

#include <errno.h>
#include <string.h>

#include "common/utf8.h"

int vm_label_check(const char *label, const char *what, struct vm_error *err)
{
	size_t len = strlen(label);

	if (len == 0 || len > VM_LABEL_MAX)
		return vm_error_set(
			err, EINVAL,
			"%s '%.64s' cannot be an ext4 label: it must be 1 to %d bytes (it is %zu)",
			what, label, VM_LABEL_MAX, len);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)label[i] < 0x20 || label[i] == 0x7f)
			return vm_error_set(
				err, EINVAL,
				"%s cannot be an ext4 label: it holds a control character (byte %zu); use letters, digits and punctuation",
				what, i + 1);
	if (!vm_utf8_valid(label, len))
		return vm_error_set(
			err, EINVAL,
			"%s cannot be an ext4 label: it is not UTF-8; use letters, digits and punctuation",
			what);
	return 0;
}
