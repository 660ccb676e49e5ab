// SPDX-License-Identifier: Apache-2.0
/*
 * main.c - vmtools-image's entry point: picks the subcommand.
 *
 * vmtools-image runs in the image pipeline, once per kernel build: `build`
 * packs a staged tree (modules, headers, perf and its libraries) into a
 * reproducible ext4 image with libext2fs; `verify` and `inspect` read such
 * an image back without mounting it.
 */
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "imagebuilder/commands.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "build", cmd_build, "pack a staged kernel tree into an ext4 image" },
	{ "verify", cmd_verify, "re-hash every file against the manifest" },
	{ "inspect", cmd_inspect, "print the manifest summary of an image" },
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: vmtools-image COMMAND [OPTION]...\n"
		"\n"
		"Pack a kernel's modules, headers and perf into a read-only ext4 image.\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(out,
		"\n"
		"Run 'vmtools-image COMMAND --help' for the options of one.\n"
		"  -h, --help     show this help\n"
		"  -V, --version  show the version\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("vmtools-image %s\n", VMTOOLS_VERSION);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr,
		"vmtools-image: unknown command '%s'; run 'vmtools-image --help' for the list.\n",
		argv[1]);
	return 2;
}
