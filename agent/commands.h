/* SPDX-License-Identifier: Apache-2.0 */
/*
 * commands.h - the subcommands of vmtools-agent, one file each
 * (cmd_serve.c, cmd_setup.c, cmd_profile.c, cmd_check_kernel.c).
 *
 * Each takes the arguments after the subcommand name (argv[0] is the
 * subcommand) and returns the process exit status.
 */
#ifndef VMTOOLS_AGENT_COMMANDS_H
#define VMTOOLS_AGENT_COMMANDS_H

int cmd_serve(int argc, char **argv);
int cmd_setup(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_check_kernel(int argc, char **argv);

#endif
