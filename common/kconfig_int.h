/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kconfig_int.h - what the kconfig files share: the level names, and the
 * line-level helpers of the two parsers, kconfig_values.c (a kernel's
 * .config) and kconfig_fragment.c (kernel-config/vmtools.config).
 * Internal to common/.
 */
#ifndef VMTOOLS_COMMON_KCONFIG_INT_H
#define VMTOOLS_COMMON_KCONFIG_INT_H

#include "common/kconfig.h"

/* Indexed by enum vm_kconfig_level: "required", ... */
extern const char *const vm_kconfig_level_names[3];

void vm_kconfig_setting_clear(struct vm_kconfig_setting *s);

/* A NUL-terminated copy of the line [p, end) without trailing blanks. */
char *vm_kconfig_line_dup(const char *p, const char *end);

/*
 * Recognise "CONFIG_X=value" and "# CONFIG_X is not set" (value "n").
 * Returns 1 and fills *s, 0 when the line is something else, -ENOMEM.
 */
int vm_kconfig_parse_setting(const char *line, struct vm_kconfig_setting *s);

#endif
