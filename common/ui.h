/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ui.h - where the agent's web UI (ui/ and speedscope, assembled under
 * build/ui by the Makefile) lives: installed with the agent under
 * DATADIR/ui, and packed by `vmtools-image build` into the tools disk at
 * VM_UI_IMAGE_DIR, where the guest's agent finds it below its mountpoint.
 * Both binaries use this one name.
 */
#ifndef VMTOOLS_COMMON_UI_H
#define VMTOOLS_COMMON_UI_H

/* Relative to the image's root (and so to the agent's mountpoint). */
#define VM_UI_IMAGE_DIR "usr/share/vmtools/ui"

#endif
