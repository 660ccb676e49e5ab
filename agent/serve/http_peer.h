/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_peer.h - who is at the other end of an accepted TCP connection
 * (http_peer.c): a process of this machine, and then which user, or a
 * client from outside.
 *
 * The client's own socket is looked up in the agent's network namespace
 * with NETLINK_SOCK_DIAG (inet_diag), by the connection's four numbers
 * reversed.  Found, the connection is local (over 127.0.0.1, ::1 or one
 * of the machine's own addresses) and the socket's owner is the user who
 * opened it; not found, the client's socket is elsewhere (another machine,
 * the host's port forward, another network namespace).  Building the
 * query and reading the answer are pure and unit-tested.
 */
#ifndef VMTOOLS_AGENT_HTTP_PEER_H
#define VMTOOLS_AGENT_HTTP_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>

#include "common/error.h"

struct vm_http_peer {
	bool local; /* the client's socket is in this network namespace */
	/*
	 * Whether a process still holds it: a socket its process closed (or
	 * one waiting out TIME_WAIT) has no file, and the kernel no longer
	 * knows its owner (inet_diag says uid 0 for TIME_WAIT).
	 */
	bool held;
	uid_t uid; /* its owner, when local and held */
};

/* The request for the client's socket, as sent on NETLINK_SOCK_DIAG. */
struct vm_http_peer_query {
	struct nlmsghdr nlh;
	struct inet_diag_req_v2 req;
};

/*
 * The query for the socket at the other end of a connection whose own
 * address is local and whose client is peer; -EAFNOSUPPORT for an address
 * that is neither IPv4 nor IPv6.
 */
int vm_http_peer_query(const struct sockaddr *local,
		       const struct sockaddr *peer,
		       struct vm_http_peer_query *q);

/*
 * Read the kernel's answer to q: 1 and *peer when it names the client's
 * socket, 0 when there is none (the client is not in this namespace, or
 * inet_diag is not in the kernel: both say ENOENT), or a negative errno
 * when the answer is an error or cannot be read.
 */
int vm_http_peer_answer(const struct vm_http_peer_query *q, const void *buf,
			size_t len, struct vm_http_peer *peer);

/*
 * The same from one line of /proc/net/tcp or /proc/net/tcp6, what is
 * asked when inet_diag does not find the socket: 1 and *peer when the line
 * is the client's socket, else 0.
 */
int vm_http_peer_proc_line(const struct vm_http_peer_query *q, const char *line,
			   struct vm_http_peer *peer);

/* Who opened the connection of fd (an accepted TCP socket). */
int vm_http_peer_of(int fd, struct vm_http_peer *peer, struct vm_error *err);

#endif
