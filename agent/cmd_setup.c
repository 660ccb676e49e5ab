// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_setup.c - `vmtools-agent setup [--undo]`: the command line around
 * vm_setup() / vm_setup_undo() (setup/setup.h), for VM boot scripts.
 * Prints one line per thing done; on failure one error sentence on stderr.
 *
 * Exit status: 0 done (or nothing to do), 1 refused or failed (the guest is
 * left as it was), 2 no disk with the label, or an unknown option.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "agent/commands.h"
#include "agent/setup/setup.h"
#include "common/subcommand.h"

#define WHO "vmtools-agent setup"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: vmtools-agent setup [OPTION]...\n"
		"\n"
		"Find the vmtools disk by its ext4 label, mount it read-only, check it\n"
		"was built for the running kernel and link its tools into place:\n"
		"/lib/modules/$(uname -r), the kernel headers, perf on PATH.\n"
		"Idempotent; on failure the guest is left as it was.\n"
		"\n"
		"  -L, --label LABEL        ext4 label of the tools disk (default %s)\n"
		"  -m, --mountpoint DIR     where to mount it (default %s)\n"
		"  -b, --bindir DIR         where to link perf and the other tools\n"
		"                           (default %s)\n"
		"  -d, --device DEV         use this block device, do not search\n"
		"      --allow-kernel-mismatch\n"
		"                           accept an image built for another kernel\n"
		"                           release; /lib/modules/$(uname -r) is then\n"
		"                           linked to the image's modules too\n"
		"      --verify             check every file's sha256 before linking\n"
		"      --state-file FILE    where setup records what it made\n"
		"                           (default MOUNTPOINT.setup.json)\n"
		"  -u, --undo               remove the links, the directories setup\n"
		"                           created, and unmount (give the same\n"
		"                           --mountpoint; without the state file also\n"
		"                           the same --bindir)\n"
		"  -q, --quiet              print errors only\n"
		"  -h, --help               show this help\n"
		"\n"
		"Exit status: 0 done, 1 refused or failed (nothing changed), 2 no disk\n"
		"with the label, or an unknown option.\n",
		VM_SETUP_DEFAULT_LABEL, VM_SETUP_DEFAULT_MOUNTPOINT,
		VM_SETUP_DEFAULT_BINDIR);
}

enum { OPT_ALLOW_MISMATCH = 256, OPT_VERIFY, OPT_STATE_FILE };

struct setup_args {
	struct vm_setup_options o;
	bool undo;
	bool quiet;
};

static int on_option(int c, char *arg, void *ctx)
{
	struct setup_args *a = ctx;

	switch (c) {
	case 'L':
		a->o.label = arg;
		break;
	case 'm':
		a->o.mountpoint = arg;
		break;
	case 'b':
		a->o.bindir = arg;
		break;
	case 'd':
		a->o.device = arg;
		break;
	case OPT_ALLOW_MISMATCH:
		a->o.allow_kernel_mismatch = true;
		break;
	case OPT_VERIFY:
		a->o.verify = true;
		break;
	case OPT_STATE_FILE:
		a->o.state_file = arg;
		break;
	case 'u':
		a->undo = true;
		break;
	case 'q':
		a->quiet = true;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

int cmd_setup(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "label", required_argument, NULL, 'L' },
		{ "mountpoint", required_argument, NULL, 'm' },
		{ "bindir", required_argument, NULL, 'b' },
		{ "device", required_argument, NULL, 'd' },
		{ "allow-kernel-mismatch", no_argument, NULL,
		  OPT_ALLOW_MISMATCH },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		{ "state-file", required_argument, NULL, OPT_STATE_FILE },
		{ "undo", no_argument, NULL, 'u' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct setup_args a = { 0 };
	struct vm_setup_result res = { 0 };
	struct vm_error err = { 0 };
	int r;

	r = vm_subcommand_parse(WHO, argc, argv, "L:m:b:d:uqh", longopts, usage,
				on_option, &a);
	if (r != 0)
		return r > 0 ? 0 : 2;
	r = a.undo ? vm_setup_undo(&a.o, &res, &err) :
		     vm_setup(&a.o, &res, &err);
	/* After a failure the steps were rolled back: they would mislead. */
	if (!a.quiet && (r == 0 || a.undo))
		for (size_t i = 0; i < res.n_actions; i++)
			printf("%s\n", res.actions[i]);
	if (r < 0 && res.dirty)
		for (size_t i = 0; i < res.n_actions; i++)
			fprintf(stderr, WHO ": %s\n", res.actions[i]);
	if (r < 0) {
		fprintf(stderr, WHO ": %s\n", vm_error_str(&err));
		if (!a.undo && !res.dirty)
			fprintf(stderr, WHO ": nothing was changed.\n");
	}
	vm_setup_result_clear(&res);
	if (r == -ENODEV)
		return 2;
	return r < 0 ? 1 : 0;
}
