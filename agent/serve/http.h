/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.h - the REST service of `vmtools-agent serve` on libmicrohttpd
 * (docs/api.md).
 *
 *   http_server.c    the daemon: limits, timeouts, request bodies, auth,
 *                    one log line per request
 *   http_framing.c   the checks of a request's head libmicrohttpd lacks
 *   http_deadline.c  each connection from its opening: who opened it, its
 *                    slot, the time its request has to arrive whole
 *   http_admit.c     a connection at its opening: admitted, or answered
 *                    and closed before its request is read
 *   http_peer.c      which user of this machine opened a connection, if any
 *   http_access.c    which of them may use the API
 *   http_routes.c    which handler answers which method and path
 *   http_profile.c   the profiling routes: statuses and bodies of the
 *                    session manager's answers
 *   http_history.c   the continuous profile's history
 *   http_oom.c       the OOM reports
 *   http_response.c  JSON and binary responses
 *   http_ui.c        GET /ui/...: the web UI's files (ui_files.c reads them)
 *   http_auth.c      the token, as Bearer or as a browser's Basic password,
 *                    compared in constant time
 *   http_addr.c      the --listen ADDR:PORT argument
 *
 * The handlers call the session manager (service.h), the metrics
 * (metrics.h) and the health probes (health.h).  libmicrohttpd runs one
 * thread per connection, so a POST that waits for its profile never holds
 * up a GET or a DELETE.
 */
#ifndef VMTOOLS_AGENT_HTTP_H
#define VMTOOLS_AGENT_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "common/error.h"

struct vm_service;
struct vm_health_config;
struct vm_continuous;
struct vm_oom;

#define VM_HTTP_DEFAULT_LISTEN "127.0.0.1:3080"
#define VM_HTTP_MAX_CONNECTIONS 128
#define VM_HTTP_MAX_PER_CLIENT 64
/* Seconds without a byte from the client. */
#define VM_HTTP_IDLE_TIMEOUT 10
/*
 * Seconds a request (head and body) has to arrive whole, from the opening
 * of its connection or the end of the previous answer (http_deadline.c).
 */
#define VM_HTTP_REQUEST_TIMEOUT 5
/* Users --allow-user may name. */
#define VM_HTTP_MAX_ALLOWED_USERS 64

/*
 * Who may use the API from inside the machine (http_access.c): root, the
 * user the agent runs as, and those of --allow-user.  A connection from
 * outside the machine is not asked: the token, when set, rules it.
 */
struct vm_http_access {
	uid_t self;
	uid_t allowed[VM_HTTP_MAX_ALLOWED_USERS];
	size_t n_allowed;
};

struct vm_http_config {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	const char *listen; /* as given, for messages */
	const char *token; /* NULL: no authentication */
	unsigned max_connections;
	unsigned max_per_client;
	unsigned idle_timeout;
	unsigned request_timeout;
	struct vm_http_access access;
	size_t body_limit; /* bytes of a request body; more is 413 */
	struct vm_service *service;
	const struct vm_health_config *health;
	struct vm_continuous *continuous; /* NULL without --continuous */
	struct vm_oom *oom; /* NULL: no OOM reports */
	/* Where the web UI is (ui_files.h): --ui-dir, else these two. */
	const char *ui_dir;
	const char *ui_installed; /* DATADIR/ui */
	const char *mountpoint; /* the tools disk's, for its copy */
};

struct vm_http_server;

int vm_http_start(const struct vm_http_config *cfg, struct vm_http_server **out,
		  struct vm_error *err);
/* The port actually bound (useful with --listen ADDR:0). */
uint16_t vm_http_port(struct vm_http_server *srv);
/*
 * Stop accepting, give the profiles being sent up to drain_ms to reach
 * their clients, then close every connection and join the threads.
 */
void vm_http_stop(struct vm_http_server *srv, unsigned drain_ms);

int vm_http_parse_listen(const char *arg, struct sockaddr_storage *ss,
			 socklen_t *len, struct vm_error *err);
bool vm_http_is_loopback(const struct sockaddr_storage *ss);

/*
 * Add --allow-user's USER (a name or a number) to a; a name is looked up
 * once, here.
 */
int vm_http_access_add_user(struct vm_http_access *a, const char *user,
			    struct vm_error *err);
/* Whether uid, the owner of a connection from this machine, may use it. */
bool vm_http_access_allows(const struct vm_http_access *a, uid_t uid);
/* The sentence refusing uid: who may, and how to let it in. */
void vm_http_access_refusal(const struct vm_http_access *a, uid_t uid,
			    struct vm_error *err);

/*
 * Read the token of --auth-token-file; *loose_mode tells whether group or
 * others may read the file (worth a warning).
 */
int vm_http_load_token(const char *path, char **token, bool *loose_mode,
		       struct vm_error *err);
/* Whether an Authorization header value carries the token. */
bool vm_http_check_bearer(const char *header, const char *token);
/*
 * Whether the password of a Basic Authorization (the user name is not
 * looked at) is the token: what a browser sends once its login dialog has
 * been given the token.  NULL password: none was sent.
 */
bool vm_http_check_password(const char *password, const char *token);

#endif
