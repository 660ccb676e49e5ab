/* SPDX-License-Identifier: Apache-2.0 */
/*
 * build.h - `vmtools-image build` as a function: staged root in, image
 * file out.  cmd_build.c only parses the command line around it.
 */
#ifndef VMTOOLS_IMAGEBUILDER_BUILD_H
#define VMTOOLS_IMAGEBUILDER_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/label.h"
#include "imagebuilder/writer.h"

/* Where --debug-dir's files go: where the agent and gdb look by build id. */
#define VM_DEBUG_BUILD_ID "/usr/lib/debug/.build-id"

struct vm_build_opts {
	const char *root;
	const char *kernel_release; /* NULL: the one under lib/modules */
	const char *label;
	const char *output;
	const char **binaries;
	size_t n_binaries;
	const char **debug_dirs; /* each DIR/.build-id -> VM_DEBUG_BUILD_ID */
	size_t n_debug_dirs;
	int no_default_perf; /* do not add perf when no --binary is given */
	const char *sysroot; /* bundled tools' loader and libraries; NULL: */
	/* the host's for the host's architecture, root's for another */
	int keep_owner;
	uint64_t size_bytes; /* 0: auto */
	int64_t epoch; /* < 0: SOURCE_DATE_EPOCH, else newest staged mtime */
	const char *depmod; /* depmod program, default "depmod" on PATH */
	const char *ui_dir; /* the agent's web UI, put at VM_UI_IMAGE_DIR */
};

struct vm_build_result {
	char kernel_release[256];
	struct vm_write_stats stats;
	size_t n_tools, n_links, n_files;
};

int vm_build(const struct vm_build_opts *o, struct vm_build_result *res,
	     struct vm_error *err);

#endif
