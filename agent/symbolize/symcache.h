/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symcache.h - the symbols of every binary seen, kept across profiles
 * (symcache.c), so repeated profiles of the same PostgreSQL do not re-read
 * it.  An entry is keyed by the file's identity (device, inode, size,
 * mtime) and holds the binary's symbols merged with those of its separate
 * debug file, found by build id or .gnu_debuglink.
 *
 * One lock guards the cache; the symbolizer holds it for a whole run
 * (vm_symcache_lock), so entries stay valid meanwhile.
 *
 * Memory is bounded: one binary's symbols (with its debug file's) by
 * VM_ELF_SYMBOLS_MAX_BYTES, all entries by VM_SYMCACHE_MAX_BYTES (entries
 * no running profile uses are dropped to make room).  A binary over
 * either bound is kept without symbols (its frames keep their addresses),
 * and the last few such are listed for /healthz.
 */
#ifndef VMTOOLS_AGENT_SYMCACHE_H
#define VMTOOLS_AGENT_SYMCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/symbolize/elf.h"
#include "common/error.h"

/* What every cached binary's symbols may take together. */
#define VM_SYMCACHE_MAX_BYTES ((size_t)512 << 20)

struct vm_symfile {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
	struct vm_elf_info info; /* binary + debug file symbols */
	char *debug_path; /* the debug file used, or NULL */
	uint64_t last_used; /* run counter, for eviction */
	bool skipped; /* its symbols outgrew their bound: none kept */
};

/* A binary whose symbols were skipped, and why (one sentence). */
struct vm_symcache_skip {
	char file[256];
	char reason[160];
};

void vm_symcache_lock(void);
void vm_symcache_unlock(void);

/*
 * The entry for the file at open_path (as the agent opens it); root is
 * the process's root (e.g. /proc/PID/root, "" for ours) under which debug
 * files are searched, path the file's name inside that root, dev its
 * device when known (0: not).  Opened and read through the I/O pool
 * (agent/iopool/iopool.h): -ETIMEDOUT when that does not finish in time.
 * Call with the lock held.
 */
int vm_symcache_get(const char *open_path, const char *path, const char *root,
		    uint64_t dev, const struct vm_symfile **out,
		    struct vm_error *err);

/*
 * Whether an entry is held for the file with device dev and inode ino
 * (as /proc/PID/maps gives them), without opening it: what warming the
 * cache for a new process may skip.  Call with the lock held.
 */
bool vm_symcache_holds(uint64_t dev, uint64_t ino);

/*
 * The vDSO, which the kernel maps into every process: ours is the same
 * image, read from our own memory.  Call with the lock held.
 */
int vm_symcache_get_vdso(const struct vm_symfile **out);

/* Entries, hits so far and the bytes held (for tests and /healthz). */
void vm_symcache_stats(uint64_t *entries, uint64_t *hits, uint64_t *misses,
		       uint64_t *bytes);

/*
 * The binaries skipped most recently, newest first (at most max of them,
 * *n_out written), and *total skipped since start.
 */
void vm_symcache_skipped(struct vm_symcache_skip *out, size_t max,
			 size_t *n_out, uint64_t *total);

/* Set the bounds (tests): all entries together, one binary. */
void vm_symcache_set_limits(size_t total, size_t per_file);

/* Drop everything (tests). */
void vm_symcache_clear(void);

/* Directory under which debug files are searched (default /usr/lib/debug). */
void vm_symcache_set_debug_dir(const char *dir);

/*
 * The tools disk's mountpoint: debug files by build id are also looked for
 * under its usr/lib/debug/.build-id/ (none until this is called).
 */
void vm_symcache_set_tools_dir(const char *mountpoint);

/*
 * A debug file for build id arrived (debuginfod.c): merged into every
 * cached binary with that build id and no debug file yet.  Takes the lock.
 */
void vm_symcache_debug_file_found(const uint8_t *id, size_t len,
				  const char *path);

#endif
