/* SPDX-License-Identifier: Apache-2.0 */
/*
 * subcommand.h - the `PROGRAM COMMAND [OPTION]...` entry point both binaries
 * share: --help, --version, and dispatch to one function per subcommand.
 */
#ifndef VMTOOLS_COMMON_SUBCOMMAND_H
#define VMTOOLS_COMMON_SUBCOMMAND_H

#include <stddef.h>

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
 * After getopt: an operand left over (argv[first] on) is a usage error.
 * Says so, "WHO: unexpected argument 'X'; run 'WHO --help'", and returns
 * -EINVAL; 0 when there is none.
 */
int vm_subcommand_no_operands(const char *who, int argc, char **argv,
			      int first);

#endif
