/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debuginfod.h - debug files fetched by build id from debuginfod servers
 * (debuginfod.c), the standard way to name the functions of a stripped
 * binary whose debug file is not on the machine.
 *
 * Through elfutils' libdebuginfod, opened with dlopen() only when a server
 * is configured (it brings libcurl).  A lookup is started, on a thread of
 * its own, when a binary without symbols or debug file is first read
 * (symcache.c), normally as soon as the profile captures its process;
 * a found file is merged into that binary's cached symbols.  The
 * symbolizer waits for lookups still running at most VM_DEBUGINFOD_WAIT_MS,
 * so a dead or slow server costs names, never more time; the next profile
 * has what arrived meanwhile.
 *
 * Fetched files live in a cache directory (libdebuginfod's own layout,
 * one directory per build id), kept under VM_DEBUGINFOD_CACHE_MAX bytes by
 * removing the least recently fetched.
 */
#ifndef VMTOOLS_AGENT_DEBUGINFOD_H
#define VMTOOLS_AGENT_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define VM_DEBUGINFOD_DEFAULT_CACHE "/var/cache/vmtools/debuginfod"
#define VM_DEBUGINFOD_CACHE_MAX ((uint64_t)1 << 30)
#define VM_DEBUGINFOD_WAIT_MS 200
/* Most URLs (--debuginfod-url), and the length of one. */
#define VM_DEBUGINFOD_MAX_URLS 16
#define VM_DEBUGINFOD_URL_MAX 1024

enum vm_debuginfod_outcome {
	VM_DEBUGINFOD_FOUND,
	VM_DEBUGINFOD_NOT_FOUND, /* every server said 404 */
	VM_DEBUGINFOD_FAILED, /* unreachable, timed out, refused: retried */
	VM_DEBUGINFOD_OUTCOMES,
};

struct vm_debuginfod_stats {
	bool enabled;
	uint64_t lookups[VM_DEBUGINFOD_OUTCOMES]; /* finished, by outcome */
	uint64_t pending; /* queued or running */
	char error[256]; /* why it is disabled, "" when it is not */
};

/* What `serve` and `profile` take on their command lines. */
struct vm_debuginfod_options {
	const char *urls[VM_DEBUGINFOD_MAX_URLS]; /* --debuginfod-url */
	size_t n_urls;
	const char *cache; /* --debuginfod-cache, NULL: the default */
};

#define VM_DEBUGINFOD_USAGE                                                     \
	"      --debuginfod-url URL  fetch debug files by build id from this\n" \
	"                          debuginfod server (repeatable; default:\n"   \
	"                          $DEBUGINFOD_URLS)\n"                         \
	"      --debuginfod-cache DIR  where fetched files are kept (default\n" \
	"                          " VM_DEBUGINFOD_DEFAULT_CACHE ")\n"

/*
 * One --debuginfod-url: http:// or https://, no spaces, at most
 * VM_DEBUGINFOD_MAX_URLS.  0, or -EINVAL with a sentence naming it.
 */
int vm_debuginfod_add_url(struct vm_debuginfod_options *o, const char *url,
			  struct vm_error *err);

struct vm_debuginfod;

/*
 * Lookups for the agent's context (agent/profile/context.h): o's URLs
 * (none: $DEBUGINFOD_URLS, and nothing happens without it either),
 * fetched files kept in o->cache.  Make one, before other threads run
 * (it sets libdebuginfod's environment, which is the process's).  *out is
 * set whenever there is memory for it: off when nothing is configured,
 * or when the library or the cache directory is unusable, which its
 * stats then say (and err, with the -errno returned).  -ENOMEM: none.
 */
int vm_debuginfod_new(const struct vm_debuginfod_options *o,
		      struct vm_debuginfod **out, struct vm_error *err);

/* The lookup thread stopped (the lookup running ends first), and freed. */
void vm_debuginfod_free(struct vm_debuginfod *d);

/*
 * Told, from the lookup thread, that the debug file for build id id was
 * fetched to path (symcache.c merges it into the binaries it cached).
 */
typedef void (*vm_debuginfod_found_fn)(void *arg, const uint8_t *id, size_t len,
				       const char *path);

/*
 * Look this build id up in the background, once; nothing when off (or d
 * NULL).  When a debug file is fetched, found is called with it and arg,
 * which must stay valid until vm_debuginfod_free().
 */
void vm_debuginfod_request(struct vm_debuginfod *d, const uint8_t *id,
			   size_t len, vm_debuginfod_found_fn found, void *arg);

/* Wait until no lookup is pending, at most max_ms milliseconds. */
void vm_debuginfod_wait(struct vm_debuginfod *d, unsigned max_ms);

/* What lookups did (d NULL: off, no error). */
void vm_debuginfod_stats(struct vm_debuginfod *d,
			 struct vm_debuginfod_stats *out);

const char *vm_debuginfod_outcome_name(enum vm_debuginfod_outcome o);

#endif
