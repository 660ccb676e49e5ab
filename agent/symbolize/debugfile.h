/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debugfile.h - where a binary's separate debug file may be, the way gdb
 * looks for it, and whether a file found there is that binary's
 * (debugfile.c).  The symbol cache (symcache.h) opens the places in
 * order, under the agent's root and under a process's, and keeps a debug
 * file only when it passes the check: what a file's owner writes there
 * names frames, so a file claiming to be libc's debug file must carry
 * libc's build id (and, found by .gnu_debuglink, the CRC it names).
 */
#ifndef VMTOOLS_AGENT_DEBUGFILE_H
#define VMTOOLS_AGENT_DEBUGFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/symbolize/elf.h"

/* Places under one root: by build id, then three by .gnu_debuglink. */
#define VM_DEBUGFILE_PLACES 4

struct vm_debugfile_place {
	char path[PATH_MAX];
	bool by_debuglink; /* its CRC32 must be the debug link's */
};

/*
 * The places bin's debug file may be under root ("" for the agent's),
 * in order, into out; how many:
 *
 *   ROOT DEBUG/.build-id/xx/yyyy….debug           by build id
 *   ROOT DIR/NAME, ROOT DIR/.debug/NAME,
 *   ROOT DEBUG DIR/NAME                           by .gnu_debuglink NAME
 *
 * DEBUG is debug_dir, DIR the directory of path, the binary's name
 * inside root (NULL: by build id only); a debug link naming the binary
 * itself is left out, and so is a path that does not fit.
 */
size_t vm_debugfile_places(const struct vm_elf_info *bin, const char *path,
			   const char *root, const char *debug_dir,
			   struct vm_debugfile_place out[VM_DEBUGFILE_PLACES]);

/*
 * Whether dbg, read from a file found for bin, is bin's debug file: when
 * bin has a build id, dbg must have the same one (a debug file without
 * one is not taken on its name alone).  0, or -EINVAL with why (a
 * sentence naming neither file, at most len bytes).
 */
int vm_debugfile_check(const struct vm_elf_info *bin,
		       const struct vm_elf_info *dbg, char *why, size_t len);

/* Whether the file fd holds has the CRC32 want (.gnu_debuglink's). */
bool vm_debugfile_crc_matches(int fd, uint32_t want);

#endif
