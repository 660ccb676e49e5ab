// SPDX-License-Identifier: Apache-2.0
/*
 * main.c - vmtools-agent's entry point: picks the subcommand.
 *
 * The agent runs inside the guest.  `setup` mounts the tools disk and links
 * the tools into place, `serve` answers the profiling REST API, `profile`
 * takes one profile from the command line with the same engine, and
 * `check-kernel` compares the kernel's config with what profiling needs.
 */
#include "agent/commands.h"
#include "common/cleanup.h"
#include "common/subcommand.h"

static const struct vm_subcommand commands[] = {
	{ "serve", cmd_serve, "serve the profiling REST API (port 3080)" },
	{ "setup", cmd_setup, "mount the tools disk and link the tools" },
	{ "profile", cmd_profile,
	  "take one CPU profile and write it to a file" },
	{ "check-kernel", cmd_check_kernel,
	  "check the kernel config against what profiling needs" },
};

int main(int argc, char **argv)
{
	return vm_subcommand_main(
		"vmtools-agent",
		"Profile the PostgreSQL processes of this guest on demand.",
		commands, ARRAY_SIZE(commands), argc, argv);
}
