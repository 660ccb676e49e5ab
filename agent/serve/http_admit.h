/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_admit.h - a connection at its opening, before a byte of it is read
 * (http_admit.c): who opened it, whether they may use the API, and the
 * answer of one refused.  Only http_deadline.c uses it.
 */
#ifndef VMTOOLS_AGENT_HTTP_ADMIT_H
#define VMTOOLS_AGENT_HTTP_ADMIT_H

#include <stdbool.h>

#include "agent/serve/http.h"
#include "agent/serve/http_peer.h"

/*
 * Whether the connection of fd (the client at addr, as text for the log)
 * may be served; *peer says who opened it.  One that may not has been
 * answered (403, or 503 when who it is cannot be told) and shut down.
 */
bool vm_http_admit(int fd, const struct vm_http_access *access,
		   const char *addr, struct vm_http_peer *peer);

/*
 * Write an answer of status (reason its phrase) with {"error": sentence}
 * on a connection nothing was read from or sent on yet, and shut it down.
 */
void vm_http_answer_and_close(int fd, unsigned status, const char *reason,
			      const char *sentence);

#endif
