/* SPDX-License-Identifier: Apache-2.0 */
/*
 * context.h - what the agent keeps for its whole life and hands down to
 * every session, instead of file-scope singletons (context.c): made once
 * by the command that runs (agent/cmd_serve.c, agent/cmd_profile.c),
 * carried by the engine's config (engine.h) to the backends and the
 * symbolizer, and read by /healthz and /metrics.
 *
 *   binaries   what is known per binary: symbols, unwind tables,
 *              PostgreSQL facts (agent/binaries/binaries.h)
 *   symbols    the symbol cache keeping their symbols there, and where
 *              it looks for debug files (agent/symbolize/symcache.h)
 *   debuginfod the servers it asks for debug files found nowhere else,
 *              on a thread of their own (agent/symbolize/debuginfod.h)
 *   iopool     the workers that read the targets' files, which may hang
 *              (agent/iopool/iopool.h)
 *   memkept    the last memory snapshot of each target, for the OOM
 *              reports (agent/profile/memsnap.h)
 *   backends   what each profiling backend keeps for the agent's life
 *              (its kept_new, agent/profile/backend.h), made by the
 *              engine at the backend's first use (engine.c)
 *
 * Its limits are fields of its config, not setters: a test makes a
 * context of its own with the limits it wants, and frees it.
 */
#ifndef VMTOOLS_AGENT_CONTEXT_H
#define VMTOOLS_AGENT_CONTEXT_H

#include <pthread.h>

#include "agent/binaries/binaries.h"
#include "agent/iopool/iopool.h"
#include "agent/profile/memsnap.h"
#include "agent/symbolize/symcache.h"
#include "common/error.h"

struct vm_agent_ctx_config {
	struct vm_binaries_limits binaries; /* zeros: the defaults */
	struct vm_symcache_config symbols; /* zeros: the defaults */
	/* --debuginfod-url and --debuginfod-cache; NULL: $DEBUGINFOD_URLS */
	const struct vm_debuginfod_options *debuginfod;
};

/* One per enum vm_profiler (agent/profile/engine.h). */
#define VM_AGENT_CTX_BACKENDS 2

struct vm_agent_ctx {
	struct vm_iopool *iopool;
	struct vm_binaries *binaries;
	struct vm_symcache *symbols;
	struct vm_debuginfod *debuginfod;
	struct vm_memkept *memkept;
	/*
	 * Each backend's kept state by enum vm_profiler, NULL until its
	 * first use, freed here with the kept_free it was made with.
	 */
	struct vm_agent_ctx_kept {
		void *kept;
		void (*free)(void *kept);
	} backends[VM_AGENT_CTX_BACKENDS];
	pthread_mutex_t backends_lock;
	/* vm_agent_ctx_warning()'s */
	struct vm_debuginfod_stats lookups;
	char warning[320];
};

/*
 * A new context (cfg NULL: the defaults): 0, or -ENOMEM with err set.
 * Debug file lookups that cannot be used cost names only: the context is
 * made without them, and vm_debuginfod_stats() says why.
 */
int vm_agent_ctx_new(const struct vm_agent_ctx_config *cfg,
		     struct vm_agent_ctx **out, struct vm_error *err);

/*
 * What the user should be warned of (one sentence: debuginfod lookups
 * configured but off, and why), or NULL.
 */
const char *vm_agent_ctx_warning(struct vm_agent_ctx *ctx);

/*
 * Freed, with everything it holds, the backends' kept states and the
 * lookups first (the one holds binaries, the other tells the symbol
 * cache): after every session is freed and the engine released
 * (vm_engine_release).  NULL is nothing.
 */
void vm_agent_ctx_free(struct vm_agent_ctx *ctx);

#endif
