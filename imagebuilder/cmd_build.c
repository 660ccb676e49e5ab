// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_build.c - `vmtools-image build`: not built yet (see the open issues).
 */
#include <stdio.h>
#include <string.h>

#include "imagebuilder/commands.h"

int cmd_build(int argc, char **argv)
{
	if (argc > 1 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("Usage: vmtools-image build [OPTION]...\n");
		return 0;
	}
	fprintf(stderr, "vmtools-image build: not implemented yet\n");
	return 1;
}
