// SPDX-License-Identifier: Apache-2.0
/*
 * subcommand.c - usage text and subcommand dispatch for vmtools-image and
 * vmtools-agent, and what every subcommand's command line shares: the
 * option loop, --help, leftover operands and whole-number arguments.
 */
#include "common/subcommand.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
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

/*
 * After getopt: an operand left over (argv[first] on) is a usage error.
 * Says so, "WHO: unexpected argument 'X'; run 'WHO --help'", and returns
 * -EINVAL; 0 when there is none.
 */
static int no_operands(const char *who, int argc, char **argv, int first)
{
	if (first >= argc)
		return 0;
	fprintf(stderr, "%s: unexpected argument '%s'; run '%s --help'\n", who,
		argv[first], who);
	return -EINVAL;
}

int vm_subcommand_parse(const char *who, int argc, char **argv,
			const char *shortopts, const struct option *longopts,
			void (*usage)(FILE *out),
			vm_subcommand_option_fn *on_option, void *ctx)
{
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c == '?' || c == ':') {
			/* getopt has said which option, and why. */
			fprintf(stderr, "Run '%s --help' for the options.\n",
				who);
			return -EINVAL;
		}
		r = on_option(c, optarg, ctx);
		if (r < 0)
			return r;
	}
	return no_operands(who, argc, argv, optind);
}

int vm_subcommand_number(const char *who, const char *opt, const char *arg,
			 uint32_t min, uint32_t max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	/* strtoull takes blanks and a sign first: a number starts with a digit. */
	if (arg[0] < '0' || arg[0] > '9' || errno || *end || v < min ||
	    v > max) {
		fprintf(stderr,
			"%s: %s '%s' must be a whole number from %" PRIu32
			" to %" PRIu32 "\n",
			who, opt, arg, min, max);
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}
