// SPDX-License-Identifier: Apache-2.0
/*
 * launcher_blob.c - the static launchers (launcher/launcher.c, built by the
 * Makefile for x86-64 and for arm64, the second with the cross compiler)
 * embedded into vmtools-image, so the builder stays one self-contained
 * binary that packs an image of either architecture.
 */
#include "imagebuilder/launcher_blob.h"

#include <elf.h>

#if !defined(VMTOOLS_LAUNCHER_X86_64) || !defined(VMTOOLS_LAUNCHER_AARCH64)
#error "VMTOOLS_LAUNCHER_X86_64 and VMTOOLS_LAUNCHER_AARCH64 (paths of the built launchers) must be set by the Makefile"
#endif

#define VM_BLOB(name, path)                                   \
	__asm__(".section .rodata\n"                          \
		".balign 16\n"                                \
		".global " #name "_start\n"                   \
		".hidden " #name "_start\n" #name "_start:\n" \
		".incbin \"" path "\"\n"                      \
		".global " #name "_end\n"                     \
		".hidden " #name "_end\n" #name "_end:\n"     \
		".previous\n");                               \
	extern const unsigned char name##_start[], name##_end[]

VM_BLOB(vm_launcher_x86_64, VMTOOLS_LAUNCHER_X86_64);
VM_BLOB(vm_launcher_aarch64, VMTOOLS_LAUNCHER_AARCH64);

const unsigned char *vm_launcher_for(int machine, size_t *len)
{
	switch (machine) {
	case EM_X86_64:
		*len = (size_t)(vm_launcher_x86_64_end -
				vm_launcher_x86_64_start);
		return vm_launcher_x86_64_start;
	case EM_AARCH64:
		*len = (size_t)(vm_launcher_aarch64_end -
				vm_launcher_aarch64_start);
		return vm_launcher_aarch64_start;
	default:
		*len = 0;
		return NULL;
	}
}
