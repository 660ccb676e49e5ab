/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_deadline.h - each connection from its opening (http_deadline.c):
 * who opened it and whether they may use the API, the slot it holds, and
 * a deadline for each request to arrive whole, kept by a watchdog thread.
 * Only http_server.c uses it.
 */
#ifndef VMTOOLS_AGENT_HTTP_DEADLINE_H
#define VMTOOLS_AGENT_HTTP_DEADLINE_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <sys/types.h>

#include <microhttpd.h>

#include "agent/serve/http.h"
#include "common/error.h"

struct vm_http_deadlines;

struct vm_http_watch_config {
	unsigned request_timeout; /* seconds for a request to arrive whole */
	unsigned max_connections; /* slots */
	/* Slots one client may hold: an address outside, a user inside. */
	unsigned max_per_client;
	const struct vm_http_access *access;
};

/* How a connection ended, or that it has not. */
enum vm_http_conn_end {
	VM_HTTP_CONN_OPEN,
	VM_HTTP_CONN_EXPIRED, /* its request was not whole in time */
	VM_HTTP_CONN_EVICTED, /* its slot was given to a newer connection */
	VM_HTTP_CONN_REFUSED, /* answered at its opening and closed */
};

struct vm_http_conn_info {
	enum vm_http_conn_end end;
	char addr[INET6_ADDRSTRLEN]; /* the client's, as text ("?": unknown) */
	bool local; /* opened by a process of this machine */
	uid_t uid; /* by this user, when local */
};

/* Start the watchdog. */
int vm_http_deadlines_start(const struct vm_http_watch_config *cfg,
			    struct vm_http_deadlines **out,
			    struct vm_error *err);
/* Stop it, once the daemon is stopped (no connection is left). */
void vm_http_deadlines_stop(struct vm_http_deadlines *d);

/*
 * libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION callback (cls: the
 * deadlines): a connection is admitted, refused or given a slot when it
 * opens, before a byte of it is read.
 */
void vm_http_deadline_notify(void *cls, struct MHD_Connection *conn,
			     void **socket_context,
			     enum MHD_ConnectionNotificationCode code);

/*
 * Disarm the connection's deadline when its request has arrived whole (or
 * was answered before its body), arm it again from now when the answer is
 * done: the next request on the connection gets the same time.
 */
void vm_http_deadline_arm(struct vm_http_deadlines *d,
			  struct MHD_Connection *conn, bool armed);

/* What is known of the connection (all zero for one not watched). */
void vm_http_conn_info(struct vm_http_deadlines *d, struct MHD_Connection *conn,
		       struct vm_http_conn_info *info);

#endif
