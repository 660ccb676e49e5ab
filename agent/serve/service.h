/* SPDX-License-Identifier: Apache-2.0 */
/*
 * service.h - the session manager of `serve`: one on-demand profile at a
 * time.
 *
 * A POST (or GET /debug/pprof/profile) calls vm_service_run(), which
 * blocks its connection thread for the length of the profile while other
 * threads may ask for the status or stop it.  The client's socket is
 * watched meanwhile: when the client hangs up, the session is stopped and
 * freed without encoding anything.  vm_service_shutdown() (SIGTERM) stops
 * the running session, lets its client have what was collected, and
 * refuses new ones.
 *
 * The one-at-a-time rule is the service's own, not the engine's: the
 * engine runs independent sessions, so that other kinds of session may
 * run beside the on-demand one.
 *
 * The service knows nothing of HTTP.  Errors are a negative errno and a
 * sentence that says what is wrong; the HTTP layer picks the status and
 * adds what to do next through the API:
 *   -EBUSY      another on-demand profile holds the slot
 *   -ESHUTDOWN  the agent is stopping
 *   -ENXIO      vm_service_stop(): no profile is running
 * and whatever vm_session_start() and the engine return (engine.h).
 */
#ifndef VMTOOLS_AGENT_SERVICE_H
#define VMTOOLS_AGENT_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/profile/engine.h"
#include "agent/serve/metrics.h"
#include "agent/serve/request.h"
#include "common/error.h"

struct vm_service_config {
	struct vm_engine_config engine;
	struct vm_request_limits limits;
};

/* The slot's life: idle -> starting -> running -> finishing -> idle. */
enum vm_service_phase {
	VM_SERVICE_IDLE,
	VM_SERVICE_STARTING, /* the backend is being loaded or spawned */
	VM_SERVICE_RUNNING, /* sampling */
	VM_SERVICE_FINISHING, /* collecting, symbolizing, encoding */
};

/* What is in the slot at one moment. */
struct vm_service_status {
	enum vm_service_phase phase;
	struct vm_session_status session; /* unless idle */
};

/* What one vm_service_run() did. */
struct vm_service_result {
	/*
	 * The slot was taken and a session asked of the engine: it is
	 * logged and counted.  False when refused (-EBUSY, -ESHUTDOWN).
	 */
	bool claimed;
	/* The backend had started: a failure now is the agent's own. */
	bool started;
	enum vm_outcome outcome; /* how the claimed session ended */
	bool client_gone; /* the client hung up; out is empty */
	struct vm_profile_output out; /* returned 0: out.data is the caller's */
	uint64_t samples; /* collected (so far, when the client is gone) */
	uint64_t lost; /* stacks lost or colliding */
	uint64_t duration_ms; /* from the claim to the end */
	struct vm_error err; /* returned < 0: what went wrong */
};

struct vm_service;

int vm_service_new(const struct vm_service_config *cfg, struct vm_service **out,
		   struct vm_error *err);
void vm_service_free(struct vm_service *svc);

const struct vm_request_limits *vm_service_limits(struct vm_service *svc);
struct vm_metrics *vm_service_metrics(struct vm_service *svc);

/*
 * Take one profile.  client_fd is the client's socket, watched for a
 * hang-up (-1: not watched); a client already gone gets no session at all
 * (res->client_gone, not res->claimed).  Returns 0 with the profile in
 * res->out (to be freed by the caller) or with res->client_gone, else a
 * negative errno with res->err.  Always fills res.
 */
int vm_service_run(struct vm_service *svc, const struct vm_profile_request *req,
		   int client_fd, struct vm_service_result *res);

/* What is running, if anything. */
void vm_service_status(struct vm_service *svc, struct vm_service_status *st);

/*
 * Stop the running session early; its run returns what was collected.
 * Returns 0 and *st the session as it was asked to stop, or -ENXIO when
 * none is running.
 */
int vm_service_stop(struct vm_service *svc, struct vm_service_status *st,
		    struct vm_error *err);

/*
 * SIGTERM: refuse new sessions, stop the running one, and wait up to
 * timeout_ms for its client to be answered.  Returns whether it was.
 */
bool vm_service_shutdown(struct vm_service *svc, unsigned timeout_ms);

#endif
