// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_verify.c - `vmtools-image verify FILE`: re-reads the image with
 * libext2fs (no mount) and checks every regular file against the sha256 in
 * its manifest; files missing from either side count as failures too.
 */
#include <stdio.h>
#include <string.h>

#include "common/manifest.h"
#include "imagebuilder/commands.h"
#include "imagebuilder/image_read.h"

int cmd_verify(int argc, char **argv)
{
	_cleanup_manifest_ struct vm_manifest *m = NULL;
	struct vm_image *img = NULL;
	struct vm_verify_result res;
	struct vm_error err = { 0 };
	int r;

	if (argc > 1 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("Usage: vmtools-image verify FILE\n"
		       "\n"
		       "Re-hash every file of the image against its manifest, without mounting.\n"
		       "Exit status 0 when all match, 1 otherwise.\n");
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr,
			"vmtools-image verify: expected one image file; see --help\n");
		return 2;
	}
	r = vm_image_open(argv[1], &img, &err);
	if (r == 0)
		r = vm_image_manifest(img, &m, &err);
	if (r == 0)
		r = vm_image_verify(img, m, 1, stderr, &res, &err);
	vm_image_close(img);
	if (r < 0) {
		fprintf(stderr, "vmtools-image verify: %s\n",
			vm_error_str(&err));
		return 1;
	}
	if (res.bad) {
		fprintf(stderr,
			"vmtools-image verify: %s: %llu problem(s), %llu file(s) good\n",
			argv[1], (unsigned long long)res.bad,
			(unsigned long long)res.checked);
		return 1;
	}
	printf("%s: %llu files verified (%llu bytes), kernel %s\n", argv[1],
	       (unsigned long long)res.checked, (unsigned long long)res.bytes,
	       m->kernel_release);
	return 0;
}
