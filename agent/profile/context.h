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
 *
 * Its limits are fields of its config, not setters: a test makes a
 * context of its own with the limits it wants, and frees it.
 */
#ifndef VMTOOLS_AGENT_CONTEXT_H
#define VMTOOLS_AGENT_CONTEXT_H

#include "agent/binaries/binaries.h"
#include "agent/symbolize/symcache.h"
#include "common/error.h"

struct vm_agent_ctx_config {
	struct vm_binaries_limits binaries; /* zeros: the defaults */
	struct vm_symcache_config symbols; /* zeros: the defaults */
};

struct vm_agent_ctx {
	struct vm_binaries *binaries;
	struct vm_symcache *symbols;
};

/* A new context (cfg NULL: the defaults): 0, or -ENOMEM with err set. */
int vm_agent_ctx_new(const struct vm_agent_ctx_config *cfg,
		     struct vm_agent_ctx **out, struct vm_error *err);

/*
 * Freed, with everything it holds: after every session is freed, the
 * engine released (vm_engine_release) and debuginfod shut down (its
 * lookups tell the symbol cache).  NULL is nothing.
 */
void vm_agent_ctx_free(struct vm_agent_ctx *ctx);

#endif
