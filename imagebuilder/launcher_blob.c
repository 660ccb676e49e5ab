// SPDX-License-Identifier: Apache-2.0
/*
 * launcher_blob.c - the static launcher (launcher/launcher.c, built by the
 * Makefile) embedded into vmtools-image, so the builder stays one
 * self-contained binary.
 */
#include "imagebuilder/launcher_blob.h"

#ifndef VMTOOLS_LAUNCHER
#error "VMTOOLS_LAUNCHER (path of the built launcher) must be set by the Makefile"
#endif

__asm__(".section .rodata\n"
	".balign 16\n"
	".global vm_launcher_start\n"
	".hidden vm_launcher_start\n"
	"vm_launcher_start:\n"
	".incbin \"" VMTOOLS_LAUNCHER "\"\n"
	".global vm_launcher_end\n"
	".hidden vm_launcher_end\n"
	"vm_launcher_end:\n"
	".previous\n");
