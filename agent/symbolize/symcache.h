/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symcache.h - the symbols of every binary seen, kept across profiles
 * (symcache.c) as its symbols facet in the agent's home of binaries
 * (agent/binaries/binaries.h), so repeated profiles of the same
 * PostgreSQL do not re-read it.  A binary is known by its file's
 * identity (device, inode, size, mtime); its facet holds its symbols
 * merged with those of its separate debug file, found by build id or
 * .gnu_debuglink (debugfile.h).
 *
 * A debug file names frames only for the processes that see it.  The
 * facet's first entry merges the debug file the agent finds itself (under
 * its own root, on the tools disk, from debuginfod); a process whose root
 * shows another file where the debug file is looked for (a container's
 * own, or a directory its user mounted over /usr/lib/debug in a mount
 * namespace of its own) gets an entry of its own, known by that file's
 * identity (device, inode, size, mtime) as reached through the process's
 * root, and shared only with processes that reach the same file.  Every
 * debug file must carry the binary's build id (and, found by debug link,
 * its CRC); one that does not is refused and listed in the home's
 * skipped list.
 *
 * The symbolizer holds the cache's lock for a whole run
 * (vm_symcache_lock), which serializes runs and the late merges of debug
 * files; the entries a run gets are held in the home until it unlocks,
 * so they stay valid meanwhile and are never evicted under it.
 *
 * Memory is bounded: one binary's symbols (with its debug file's) by
 * per_file_max_bytes (VM_ELF_SYMBOLS_MAX_BYTES), all of them with every
 * other facet by the home's bound (entries no run holds are dropped to
 * make room).  A binary over either bound is kept without symbols (its
 * frames keep their addresses), and the last few such are listed in the
 * home's skipped list for /healthz.
 */
#ifndef VMTOOLS_AGENT_SYMCACHE_H
#define VMTOOLS_AGENT_SYMCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/binaries/binaries.h"
#include "agent/iopool/iopool.h"
#include "agent/symbolize/debuginfod.h"
#include "agent/symbolize/elf.h"
#include "agent/symbolize/kallsyms.h"
#include "common/error.h"

/*
 * Debug files other than the agent's own that one binary's facet keeps,
 * for the processes that see them, and how many such files it reads:
 * past either, a process whose root shows yet another gets the agent's
 * own (the first time said in the skipped list).
 */
#define VM_SYMCACHE_OTHER_DEBUG_FILES 3
#define VM_SYMCACHE_OTHER_DEBUG_READS 8

struct vm_symfile {
	uint64_t dev, ino; /* the file's, as fstat() gave them */
	struct vm_elf_info info; /* binary + debug file symbols */
	char *debug_path; /* the debug file used, or NULL */
	/* The debug file's identity as it was opened; all 0: none. */
	struct vm_binary_key debug_key;
	bool skipped; /* its symbols outgrew their bound: none kept */
};

struct vm_symcache_config {
	const char *debug_dir; /* where debug files are; NULL: /usr/lib/debug */
	/*
	 * The tools disk's mountpoint: debug files by build id are also
	 * looked for under its usr/lib/debug/.build-id/; NULL: none.
	 */
	const char *tools_dir;
	size_t per_file_max_bytes; /* 0: VM_ELF_SYMBOLS_MAX_BYTES */
	/* Where debug files found nowhere else are asked for; NULL: none. */
	struct vm_debuginfod *debuginfod;
	/* The workers files are read on; NULL: a pool of the cache's own. */
	struct vm_iopool *iopool;
};

struct vm_symcache;

/*
 * A cache keeping its facets in home (which must outlive it), configured
 * by cfg (NULL: the defaults); NULL when out of memory.
 */
struct vm_symcache *vm_symcache_new(struct vm_binaries *home,
				    const struct vm_symcache_config *cfg);
/* After vm_debuginfod_free(): lookups still running tell the cache. */
void vm_symcache_free(struct vm_symcache *sc);

void vm_symcache_lock(struct vm_symcache *sc);
void vm_symcache_unlock(struct vm_symcache *sc);

/*
 * The entry for the file at open_path (as the agent opens it); root is
 * the process's root (e.g. /proc/PID/root, "" for ours) under which its
 * own debug file is searched first, path the file's name inside that
 * root, dev its device when known (0: not).  The entry has the symbols
 * of the debug file that root shows, if it is the binary's, else of the
 * agent's own (see above).  Opened and read through the I/O pool
 * (agent/iopool/iopool.h): -ETIMEDOUT when that does not finish in time.
 * Call with the lock held; *out stays valid until it is released.
 */
int vm_symcache_get(struct vm_symcache *sc, const char *open_path,
		    const char *path, const char *root, uint64_t dev,
		    const struct vm_symfile **out, struct vm_error *err);

/*
 * Wait for debug files still being fetched, at most max_ms (before a run:
 * what arrives is merged when it takes the lock).
 */
void vm_symcache_wait_lookups(struct vm_symcache *sc, unsigned max_ms);

/*
 * Whether symbols are held for the file with device dev and inode ino
 * (as /proc/PID/maps gives them), without opening it: what warming the
 * cache for a new process may skip.  Call with the lock held.
 */
bool vm_symcache_holds(struct vm_symcache *sc, uint64_t dev, uint64_t ino);

/*
 * The vDSO, which the kernel maps into every process: ours is the same
 * image, read from our own memory.  Call with the lock held.
 */
int vm_symcache_get_vdso(struct vm_symcache *sc, const struct vm_symfile **out);

/*
 * The running kernel's symbols, kept with the binaries' (kallsyms.h).
 * Call with the lock held.
 */
int vm_symcache_kernel(struct vm_symcache *sc, const struct vm_kallsyms **out);

struct vm_symcache_stats {
	uint64_t entries, hits, misses, bytes; /* the binaries' symbols */
	uint64_t kernel_reads; /* of /proc/kallsyms */
};

void vm_symcache_stats(struct vm_symcache *sc, struct vm_symcache_stats *out);

#endif
