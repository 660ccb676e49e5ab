// SPDX-License-Identifier: Apache-2.0
/*
 * error.c - recording a readable error message next to an errno.
 */
#include "common/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int vm_error_vset(struct vm_error *err, int code, int with_errno,
			 const char *fmt, va_list ap)
{
	size_t len;

	code = abs(code);
	if (code == 0)
		code = EIO;
	if (!err || err->code != 0)
		return -code;
	err->code = code;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	if (with_errno) {
		len = strlen(err->msg);
		snprintf(err->msg + len, sizeof(err->msg) - len, ": %s",
			 strerror(code));
	}
	return -code;
}

int vm_error_set(struct vm_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vm_error_vset(err, code, 0, fmt, ap);
	va_end(ap);
	return r;
}

int vm_error_errno(struct vm_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vm_error_vset(err, code, 1, fmt, ap);
	va_end(ap);
	return r;
}

void vm_error_clear(struct vm_error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}

const char *vm_error_str(const struct vm_error *err)
{
	if (!err || err->code == 0)
		return "no error";
	if (err->msg[0] == '\0')
		return strerror(err->code);
	return err->msg;
}
