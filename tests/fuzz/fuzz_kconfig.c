// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_kconfig.c - libFuzzer target for the kernel-config checker: the
 * config it reads comes from --config FILE or a guest's /boot, and a
 * fragment from --fragment FILE.  The input is read both ways; a config
 * that parses is checked against the built-in fragment, and every setting
 * found must be found again by lookup.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vm_kconfig_fragment *builtin;
	struct vm_kconfig_fragment *f = NULL;
	struct vm_kconfig_values *v = NULL;
	struct vm_kconfig_summary sum;
	char *text;

	if (!builtin &&
	    vm_kconfig_fragment_parse(vm_kconfig_builtin_fragment(), "builtin",
				      &builtin, NULL) < 0)
		abort();
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (vm_kconfig_fragment_parse(text, "fuzz", &f, NULL) == 0) {
		for (size_t i = 0; i < f->n_wants; i++)
			if (!f->wants[i].cost || !f->wants[i].want.name)
				abort();
		vm_kconfig_fragment_free(f);
	}
	free(text);
	if (vm_kconfig_values_parse((const char *)data, size, &v, NULL) == 0) {
		for (size_t i = 0; i < v->n_settings; i++) {
			const char *got =
				vm_kconfig_get(v, v->settings[i].name);

			if (!got || strcmp(got, v->settings[i].value))
				abort();
			if (i && strcmp(v->settings[i - 1].name,
					v->settings[i].name) >= 0)
				abort();
		}
		vm_kconfig_check_values(builtin, v, "fuzz", NULL, &sum);
		vm_kconfig_values_free(v);
	}
	return 0;
}
