// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_manifest.c - libFuzzer target for the manifest reader: the manifest
 * comes from a disk image, so it is untrusted input.  Whatever parses must
 * also serialize to UTF-8 (names that are not UTF-8 as base64) and parse
 * again to the same bytes and the same names.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/manifest.h"
#include "common/utf8.h"

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
	if (!vm_utf8_valid(json, len))
		abort();
	if (vm_manifest_parse(json, len, &back, &err) < 0)
		abort();
	if (back->n_files != m->n_files || back->n_links != m->n_links)
		abort();
	for (size_t i = 0; i < m->n_files; i++)
		if (strcmp(back->files[i].path, m->files[i].path))
			abort();
	for (size_t i = 0; i < m->n_links; i++)
		if (strcmp(back->links[i].path, m->links[i].path) ||
		    strcmp(back->links[i].target, m->links[i].target))
			abort();
	if (vm_manifest_serialize(back, &again, &len2, &err) < 0 ||
	    len != len2 || memcmp(json, again, len))
		abort();
	free(json);
	free(again);
	return 0;
}
