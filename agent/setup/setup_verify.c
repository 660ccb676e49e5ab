// SPDX-License-Identifier: Apache-2.0
/*
 * setup_verify.c - `setup --verify`: re-hash every regular file the
 * manifest lists, as mounted, and refuse the disk when one is missing,
 * replaced by something else or differs, naming the first such file.
 * Each file is opened once, below the mountpoint and never off the disk
 * (disk_open.h), and hashed from that fd.
 */
#include "agent/setup/setup_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/setup/disk_open.h"
#include "common/cleanup.h"
#include "common/sha256.h"

int vm_setup_verify(struct vm_setup_ctx *c, const struct vm_manifest *m,
		    dev_t disk, struct vm_error *err)
{
	_cleanup_close_ int root = vm_disk_open_root(c->mountpoint, disk, err);
	_cleanup_free_ char *first = NULL;
	size_t bad = 0;

	if (root < 0)
		return root;
	for (size_t i = 0; i < m->n_files; i++) {
		const struct vm_manifest_file *f = &m->files[i];
		char hex[VM_SHA256_HEX_LEN];
		const char *why = NULL;
		_cleanup_close_ int fd =
			vm_disk_open_file(root, disk, f->path, &why);

		if (fd >= 0 && vm_sha256_fd(fd, f->path, hex, NULL) < 0)
			why = "cannot be read";
		else if (fd >= 0 && strcmp(hex, f->sha256))
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
