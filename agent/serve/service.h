/* SPDX-License-Identifier: Apache-2.0 */
/*
 * service.h - the session manager of `serve`: one profile at a time.
 *
 * A POST (or GET /debug/pprof/profile) calls vm_service_run(), which
 * blocks its connection thread for the length of the profile while other
 * threads may ask for the status (GET) or stop it (DELETE).  The client's
 * socket is watched meanwhile: when the client hangs up, the session is
 * stopped and freed without encoding anything.  vm_service_shutdown()
 * (SIGTERM) stops the running session, lets its client have what was
 * collected, and refuses new ones.
 */
#ifndef VMTOOLS_AGENT_SERVICE_H
#define VMTOOLS_AGENT_SERVICE_H

#include <stdbool.h>

#include <json-c/json.h>

#include "agent/profile/engine.h"
#include "agent/serve/metrics.h"
#include "agent/serve/request.h"
#include "common/error.h"

struct vm_service_config {
	struct vm_engine_config engine;
	struct vm_request_limits limits;
};

/* What one run produced: a profile (status 200) or an error. */
struct vm_service_result {
	unsigned status; /* HTTP status */
	struct vm_profile_output out; /* status 200: out.data is the caller's */
	struct vm_error err; /* other statuses: the sentence to answer */
	enum vm_outcome outcome;
	bool client_gone; /* nothing is to be sent */
	uint64_t samples;
};

struct vm_service;

int vm_service_new(const struct vm_service_config *cfg, struct vm_service **out,
		   struct vm_error *err);
void vm_service_free(struct vm_service *svc);

const struct vm_request_limits *vm_service_limits(struct vm_service *svc);
struct vm_metrics *vm_service_metrics(struct vm_service *svc);

/*
 * Take one profile.  client_fd is the client's socket, watched for a
 * hang-up (-1: not watched).  Always fills res; the profile in res->out
 * must be freed by the caller.
 */
void vm_service_run(struct vm_service *svc,
		    const struct vm_profile_request *req, int client_fd,
		    struct vm_service_result *res);

/* GET /profile/cpu: a new JSON object describing what is running. */
struct json_object *vm_service_status(struct vm_service *svc);

/*
 * DELETE /profile/cpu: 200 and *body describing the stopped session, or
 * 412 and *body an error when none is running.
 */
unsigned vm_service_stop(struct vm_service *svc, struct json_object **body);

/*
 * SIGTERM: refuse new sessions, stop the running one, and wait up to
 * timeout_ms for its client to be answered.  Returns whether it was.
 */
bool vm_service_shutdown(struct vm_service *svc, unsigned timeout_ms);

#endif
