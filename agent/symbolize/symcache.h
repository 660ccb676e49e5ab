/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symcache.h - the symbols of every binary seen, kept across profiles
 * (symcache.c) as its symbols facet in the agent's home of binaries
 * (agent/binaries/binaries.h), so repeated profiles of the same
 * PostgreSQL do not re-read it.  A binary is known by its file's
 * identity (device, inode, size, mtime); its facet holds its symbols
 * merged with those of its separate debug file, found by build id or
 * .gnu_debuglink.
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

struct vm_symfile {
	uint64_t dev, ino; /* the file's, as fstat() gave them */
	struct vm_elf_info info; /* binary + debug file symbols */
	char *debug_path; /* the debug file used, or NULL */
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
 * the process's root (e.g. /proc/PID/root, "" for ours) under which debug
 * files are searched, path the file's name inside that root, dev its
 * device when known (0: not).  Opened and read through the I/O pool
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
