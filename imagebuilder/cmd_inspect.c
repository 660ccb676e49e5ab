// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_inspect.c - `vmtools-image inspect FILE`: a readable summary of an
 * image (filesystem, manifest, tools, links, counts and sizes), read with
 * libext2fs without mounting.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/manifest.h"
#include "imagebuilder/commands.h"
#include "imagebuilder/image_read.h"

static void mib(char *out, size_t size, uint64_t bytes)
{
	snprintf(out, size, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
}

int cmd_inspect(int argc, char **argv)
{
	_cleanup_manifest_ struct vm_manifest *m = NULL;
	struct vm_image *img = NULL;
	struct vm_image_info info;
	struct vm_verify_result res;
	struct vm_error err = { 0 };
	char when[64] = "?", a[32], b[32];
	time_t t;
	struct tm tm;
	int r;

	if (argc > 1 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("Usage: vmtools-image inspect FILE\n"
		       "\n"
		       "Print the image's manifest summary: kernel, tools, links, counts, sizes.\n");
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr,
			"vmtools-image inspect: expected one image file; see --help\n");
		return 2;
	}
	r = vm_image_open(argv[1], &img, &err);
	if (r == 0)
		r = vm_image_manifest(img, &m, &err);
	if (r == 0)
		r = vm_image_verify(img, m, 0, NULL, &res, &err);
	if (r < 0) {
		vm_image_close(img);
		fprintf(stderr, "vmtools-image inspect: %s\n",
			vm_error_str(&err));
		return 1;
	}
	vm_image_info(img, &info);
	vm_image_close(img);
	t = (time_t)m->build_time;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	printf("image:          %s\n", argv[1]);
	printf("label:          %s\n", info.label);
	printf("uuid:           %s\n", info.uuid);
	mib(a, sizeof(a), info.blocks * info.block_size);
	mib(b, sizeof(b),
	    (info.blocks - info.free_blocks) * (uint64_t)info.block_size);
	printf("size:           %s (%s used, %llu blocks of %u bytes)\n", a, b,
	       (unsigned long long)info.blocks, info.block_size);
	printf("inodes:         %llu used of %llu\n",
	       (unsigned long long)(info.inodes - info.free_inodes),
	       (unsigned long long)info.inodes);
	printf("format:         %d\n", m->format_version);
	printf("kernel release: %s\n", m->kernel_release);
	printf("arch:           %s\n", m->arch);
	printf("build time:     %lld (%s)\n", (long long)m->build_time, when);
	printf("generator:      %s\n", m->generator);
	mib(a, sizeof(a), res.bytes);
	printf("content:        %llu files (%s), %llu directories, %llu symlinks\n",
	       (unsigned long long)res.regular, a, (unsigned long long)res.dirs,
	       (unsigned long long)res.symlinks);
	printf("tools:          %zu\n", m->n_tools);
	for (size_t i = 0; i < m->n_tools; i++)
		printf("  %-12s %s -> %s (%zu libraries with the loader)\n",
		       m->tools[i].name, m->tools[i].path, m->tools[i].binary,
		       m->tools[i].n_libraries);
	printf("links:          %zu (guest path -> <mountpoint>target)\n",
	       m->n_links);
	for (size_t i = 0; i < m->n_links; i++)
		printf("  %s -> %s\n", m->links[i].path, m->links[i].target);
	if (res.bad)
		printf("warning:        %llu file(s) differ between the image and its manifest; run verify\n",
		       (unsigned long long)res.bad);
	return 0;
}
