/* SPDX-License-Identifier: Apache-2.0 */
/*
 * image_read.h - reading a built image back with libext2fs, without
 * mounting it: its manifest, and every regular file for `verify`.
 */
#ifndef VMTOOLS_IMAGEBUILDER_IMAGE_READ_H
#define VMTOOLS_IMAGEBUILDER_IMAGE_READ_H

#include <stdint.h>
#include <stdio.h>

#include "common/manifest.h"

struct vm_image;

int vm_image_open(const char *path, struct vm_image **out,
		  struct vm_error *err);
void vm_image_close(struct vm_image *img);

struct vm_image_info {
	char label[17];
	char uuid[37];
	uint64_t blocks, free_blocks, inodes, free_inodes;
	uint32_t block_size;
};
void vm_image_info(struct vm_image *img, struct vm_image_info *info);

/* Read and validate /.vmtools/manifest.json from the image. */
int vm_image_manifest(struct vm_image *img, struct vm_manifest **out,
		      struct vm_error *err);

struct vm_verify_result {
	uint64_t checked; /* files whose hash matched */
	uint64_t bad; /* hash mismatches, missing or unlisted files */
	uint64_t bytes; /* bytes hashed */
	uint64_t regular, dirs, symlinks; /* what the walk met */
};

/*
 * Walk the whole image, hash every regular file and compare with m.  Each
 * problem is one line on `report` (may be NULL); the count is in *res.
 * With hash == 0 only counts and sizes are gathered (inspect).
 */
int vm_image_verify(struct vm_image *img, const struct vm_manifest *m, int hash,
		    FILE *report, struct vm_verify_result *res,
		    struct vm_error *err);

#endif
