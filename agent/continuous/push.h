/* SPDX-License-Identifier: Apache-2.0 */
/*
 * push.h - sending each window of continuous profiling to a
 * Pyroscope-compatible server (push.c), through its /ingest HTTP API:
 *
 *   POST URL/ingest?name=NAME{host=H,kernel=K}&from=START&until=END
 *        &spyName=vmtools&sampleRate=HZ
 *   multipart/form-data, the gzipped pprof as the file field "profile"
 *
 * with the bearer token of --push-token-file (or the user:password of
 * --push-basic-auth-file) and X-Scope-OrgID from --push-tenant.  What a
 * server answers is read up to VM_PUSH_BODY_MAX bytes, its status being
 * what counts.  A thread of its own sends from a bounded queue, so a
 * down, slow or refusing server never holds up profiling: a failure that
 * may pass (no connection, timeout, 408, 429, 5xx) is retried with
 * backoff; a refusal that sending the same body again cannot change
 * (400, 401, 403, 404, 413, 422, ...) drops the window; when the queue is
 * full its oldest window goes.  A window may be kept on disk by its owner
 * (continuous.c spools it in the history directory, so what a restart
 * interrupts is sent after it): the queue says when it is done with one
 * (forget), and never touches the file itself.  Every outcome is counted.
 */
#ifndef VMTOOLS_AGENT_PUSH_H
#define VMTOOLS_AGENT_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/symbolize/symbolize.h"
#include "common/error.h"

#define VM_PUSH_DEFAULT_NAME "postgres"
#define VM_PUSH_QUEUE_MAX 64 /* windows waiting, at most */
#define VM_PUSH_BODY_MAX 65536 /* bytes of an answer read, at most */

enum vm_push_outcome {
	VM_PUSH_OK, /* accepted (2xx) */
	VM_PUSH_RETRY, /* failed, to be tried again */
	VM_PUSH_REJECTED, /* refused for good: dropped */
	VM_PUSH_DROPPED, /* the queue was full: the oldest went */
	VM_PUSH_OUTCOMES,
};

const char *vm_push_outcome_name(enum vm_push_outcome o);

struct vm_push_config {
	const char *url; /* http(s)://host[:port][/prefix] */
	const char *name; /* application name, VM_PUSH_DEFAULT_NAME */
	const char *token; /* NULL: no Authorization: Bearer header */
	const char *userpwd; /* "user:password", NULL: no basic auth */
	const char *tenant; /* NULL: no X-Scope-OrgID */
	const char *host; /* labels of the series */
	const char *kernel;
	uint32_t frequency;
	size_t queue_max;
	/*
	 * Called, from the push thread and with the queue locked, when a
	 * window queued as spooled leaves the queue for good (sent, refused
	 * or dropped): its owner removes the file.  NULL: none is spooled.
	 */
	void (*forget)(void *arg, uint64_t start_ns, uint64_t end_ns);
	void *forget_arg;
	/* Backoff bounds, milliseconds (tests make them short). */
	unsigned backoff_min_ms, backoff_max_ms;
};

struct vm_push_stats {
	uint64_t outcomes[VM_PUSH_OUTCOMES];
	uint64_t queued; /* windows waiting now */
	char last_error[256];
};

struct vm_push;

/* Load libcurl, start the thread. */
int vm_push_start(const struct vm_push_config *cfg, struct vm_push **out,
		  struct vm_error *err);
/*
 * Queue one window (gzipped pprof, copied); spooled is whether its owner
 * keeps it on disk (forget is then called for it).  Never blocks on the
 * network.
 */
void vm_push_enqueue(struct vm_push *p, uint64_t start_ns, uint64_t end_ns,
		     const void *data, size_t len, bool spooled);
/*
 * Queue a profile kept in memory only (a memory snapshot, a faults
 * window): y encoded once as a gzipped pprof; what, "a memory snapshot",
 * names it in the log line when it cannot be encoded.  p NULL (no
 * push): nothing.
 */
void vm_push_enqueue_profile(struct vm_push *p, uint64_t start_ns,
			     uint64_t end_ns, const struct vm_symbolized *y,
			     const char *what);
void vm_push_stats(struct vm_push *p, struct vm_push_stats *st);
/* Stop at once (a transfer under way is aborted); the spool stays. */
void vm_push_stop(struct vm_push *p);

/*
 * Whether url may be --push-url: http:// or https://, a host, no
 * credentials (they would show in logs and /healthz: --push-basic-auth-file
 * gives them), no query or fragment (the ingest path and query are
 * appended to it), no blank or control character.  0, or -EINVAL with the
 * reason and what to do in why.
 */
int vm_push_check_url(const char *url, char *why, size_t size);

/* The ingest URL of one window, malloc'd; pure, for tests. */
char *vm_push_ingest_url(const char *base, const char *escaped_name,
			 uint64_t start_ns, uint64_t end_ns,
			 uint32_t frequency);

#endif
