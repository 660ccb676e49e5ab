// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_manifest.c - libFuzzer target for the manifest reader: the manifest
 * comes from a disk image, so it is untrusted input.  Whatever parses must
 * also serialize and parse again to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_manifest_ struct vm_manifest *m = NULL, *back = NULL;
	struct vm_error err = { 0 };
	char *json = NULL, *again = NULL;
	size_t len, len2;

	if (vm_manifest_parse((const char *)data, size, &m, &err) < 0)
		return 0;
	for (size_t i = 0; i < m->n_files; i++)
		if (vm_manifest_find_file(m, m->files[i].path) != &m->files[i])
			abort();
	if (vm_manifest_serialize(m, &json, &len, &err) < 0)
		abort();
	if (vm_manifest_parse(json, len, &back, &err) < 0)
		abort();
	if (vm_manifest_serialize(back, &again, &len2, &err) < 0 ||
	    len != len2 || memcmp(json, again, len))
		abort();
	free(json);
	free(again);
	return 0;
}
