// SPDX-License-Identifier: Apache-2.0
/*
 * vdso.c - the agent's own vDSO standing for every target's (vdso.h):
 * found by getauxval(AT_SYSINFO_EHDR), its size from our /proc/self/maps
 * line, and its unwind table built once from that memory.  The image
 * never changes while the agent runs, so neither is ever read again.
 */
#include "agent/unwind/vdso.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "common/cleanup.h"

static pthread_once_t image_once = PTHREAD_ONCE_INIT;
static const void *image_start;
static size_t image_size;

static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static struct vm_unwind_table table;
static bool have_table;

bool vm_vdso_path(const char *path)
{
	return path && !strcmp(path, "[vdso]");
}

/* The size of our vDSO mapping at base, from /proc/self/maps. */
static void find_image(void)
{
	uintptr_t base = getauxval(AT_SYSINFO_EHDR);
	_cleanup_fclose_ FILE *f = NULL;
	char line[512];

	if (!base)
		return;
	f = fopen("/proc/self/maps", "re");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long start, end;

		if (strstr(line, "[vdso]") &&
		    sscanf(line, "%llx-%llx", &start, &end) == 2 &&
		    start == base && end > start) {
			image_start = (const void *)base;
			image_size = end - start;
			return;
		}
	}
}

bool vm_vdso_image(const void **image, size_t *size)
{
	pthread_once(&image_once, find_image);
	*image = image_start;
	*size = image_size;
	return image_start != NULL;
}

static void build_table(void)
{
	const void *image;
	size_t size;

	if (!vm_vdso_image(&image, &size))
		return;
	if (vm_unwind_table_build_mem(image, size, &table, "[vdso]", NULL) <
		    0 ||
	    !table.n) {
		vm_unwind_table_free(&table);
		return;
	}
	have_table = true;
}

const struct vm_unwind_table *vm_vdso_unwind_table(uint64_t start, uint64_t end)
{
	pthread_once(&table_once, build_table);
	if (!have_table || end - start != image_size)
		return NULL;
	return &table;
}
