// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_serve.c - `vmtools-agent serve`: not built yet (see the open issues).
 */
#include <stdio.h>
#include <string.h>

#include "agent/commands.h"

int cmd_serve(int argc, char **argv)
{
	if (argc > 1 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("Usage: vmtools-agent serve [OPTION]...\n");
		return 0;
	}
	fprintf(stderr, "vmtools-agent serve: not implemented yet\n");
	return 1;
}
