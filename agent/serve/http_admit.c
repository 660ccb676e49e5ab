// SPDX-License-Identifier: Apache-2.0
/*
 * http_admit.c - a connection at its opening, before a byte of it is read:
 * who opened it (http_peer.c), whether they may use the API
 * (http_access.c), and the answer of one refused.
 *
 * A client from outside the machine has no user: it is admitted here, and
 * the token, when set, is checked on its request.  A user of the machine
 * that may not use the API is answered 403 at once.  libmicrohttpd can
 * only answer a request it has read, and the point is not to read it: the
 * answer is written here, on a socket nothing was sent on yet (its buffer
 * takes it at once), and the socket shut down; the connection's thread
 * then finds the stream ended and closes it.  When who opened the
 * connection cannot be told, it is not taken for an outsider: 503.
 */
#include "agent/serve/http_admit.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <json-c/json.h>

#include "common/log.h"

void vm_http_answer_and_close(int fd, unsigned status, const char *reason,
			      const char *sentence)
{
	struct json_object *o = json_object_new_object();
	const char *body;
	char answer[1024];
	int n;

	if (o) {
		json_object_object_add(o, "error",
				       json_object_new_string(sentence));
		body = json_object_to_json_string_ext(o,
						      JSON_C_TO_STRING_PLAIN);
		n = snprintf(
			answer, sizeof(answer),
			"HTTP/1.1 %u %s\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
			status, reason, strlen(body), body);
		/* Whole or not at all: the client may be gone already. */
		if (n > 0 && (size_t)n < sizeof(answer))
			send(fd, answer, (size_t)n,
			     MSG_NOSIGNAL | MSG_DONTWAIT);
		json_object_put(o);
	}
	shutdown(fd, SHUT_RDWR);
}

bool vm_http_admit(int fd, const struct vm_http_access *access,
		   const char *addr, struct vm_http_peer *peer)
{
	struct vm_error err = { 0 };

	if (vm_http_peer_of(fd, peer, &err) < 0) {
		/* Not knowing who it is, do not take it for an outsider. */
		vm_log("refused a connection from %s: %s", addr,
		       vm_error_str(&err));
		vm_http_answer_and_close(fd, 503, "Service Unavailable",
					 vm_error_str(&err));
		return false;
	}
	if (!peer->local)
		return true;
	if (!peer->held) {
		/* Its process closed it already: nobody to answer. */
		shutdown(fd, SHUT_RDWR);
		return false;
	}
	if (vm_http_access_allows(access, peer->uid))
		return true;
	vm_http_access_refusal(access, peer->uid, &err);
	vm_log("refused a connection from uid %u at %s: it may not use the API (--allow-user lets a user in)",
	       (unsigned)peer->uid, addr);
	vm_http_answer_and_close(fd, 403, "Forbidden", vm_error_str(&err));
	return false;
}
