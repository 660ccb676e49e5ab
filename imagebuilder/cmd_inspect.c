// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_inspect.c - `vmtools-image inspect`: not built yet (see the open issues).
 */
#include <stdio.h>
#include <string.h>

#include "imagebuilder/commands.h"

int cmd_inspect(int argc, char **argv)
{
	if (argc > 1 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("Usage: vmtools-image inspect [OPTION]...\n");
		return 0;
	}
	fprintf(stderr, "vmtools-image inspect: not implemented yet\n");
	return 1;
}
