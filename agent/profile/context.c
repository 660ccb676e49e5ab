// SPDX-License-Identifier: Apache-2.0
/*
 * context.c - the agent's context, made and freed whole (context.h).
 */
#include "agent/profile/context.h"

#include <errno.h>
#include <stdlib.h>

int vm_agent_ctx_new(const struct vm_agent_ctx_config *cfg,
		     struct vm_agent_ctx **out, struct vm_error *err)
{
	struct vm_agent_ctx *ctx = calloc(1, sizeof(*ctx));

	*out = NULL;
	if (ctx)
		ctx->binaries = vm_binaries_new(cfg ? &cfg->binaries : NULL);
	if (ctx && ctx->binaries)
		ctx->symbols = vm_symcache_new(ctx->binaries,
					       cfg ? &cfg->symbols : NULL);
	if (!ctx || !ctx->symbols) {
		vm_agent_ctx_free(ctx);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	*out = ctx;
	return 0;
}

void vm_agent_ctx_free(struct vm_agent_ctx *ctx)
{
	/* The cache first: its runs hold entries of the home. */
	if (ctx)
		vm_symcache_free(ctx->symbols);
	if (ctx)
		vm_binaries_free(ctx->binaries);
	free(ctx);
}
