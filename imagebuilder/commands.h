/* SPDX-License-Identifier: Apache-2.0 */
/*
 * commands.h - the subcommands of vmtools-image, one file each
 * (cmd_build.c, cmd_verify.c, cmd_inspect.c).
 *
 * Each takes the arguments after the subcommand name (argv[0] is the
 * subcommand) and returns the process exit status.
 */
#ifndef VMTOOLS_IMAGEBUILDER_COMMANDS_H
#define VMTOOLS_IMAGEBUILDER_COMMANDS_H

int cmd_build(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_inspect(int argc, char **argv);

#endif
