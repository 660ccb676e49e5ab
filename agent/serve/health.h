/* SPDX-License-Identifier: Apache-2.0 */
/*
 * health.h - what GET /healthz reports: the tools disk (found, mounted,
 * verified, built for this kernel) and whether the bpf and perf backends
 * can run; the HTTP layer adds what the profiling service is doing.
 *
 * The disk's state is what `setup` found when `serve` started (copied into
 * struct vm_health_config); the backends are probed on every request,
 * since privileges and sysctls may change while the agent runs.
 */
#ifndef VMTOOLS_AGENT_HEALTH_H
#define VMTOOLS_AGENT_HEALTH_H

#include <stdbool.h>

#include <json-c/json.h>

#include "agent/profile/context.h"
#include "agent/serve/warm.h"
#include "common/error.h"

struct vm_health_config {
	const char *label;
	const char *mountpoint;
	const char *perf_path; /* what the perf backend will run */
	bool setup_ran; /* false with --no-setup */
	bool disk_found;
	bool mounted;
	bool verified;
	bool release_match;
	const char *device; /* may be NULL */
	const char *image_release; /* may be NULL */
	const char *setup_error; /* NULL when setup succeeded */
	/*
	 * The agent's: what is known per binary, the lookups of debug
	 * files, the reads of the targets' files, what the backends learned.
	 */
	struct vm_agent_ctx *ctx;
	/* What warms the targets' binaries; NULL: --no-warm. */
	struct vm_warm *warm;
};

/* Whether this process can load a perf_event BPF program and sample. */
int vm_health_probe_bpf(struct vm_error *err);

/*
 * The /healthz document; *usable tells whether at least one backend can
 * take a profile (else the answer is 503).
 */
struct json_object *vm_health_json(const struct vm_health_config *cfg,
				   bool *usable);

#endif
