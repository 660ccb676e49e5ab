// SPDX-License-Identifier: Apache-2.0
/*
 * http_peer.c - who opened an accepted TCP connection: the client's own
 * socket looked up in the agent's network namespace with inet_diag (see
 * http_peer.h).
 *
 * The lookup is exact, one socket by its four numbers, so it costs one
 * netlink round trip to the kernel whatever the number of sockets.  The
 * kernel's exact lookup falls back to a listening socket on the client's
 * port when no connected one matches: the answer is therefore taken only
 * when it names both ends of the connection, so that a client from
 * outside that chose a source port the machine listens on is not taken
 * for that listener's owner.
 *
 * When inet_diag does not find the socket, /proc/net/tcp (or tcp6) is read
 * too: a kernel without inet_diag (a module not loaded, not built) answers
 * ENOENT as for a socket that is not there, and the table is in every
 * kernel.  Only then is a client taken for one from outside.
 *
 * An IPv4 client of an IPv6 socket (an IPv4-mapped address) is looked up as the
 * IPv4 socket it is.
 */
#include "agent/serve/http_peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/sock_diag.h>

#include "common/cleanup.h"

/* One end as inet_diag wants it: family, address, port. */
static int end_of(const struct sockaddr *sa, int *family, __be32 addr[4],
		  __be16 *port)
{
	const struct sockaddr_in *in4 = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

	memset(addr, 0, 4 * sizeof(addr[0]));
	if (sa->sa_family == AF_INET) {
		*family = AF_INET;
		addr[0] = in4->sin_addr.s_addr;
		*port = in4->sin_port;
		return 0;
	}
	if (sa->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	*port = in6->sin6_port;
	if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
		*family = AF_INET;
		memcpy(&addr[0], &in6->sin6_addr.s6_addr[12], 4);
		return 0;
	}
	*family = AF_INET6;
	memcpy(addr, &in6->sin6_addr, 16);
	return 0;
}

int vm_http_peer_query(const struct sockaddr *local,
		       const struct sockaddr *peer,
		       struct vm_http_peer_query *q)
{
	struct inet_diag_sockid *id = &q->req.id;
	int lfam, pfam, r;

	memset(q, 0, sizeof(*q));
	/* The client's socket: its own end is the peer, its remote us. */
	r = end_of(peer, &pfam, id->idiag_src, &id->idiag_sport);
	if (r == 0)
		r = end_of(local, &lfam, id->idiag_dst, &id->idiag_dport);
	if (r < 0)
		return r;
	if (lfam != pfam)
		return -EAFNOSUPPORT;
	id->idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	id->idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	q->req.sdiag_family = (__u8)pfam;
	q->req.sdiag_protocol = IPPROTO_TCP;
	q->req.idiag_states = ~0U;
	q->nlh.nlmsg_len = sizeof(*q);
	q->nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q->nlh.nlmsg_flags = NLM_F_REQUEST;
	q->nlh.nlmsg_seq = 1;
	return 0;
}

/* Whether the socket the kernel names is the client's, and whose it is. */
static int found(const struct vm_http_peer_query *q, int family,
		 const struct inet_diag_sockid *id, unsigned state, uid_t uid,
		 unsigned long inode, struct vm_http_peer *peer)
{
	const struct inet_diag_sockid *want = &q->req.id;

	/* A listener found in its place is not the client's socket. */
	if (family != q->req.sdiag_family ||
	    id->idiag_sport != want->idiag_sport ||
	    id->idiag_dport != want->idiag_dport ||
	    memcmp(id->idiag_src, want->idiag_src, sizeof(want->idiag_src)) ||
	    memcmp(id->idiag_dst, want->idiag_dst, sizeof(want->idiag_dst)) ||
	    state == TCP_LISTEN)
		return 0;
	peer->local = true;
	peer->held = inode != 0;
	peer->uid = peer->held ? uid : (uid_t)-1;
	return 1;
}

int vm_http_peer_answer(const struct vm_http_peer_query *q, const void *buf,
			size_t len, struct vm_http_peer *peer)
{
	const struct nlmsghdr *h = buf;
	const struct inet_diag_msg *m;
	const struct nlmsgerr *e;

	if (len < sizeof(*h) || h->nlmsg_len < sizeof(*h) || h->nlmsg_len > len)
		return -EBADMSG;
	if (h->nlmsg_type == NLMSG_ERROR) {
		if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
			return -EBADMSG;
		e = NLMSG_DATA(h);
		if (e->error == -ENOENT)
			return 0;
		return e->error < 0 ? e->error : -EBADMSG;
	}
	if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		return -EBADMSG;
	m = NLMSG_DATA(h);
	return found(q, m->idiag_family, &m->id, m->idiag_state, m->idiag_uid,
		     m->idiag_inode, peer);
}

/* An address of /proc/net/tcp{,6}: the words as stored, in hex. */
static bool proc_addr(const char *hex, size_t words, __be32 out[4])
{
	char word[9];

	if (strlen(hex) != 8 * words)
		return false;
	memset(out, 0, 4 * sizeof(out[0]));
	for (size_t i = 0; i < words; i++) {
		memcpy(word, hex + 8 * i, 8);
		word[8] = '\0';
		out[i] = (__be32)strtoul(word, NULL, 16);
	}
	return true;
}

int vm_http_peer_proc_line(const struct vm_http_peer_query *q, const char *line,
			   struct vm_http_peer *peer)
{
	char lhex[33], rhex[33];
	unsigned lport, rport, state, uid;
	unsigned long inode;
	struct inet_diag_sockid id = { 0 };
	size_t words = q->req.sdiag_family == AF_INET6 ? 4 : 1;

	if (sscanf(line,
		   " %*u: %32[0-9A-Fa-f]:%x %32[0-9A-Fa-f]:%x %x %*s %*s %*s %u %*d %lu",
		   lhex, &lport, rhex, &rport, &state, &uid, &inode) != 7)
		return 0;
	if (!proc_addr(lhex, words, id.idiag_src) ||
	    !proc_addr(rhex, words, id.idiag_dst) || lport > 0xffff ||
	    rport > 0xffff)
		return 0;
	id.idiag_sport = htons((uint16_t)lport);
	id.idiag_dport = htons((uint16_t)rport);
	return found(q, q->req.sdiag_family, &id, state, uid, inode, peer);
}

/* inet_diag: 1 found, 0 not found (or no inet_diag), <0 an error. */
static int ask_diag(const struct vm_http_peer_query *q,
		    struct vm_http_peer *peer)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	/* An answer is one message: the socket's, or an error. */
	union {
		struct nlmsghdr h;
		char bytes[1024];
	} buf;
	struct timeval tv = { .tv_sec = 1 };
	_cleanup_close_ int nl = -1;
	ssize_t n;

	nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -errno;
	/* The kernel answers at once; the bound is against the unforeseen. */
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(nl, q, sizeof(*q), 0, (struct sockaddr *)&kernel,
		   sizeof(kernel)) < 0)
		return -errno;
	do
		n = recv(nl, &buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return vm_http_peer_answer(q, &buf, (size_t)n, peer);
}

/* /proc/net/tcp{,6}: 1 found, 0 not found, <0 cannot be read. */
static int ask_proc(const struct vm_http_peer_query *q,
		    struct vm_http_peer *peer)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	f = fopen(q->req.sdiag_family == AF_INET6 ? "/proc/net/tcp6" :
						    "/proc/net/tcp",
		  "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0)
		if (vm_http_peer_proc_line(q, line, peer))
			return 1;
	return 0;
}

int vm_http_peer_of(int fd, struct vm_http_peer *peer, struct vm_error *err)
{
	struct sockaddr_storage local, remote;
	socklen_t llen = sizeof(local), rlen = sizeof(remote);
	struct vm_http_peer_query q;
	int r, rp;

	*peer = (struct vm_http_peer){ 0 };
	if (getsockname(fd, (struct sockaddr *)&local, &llen) < 0 ||
	    getpeername(fd, (struct sockaddr *)&remote, &rlen) < 0)
		return vm_error_errno(err, errno,
				      "cannot read the connection's addresses");
	r = vm_http_peer_query((struct sockaddr *)&local,
			       (struct sockaddr *)&remote, &q);
	if (r < 0)
		return vm_error_errno(
			err, -r, "the connection is neither IPv4 nor IPv6");
	r = ask_diag(&q, peer);
	if (r == 1)
		return 0;
	/*
	 * Not found, or no inet_diag in this kernel (it says ENOENT too):
	 * the table every kernel has settles it.
	 */
	rp = ask_proc(&q, peer);
	if (rp >= 0)
		return 0;
	return vm_error_errno(
		err, r < 0 ? -r : -rp,
		"cannot tell which user opened the connection (neither inet_diag nor /proc/net/tcp answered)");
}
