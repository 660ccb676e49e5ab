// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_check_kernel.c - `vmtools-agent check-kernel`: not built yet (see the open issues).
 */
#include <stdio.h>
#include <string.h>

#include "agent/commands.h"

int cmd_check_kernel(int argc, char **argv)
{
	if (argc > 1 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("Usage: vmtools-agent check-kernel [OPTION]...\n");
		return 0;
	}
	fprintf(stderr, "vmtools-agent check-kernel: not implemented yet\n");
	return 1;
}
