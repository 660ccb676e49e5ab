// SPDX-License-Identifier: Apache-2.0
/*
 * main.c - vmtools-agent's entry point: picks the subcommand.
 *
 * The agent runs inside the guest.  `setup` mounts the tools disk and links
 * the tools into place, `serve` answers the profiling REST API, `profile`
 * takes one profile from the command line with the same engine, and
 * `check-kernel` compares the kernel's config with what profiling needs.
 */
#include <stdio.h>
#include <string.h>

#include "agent/commands.h"
#include "common/cleanup.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "serve", cmd_serve, "serve the profiling REST API (port 3080)" },
	{ "setup", cmd_setup, "mount the tools disk and link the tools" },
	{ "profile", cmd_profile,
	  "take one CPU profile and write it to a file" },
	{ "check-kernel", cmd_check_kernel,
	  "check the kernel config against what profiling needs" },
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: vmtools-agent COMMAND [OPTION]...\n"
		"\n"
		"Profile the PostgreSQL processes of this guest on demand.\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(out, "  %-14s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(out,
		"\n"
		"Run 'vmtools-agent COMMAND --help' for the options of one.\n"
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
		printf("vmtools-agent %s\n", VMTOOLS_VERSION);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr,
		"vmtools-agent: unknown command '%s'; run 'vmtools-agent --help' for the list.\n",
		argv[1]);
	return 2;
}
