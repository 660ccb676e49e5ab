/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.h - what json-c lacks for this code: a reference released when its
 * variable goes out of scope (as cleanup.h's helpers), and a string that
 * is JSON null where there is none.
 */
#ifndef VMTOOLS_COMMON_JSON_H
#define VMTOOLS_COMMON_JSON_H

#include <json-c/json.h>

#include "common/cleanup.h"

static inline void vm_json_putp(struct json_object **o)
{
	if (*o)
		json_object_put(*o);
}

#define _cleanup_json_ _cleanup_(vm_json_putp)

/* s as a JSON string; JSON null (NULL) when s is NULL or empty. */
static inline struct json_object *vm_json_string_or_null(const char *s)
{
	return s && s[0] ? json_object_new_string(s) : NULL;
}

#endif
