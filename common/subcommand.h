/* SPDX-License-Identifier: Apache-2.0 */
/*
 * subcommand.h - the `PROGRAM COMMAND [OPTION]...` entry point both binaries
 * share: --help, --version, and dispatch to one function per subcommand.
 */
#ifndef VMTOOLS_COMMON_SUBCOMMAND_H
#define VMTOOLS_COMMON_SUBCOMMAND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct option;

struct vm_subcommand {
	const char *name;
	/* Gets the arguments from the subcommand's name on; returns the exit
	 * status. */
	int (*run)(int argc, char **argv);
	const char *summary;
};

/*
 * Runs the subcommand argv[1] names.  Exit status 2 for a missing or unknown
 * subcommand, as for any usage error.
 */
int vm_subcommand_main(const char *program, const char *about,
		       const struct vm_subcommand *cmds, size_t n_cmds,
		       int argc, char **argv);

/*
 * The command line of one subcommand, read with getopt_long, the same way
 * for every subcommand: -h/--help shows the usage on stdout; an unknown
 * option or a missing argument (getopt names it) and a leftover operand
 * are usage errors, answered with a pointer to --help.  shortopts and
 * longopts include h and { "help", no_argument, NULL, 'h' }.  Every other
 * option goes to on_option with its argument and ctx; it says itself what
 * is wrong with one and returns a negative errno to stop, else 0.
 *
 * Returns 0 to go on, 1 when the usage was shown (exit 0), or a negative
 * errno after a usage error (exit 2).
 */
typedef int vm_subcommand_option_fn(int c, char *arg, void *ctx);
int vm_subcommand_parse(const char *who, int argc, char **argv,
			const char *shortopts, const struct option *longopts,
			void (*usage)(FILE *out),
			vm_subcommand_option_fn *on_option, void *ctx);

/*
 * The argument of option opt as a whole number from min to max; otherwise
 * says "WHO: OPT 'ARG' must be a whole number from MIN to MAX" and returns
 * -EINVAL.
 */
int vm_subcommand_number(const char *who, const char *opt, const char *arg,
			 uint32_t min, uint32_t max, uint32_t *out);

#endif
