// SPDX-License-Identifier: Apache-2.0
/*
 * context.c - the agent's context, made and freed whole (context.h).
 */
#include "agent/profile/context.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int vm_agent_ctx_new(const struct vm_agent_ctx_config *cfg,
		     struct vm_agent_ctx **out, struct vm_error *err)
{
	struct vm_agent_ctx *ctx = calloc(1, sizeof(*ctx));
	struct vm_symcache_config symbols = { 0 };

	*out = NULL;
	if (!ctx)
		return vm_error_set(err, ENOMEM, "out of memory");
	if (cfg)
		symbols = cfg->symbols;
	pthread_mutex_init(&ctx->backends_lock, NULL);
	ctx->iopool = vm_iopool_new();
	/* Unusable lookups leave it off: its stats say why. */
	vm_debuginfod_new(cfg ? cfg->debuginfod : NULL, &ctx->debuginfod, NULL);
	ctx->binaries = vm_binaries_new(cfg ? &cfg->binaries : NULL);
	symbols.debuginfod = ctx->debuginfod;
	symbols.iopool = ctx->iopool;
	ctx->memkept = vm_memkept_new();
	if (ctx->iopool && ctx->binaries && ctx->debuginfod && ctx->memkept)
		ctx->symbols = vm_symcache_new(ctx->binaries, &symbols);
	if (!ctx->symbols) {
		vm_agent_ctx_free(ctx);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	*out = ctx;
	return 0;
}

const char *vm_agent_ctx_warning(struct vm_agent_ctx *ctx)
{
	vm_debuginfod_stats(ctx->debuginfod, &ctx->lookups);
	if (!ctx->lookups.error[0])
		return NULL;
	snprintf(ctx->warning, sizeof(ctx->warning),
		 "no debuginfod lookups: %s", ctx->lookups.error);
	return ctx->warning;
}

void vm_agent_ctx_free(struct vm_agent_ctx *ctx)
{
	if (!ctx)
		return;
	/*
	 * The backends' first: they hold entries of the home; the lookups:
	 * they tell the cache; then the cache, whose runs hold entries of
	 * the home.
	 */
	for (size_t i = 0; i < VM_AGENT_CTX_BACKENDS; i++)
		if (ctx->backends[i].kept)
			ctx->backends[i].free(ctx->backends[i].kept);
	vm_debuginfod_free(ctx->debuginfod);
	vm_symcache_free(ctx->symbols);
	vm_binaries_free(ctx->binaries);
	vm_memkept_free(ctx->memkept);
	/* Last: a stuck read keeps the pool until it returns, not ctx. */
	vm_iopool_free(ctx->iopool);
	pthread_mutex_destroy(&ctx->backends_lock);
	free(ctx);
}
