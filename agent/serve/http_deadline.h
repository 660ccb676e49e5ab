/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_deadline.h - a deadline for each request to arrive whole, kept by
 * a watchdog thread (http_deadline.c).  Only http_server.c uses it.
 */
#ifndef VMTOOLS_AGENT_HTTP_DEADLINE_H
#define VMTOOLS_AGENT_HTTP_DEADLINE_H

#include <stdbool.h>

#include <microhttpd.h>

#include "common/error.h"

struct vm_http_deadlines;

/* Start the watchdog: a request must arrive whole within seconds. */
int vm_http_deadlines_start(unsigned seconds, struct vm_http_deadlines **out,
			    struct vm_error *err);
/* Stop it, once the daemon is stopped (no connection is left). */
void vm_http_deadlines_stop(struct vm_http_deadlines *d);

/*
 * libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION callback (cls: the
 * deadlines): a connection's deadline starts when it opens.
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

/* Whether the watchdog closed the connection for its deadline. */
bool vm_http_deadline_expired(struct vm_http_deadlines *d,
			      struct MHD_Connection *conn);

#endif
