// SPDX-License-Identifier: Apache-2.0
/*
 * setup_verify.c - `setup --verify`: re-hash every regular file the
 * manifest lists, as mounted, and refuse the disk when one is missing,
 * replaced by something else or differs, naming the first such file.
 */
#include "agent/setup/setup_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "common/sha256.h"

int vm_setup_verify(struct vm_setup_ctx *c, const struct vm_manifest *m,
		    struct vm_error *err)
{
	_cleanup_free_ char *first = NULL;
	size_t bad = 0;

	for (size_t i = 0; i < m->n_files; i++) {
		const struct vm_manifest_file *f = &m->files[i];
		char hex[VM_SHA256_HEX_LEN], path[PATH_MAX * 2];
		const char *why = NULL;
		struct stat st;

		snprintf(path, sizeof(path), "%s%s", c->mountpoint, f->path);
		if (lstat(path, &st) < 0)
			why = "is missing";
		else if (!S_ISREG(st.st_mode))
			why = "is not a regular file";
		else if (vm_sha256_file(path, hex, NULL) < 0)
			why = "cannot be read";
		else if (strcmp(hex, f->sha256))
			why = "does not match its sha256 in the manifest";
		if (!why)
			continue;
		if (!bad++ && asprintf(&first, "%s %s", f->path, why) < 0)
			first = NULL;
	}
	if (bad == 1)
		return vm_error_set(
			err, EBADMSG,
			"the tools disk is damaged: %s; rebuild the image or attach a good copy",
			first ? first : "a file differs");
	if (bad > 1)
		return vm_error_set(
			err, EBADMSG,
			"the tools disk is damaged: %s, and %zu more files differ; rebuild the image or attach a good copy",
			first ? first : "a file differs", bad - 1);
	c->res->verified = true;
	c->res->n_files_verified = m->n_files;
	vm_setup_action(c->res, "verified %zu files against the manifest",
			m->n_files);
	return 0;
}
