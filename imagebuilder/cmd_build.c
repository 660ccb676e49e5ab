// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_build.c - `vmtools-image build`: the command line around vm_build().
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/kconfig.h"
#include "common/subcommand.h"
#include "common/ui.h"
#include "imagebuilder/build.h"
#include "imagebuilder/commands.h"
#include "imagebuilder/sizing.h"
#include "imagebuilder/tree.h"

#define WHO "vmtools-image build"
/* The agent's web UI as `make install` puts it. */
#define UI_INSTALLED VMTOOLS_DATADIR "/ui"
static const char NO_UI[] = "";

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: vmtools-image build --root DIR --output FILE [OPTION]...\n"
		"\n"
		"Pack a staged kernel tree (modules, headers, perf) into a reproducible\n"
		"read-only ext4 image, written with libext2fs (no root, no mount).\n"
		"\n"
		"  --root DIR              the tree as the guest should see it (required)\n"
		"  --output FILE           the image to write (required); replaced atomically\n"
		"  --kernel-release REL    the release under DIR/lib/modules (default: the\n"
		"                          only one there)\n"
		"  --binary PATH           bundle an executable with its libraries and a\n"
		"                          launcher at /bin/NAME (repeatable; default: perf\n"
		"                          from DIR/usr/bin, else from PATH)\n"
		"  --no-perf               bundle nothing unless --binary is given\n"
		"  --sysroot DIR           where a bundled executable's loader and libraries\n"
		"                          are (default: this host for one of its own\n"
		"                          architecture, DIR of --root for another, e.g.\n"
		"                          perf for an arm64 kernel packed on amd64)\n"
		"  --debug-dir DIR         pack DIR/.build-id/ (debug files by build id,\n"
		"                          as under /usr/lib/debug) into the image's\n"
		"                          " VM_DEBUG_BUILD_ID
		"/, where the agent\n"
		"                          finds them (repeatable)\n"
		"  --label LABEL           ext4 label, at most 16 bytes (default vm-tools)\n"
		"  --size auto|SIZE        image size, e.g. 512M (default auto)\n"
		"  --source-date-epoch N   timestamp of everything (default: $SOURCE_DATE_EPOCH,\n"
		"                          else the newest mtime in DIR)\n"
		"  --keep-owner            keep the staged uid/gid (default 0:0)\n"
		"  --ui-dir DIR            the agent's web UI to pack at /" VM_UI_IMAGE_DIR
		"\n"
		"                          (default: " UI_INSTALLED
		" when there)\n"
		"  --no-ui                 pack no web UI\n"
		"  -h, --help              show this help\n");
}

/*
 * Check the staged kernel's config against kernel-config/vmtools.config and
 * print what is missing, and what that costs, as a warning (the image is
 * built anyway: the checker in the guest says the same at run time).
 */
static void warn_kernel_config(const char *root, const char *release)
{
	_cleanup_free_ char *path = NULL, *report = NULL;
	struct vm_error err = { 0 };
	unsigned missing = 0;
	size_t len = 0;
	FILE *mem;
	char *line, *save = NULL;

	if (asprintf(&path, "%s/boot/config-%s", root, release) < 0 ||
	    access(path, R_OK) < 0)
		return;
	mem = open_memstream(&report, &len);
	if (!mem)
		return;
	if (vm_kconfig_check(path, mem, &missing, &err) < 0) {
		fclose(mem);
		fprintf(stderr, "vmtools-image build: warning: %s\n",
			vm_error_str(&err));
		return;
	}
	fclose(mem);
	fprintf(stderr,
		"vmtools-image build: the staged kernel's config (boot/config-%s) against kernel-config/vmtools.config:\n",
		release);
	for (line = strtok_r(report, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, "ok", 2) && strncmp(line, "Checking", 8))
			fprintf(stderr, "  %s\n", line);
}

enum {
	OPT_ROOT = 256,
	OPT_OUTPUT,
	OPT_RELEASE,
	OPT_BINARY,
	OPT_NO_PERF,
	OPT_LABEL,
	OPT_SIZE,
	OPT_EPOCH,
	OPT_KEEP_OWNER,
	OPT_DEBUG_DIR,
	OPT_UI_DIR,
	OPT_NO_UI,
	OPT_SYSROOT,
};

static int on_option(int c, char *arg, void *ctx)
{
	struct vm_build_opts *o = ctx;
	uint32_t epoch;

	switch (c) {
	case OPT_ROOT:
		o->root = arg;
		break;
	case OPT_OUTPUT:
		o->output = arg;
		break;
	case OPT_RELEASE:
		o->kernel_release = arg;
		break;
	case OPT_BINARY:
		/* Room for every argument was made before parsing. */
		o->binaries[o->n_binaries++] = arg;
		break;
	case OPT_DEBUG_DIR:
		/* Room for every argument was made before parsing. */
		o->debug_dirs[o->n_debug_dirs++] = arg;
		break;
	case OPT_NO_PERF:
		o->no_default_perf = 1;
		break;
	case OPT_SYSROOT:
		o->sysroot = arg;
		break;
	case OPT_LABEL:
		o->label = arg;
		break;
	case OPT_SIZE:
		if (vm_parse_size(arg, &o->size_bytes) < 0) {
			fprintf(stderr,
				WHO
				": --size %s is neither 'auto' nor a size such as 512M\n",
				arg);
			return -EINVAL;
		}
		/* 0 would be read as auto: say so rather than guess. */
		if (!o->size_bytes && strcmp(arg, "auto")) {
			fprintf(stderr,
				WHO
				": --size %s is no size; pass --size auto (or leave it out) for the smallest image that fits\n",
				arg);
			return -EINVAL;
		}
		break;
	case OPT_EPOCH:
		/* Seconds that fit ext4's 32-bit timestamps. */
		if (vm_subcommand_number(WHO, "--source-date-epoch", arg, 0,
					 UINT32_MAX, &epoch) < 0)
			return -EINVAL;
		o->epoch = (int64_t)epoch;
		break;
	case OPT_KEEP_OWNER:
		o->keep_owner = 1;
		break;
	case OPT_UI_DIR:
		o->ui_dir = arg;
		break;
	case OPT_NO_UI:
		o->ui_dir = NO_UI;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

int cmd_build(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "root", required_argument, NULL, OPT_ROOT },
		{ "output", required_argument, NULL, OPT_OUTPUT },
		{ "kernel-release", required_argument, NULL, OPT_RELEASE },
		{ "binary", required_argument, NULL, OPT_BINARY },
		{ "no-perf", no_argument, NULL, OPT_NO_PERF },
		{ "sysroot", required_argument, NULL, OPT_SYSROOT },
		{ "label", required_argument, NULL, OPT_LABEL },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "source-date-epoch", required_argument, NULL, OPT_EPOCH },
		{ "keep-owner", no_argument, NULL, OPT_KEEP_OWNER },
		{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
		{ "ui-dir", required_argument, NULL, OPT_UI_DIR },
		{ "no-ui", no_argument, NULL, OPT_NO_UI },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct vm_build_opts o = { .epoch = -1 };
	_cleanup_free_ const char **bins =
		calloc((size_t)argc + 1, sizeof(char *));
	_cleanup_free_ const char **dbgs =
		calloc((size_t)argc + 1, sizeof(char *));
	struct vm_build_result res;
	struct vm_error err = { 0 };
	int r;

	if (!bins || !dbgs)
		return 1;
	o.binaries = bins;
	o.debug_dirs = dbgs;
	r = vm_subcommand_parse(WHO, argc, argv, "h", longopts, usage,
				on_option, &o);
	if (r != 0)
		return r > 0 ? 0 : 2;
	if (!o.root || !o.output) {
		fprintf(stderr,
			WHO ": --root and --output are required; see --help\n");
		return 2;
	}
	/* The installed UI unless told otherwise; none when not installed. */
	if (o.ui_dir == NO_UI)
		o.ui_dir = NULL;
	else if (!o.ui_dir && access(UI_INSTALLED "/index.html", R_OK) == 0)
		o.ui_dir = UI_INSTALLED;
	if (vm_build(&o, &res, &err) < 0) {
		fprintf(stderr, WHO ": %s\n", vm_error_str(&err));
		if (vm_interrupted)
			raise(vm_interrupted); /* default action restored */
		return 1;
	}
	warn_kernel_config(o.root, res.kernel_release);
	printf("%s: kernel %s, %llu files, %llu directories, %llu symlinks, %zu tools, %zu links, %llu MiB image (%llu blocks of 4 KiB, %llu inodes)\n",
	       o.output, res.kernel_release,
	       (unsigned long long)res.stats.files,
	       (unsigned long long)res.stats.dirs,
	       (unsigned long long)res.stats.symlinks, res.n_tools, res.n_links,
	       (unsigned long long)(res.stats.blocks * 4096 >> 20),
	       (unsigned long long)res.stats.blocks,
	       (unsigned long long)res.stats.inodes);
	return 0;
}
