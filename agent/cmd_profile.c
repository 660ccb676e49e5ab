// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_profile.c - `vmtools-agent profile`: not built yet (see the open issues).
 */
#include <stdio.h>
#include <string.h>

#include "agent/commands.h"

int cmd_profile(int argc, char **argv)
{
	if (argc > 1 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("Usage: vmtools-agent profile [OPTION]...\n");
		return 0;
	}
	fprintf(stderr, "vmtools-agent profile: not implemented yet\n");
	return 1;
}
