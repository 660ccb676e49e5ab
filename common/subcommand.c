// SPDX-License-Identifier: Apache-2.0
/*
 * subcommand.c - usage text and subcommand dispatch for vmtools-image and
 * vmtools-agent.
 */
#include "common/subcommand.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out, const char *program, const char *about,
		  const struct vm_subcommand *cmds, size_t n_cmds)
{
	fprintf(out, "Usage: %s COMMAND [OPTION]...\n\n%s\n\nCommands:\n",
		program, about);
	for (size_t i = 0; i < n_cmds; i++)
		fprintf(out, "  %-14s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(out,
		"\n"
		"Run '%s COMMAND --help' for the options of one.\n"
		"  -h, --help     show this help\n"
		"  -V, --version  show the version\n",
		program);
}

int vm_subcommand_main(const char *program, const char *about,
		       const struct vm_subcommand *cmds, size_t n_cmds,
		       int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr, program, about, cmds, n_cmds);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout, program, about, cmds, n_cmds);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("%s %s\n", program, VMTOOLS_VERSION);
		return 0;
	}
	for (size_t i = 0; i < n_cmds; i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr,
		"%s: unknown command '%s'; run '%s --help' for the list.\n",
		program, argv[1], program);
	return 2;
}

int vm_subcommand_no_operands(const char *who, int argc, char **argv, int first)
{
	if (first >= argc)
		return 0;
	fprintf(stderr, "%s: unexpected argument '%s'; run '%s --help'\n", who,
		argv[first], who);
	return -EINVAL;
}
