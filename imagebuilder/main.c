// SPDX-License-Identifier: Apache-2.0
/*
 * main.c - vmtools-image's entry point: picks the subcommand.
 *
 * vmtools-image runs in the image pipeline, once per kernel build: `build`
 * packs a staged tree (modules, headers, perf and its libraries) into a
 * reproducible ext4 image with libext2fs; `verify` and `inspect` read such
 * an image back without mounting it.
 */
#include "common/cleanup.h"
#include "common/subcommand.h"
#include "imagebuilder/commands.h"

static const struct vm_subcommand commands[] = {
	{ "build", cmd_build, "pack a staged kernel tree into an ext4 image" },
	{ "verify", cmd_verify, "re-hash every file against the manifest" },
	{ "inspect", cmd_inspect, "print the manifest summary of an image" },
};

int main(int argc, char **argv)
{
	return vm_subcommand_main(
		"vmtools-image",
		"Pack a kernel's modules, headers and perf into a read-only ext4 image.",
		commands, ARRAY_SIZE(commands), argc, argv);
}
