// SPDX-License-Identifier: Apache-2.0
/*
 * test_http_peer.c - unit tests of agent/serve/http_peer.c: the inet_diag
 * query for the client's socket (IPv4, IPv6, IPv4 through an IPv6 socket,
 * what is neither), the kernel's answers (the socket, none, an error, a
 * listener found in its place, a socket no process holds), the lines of
 * /proc/net/tcp and tcp6, and a real connection over loopback, whose
 * owner is the user running the test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/sock_diag.h>

#include "agent/serve/http_peer.h"

static struct sockaddr_in in4(const char *addr, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port) };

	inet_pton(AF_INET, addr, &sa.sin_addr);
	return sa;
}

static struct sockaddr_in6 in6(const char *addr, uint16_t port)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6,
				   .sin6_port = htons(port) };

	inet_pton(AF_INET6, addr, &sa.sin6_addr);
	return sa;
}

static void test_query(void **state)
{
	struct sockaddr_in local = in4("127.0.0.1", 3080),
			   peer = in4("10.0.2.15", 40000);
	struct sockaddr_in6 l6 = in6("::1", 3080), p6 = in6("::1", 40001);
	struct sockaddr_in6 m6 = in6("::ffff:127.0.0.1", 3080),
			    pm6 = in6("::ffff:127.0.0.2", 40002);
	struct sockaddr unix_sa = { .sa_family = AF_UNIX };
	struct vm_http_peer_query q;

	assert_int_equal(vm_http_peer_query((struct sockaddr *)&local,
					    (struct sockaddr *)&peer, &q),
			 0);
	assert_int_equal(q.nlh.nlmsg_type, SOCK_DIAG_BY_FAMILY);
	assert_int_equal(q.nlh.nlmsg_len, sizeof(q));
	assert_int_equal(q.req.sdiag_family, AF_INET);
	assert_int_equal(q.req.sdiag_protocol, IPPROTO_TCP);
	/* The client's socket: its own end is the peer. */
	assert_int_equal(q.req.id.idiag_src[0], peer.sin_addr.s_addr);
	assert_int_equal(q.req.id.idiag_sport, htons(40000));
	assert_int_equal(q.req.id.idiag_dst[0], local.sin_addr.s_addr);
	assert_int_equal(q.req.id.idiag_dport, htons(3080));
	assert_int_equal(q.req.id.idiag_cookie[0], INET_DIAG_NOCOOKIE);

	assert_int_equal(vm_http_peer_query((struct sockaddr *)&l6,
					    (struct sockaddr *)&p6, &q),
			 0);
	assert_int_equal(q.req.sdiag_family, AF_INET6);
	assert_memory_equal(q.req.id.idiag_src, &p6.sin6_addr, 16);

	/* IPv4 through an IPv6 socket is the IPv4 socket it is. */
	assert_int_equal(vm_http_peer_query((struct sockaddr *)&m6,
					    (struct sockaddr *)&pm6, &q),
			 0);
	assert_int_equal(q.req.sdiag_family, AF_INET);
	assert_int_equal(q.req.id.idiag_src[0], htonl(0x7f000002));
	assert_int_equal(q.req.id.idiag_src[1], 0);

	assert_int_equal(vm_http_peer_query((struct sockaddr *)&local,
					    (struct sockaddr *)&p6, &q),
			 -EAFNOSUPPORT);
	assert_int_equal(vm_http_peer_query((struct sockaddr *)&local, &unix_sa,
					    &q),
			 -EAFNOSUPPORT);
}

struct reply {
	struct nlmsghdr h;
	union {
		struct inet_diag_msg m;
		struct nlmsgerr e;
	};
};

static void test_answer(void **state)
{
	struct sockaddr_in local = in4("127.0.0.1", 3080),
			   peer = in4("127.0.0.1", 40000);
	struct vm_http_peer_query q;
	struct vm_http_peer p = { 0 };
	struct reply r = { 0 };

	assert_int_equal(vm_http_peer_query((struct sockaddr *)&local,
					    (struct sockaddr *)&peer, &q),
			 0);
	r.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	r.h.nlmsg_len = NLMSG_LENGTH(sizeof(r.m));
	r.m.idiag_family = AF_INET;
	r.m.idiag_state = TCP_ESTABLISHED;
	r.m.id = q.req.id;
	r.m.idiag_uid = 65534;
	r.m.idiag_inode = 4242;
	assert_int_equal(vm_http_peer_answer(&q, &r, r.h.nlmsg_len, &p), 1);
	assert_true(p.local);
	assert_true(p.held);
	assert_int_equal(p.uid, 65534);

	/* Closed by its process, or in TIME_WAIT: nobody's any more. */
	r.m.idiag_inode = 0;
	r.m.idiag_uid = 0;
	assert_int_equal(vm_http_peer_answer(&q, &r, r.h.nlmsg_len, &p), 1);
	assert_true(p.local);
	assert_false(p.held);

	/* A listener on the client's port, found in its place. */
	r.m.idiag_inode = 7;
	r.m.idiag_state = TCP_LISTEN;
	memset(r.m.id.idiag_dst, 0, sizeof(r.m.id.idiag_dst));
	r.m.id.idiag_dport = 0;
	assert_int_equal(vm_http_peer_answer(&q, &r, r.h.nlmsg_len, &p), 0);
	r.m.id = q.req.id;
	r.m.id.idiag_sport = htons(40001);
	r.m.idiag_state = TCP_ESTABLISHED;
	assert_int_equal(vm_http_peer_answer(&q, &r, r.h.nlmsg_len, &p), 0);

	/* No such socket (or no inet_diag); another error; a short one. */
	memset(&r, 0, sizeof(r));
	r.h.nlmsg_type = NLMSG_ERROR;
	r.h.nlmsg_len = NLMSG_LENGTH(sizeof(r.e));
	r.e.error = -ENOENT;
	assert_int_equal(vm_http_peer_answer(&q, &r, r.h.nlmsg_len, &p), 0);
	r.e.error = -EPERM;
	assert_int_equal(vm_http_peer_answer(&q, &r, r.h.nlmsg_len, &p),
			 -EPERM);
	assert_int_equal(vm_http_peer_answer(&q, &r, 8, &p), -EBADMSG);
	r.h.nlmsg_len = 4096;
	assert_int_equal(vm_http_peer_answer(&q, &r, sizeof(r), &p), -EBADMSG);
}

/* A line of /proc/net/tcp: addresses as the kernel prints them. */
static const char *tcp_line(char *buf, size_t len, uint32_t local,
			    uint16_t lport, uint32_t remote, uint16_t rport,
			    const char *rest)
{
	snprintf(buf, len, "   1: %08X:%04X %08X:%04X %s\n", local, lport,
		 remote, rport, rest);
	return buf;
}

static void test_proc_line(void **state)
{
	struct sockaddr_in local = in4("127.0.0.1", 3080),
			   peer = in4("127.0.0.2", 50266);
	struct sockaddr_in6 l6 = in6("::1", 3080), p6 = in6("::1", 50266);
	uint32_t lo = local.sin_addr.s_addr, lo2 = peer.sin_addr.s_addr;
	struct vm_http_peer_query q;
	struct vm_http_peer p = { 0 };
	char line[256];

	assert_int_equal(vm_http_peer_query((struct sockaddr *)&local,
					    (struct sockaddr *)&peer, &q),
			 0);
	assert_int_equal(
		vm_http_peer_proc_line(
			&q,
			tcp_line(
				line, sizeof(line), lo2, 50266, lo, 3080,
				"01 00000000:00000000 00:00000000 00000000 65534        0 12345 1 0000000000000000 20 4 30 10 -1"),
			&p),
		1);
	assert_true(p.local && p.held);
	assert_int_equal(p.uid, 65534);
	/* TIME_WAIT: no owner any more. */
	assert_int_equal(
		vm_http_peer_proc_line(
			&q,
			tcp_line(
				line, sizeof(line), lo2, 50266, lo, 3080,
				"06 00000000:00000000 03:00000A4F 00000000     0        0 0 3 0000000000000000"),
			&p),
		1);
	assert_false(p.held);
	/* The server's side of the same connection, a listener, the header. */
	assert_int_equal(
		vm_http_peer_proc_line(
			&q,
			tcp_line(
				line, sizeof(line), lo, 3080, lo2, 50266,
				"01 00000000:00000000 00:00000000 00000000     0        0 999 1"),
			&p),
		0);
	assert_int_equal(
		vm_http_peer_proc_line(
			&q,
			tcp_line(
				line, sizeof(line), lo2, 50266, 0, 0,
				"0A 00000000:00000000 00:00000000 00000000     0        0 1065 1"),
			&p),
		0);
	assert_int_equal(
		vm_http_peer_proc_line(
			&q,
			"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n",
			&p),
		0);

	assert_int_equal(vm_http_peer_query((struct sockaddr *)&l6,
					    (struct sockaddr *)&p6, &q),
			 0);
	snprintf(
		line, sizeof(line),
		"   0: 000000000000000000000000%08X:C45A 000000000000000000000000%08X:0C08 01 00000000:00000000 00:00000000 00000000  1000        0 777 1\n",
		l6.sin6_addr.s6_addr32[3], l6.sin6_addr.s6_addr32[3]);
	assert_int_equal(vm_http_peer_proc_line(&q, line, &p), 1);
	assert_int_equal(p.uid, 1000);
}

/* A real connection over loopback is local, and the test's own. */
static void test_loopback(void **state)
{
	struct sockaddr_in sa = in4("127.0.0.1", 0);
	socklen_t len = sizeof(sa);
	struct vm_http_peer p = { 0 };
	struct vm_error err = { 0 };
	int l, c, a;

	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &len), 0);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	a = accept(l, NULL, NULL);
	assert_true(a >= 0);
	if (vm_http_peer_of(a, &p, &err) < 0)
		fail_msg("%s", vm_error_str(&err));
	assert_true(p.local);
	assert_true(p.held);
	assert_int_equal(p.uid, geteuid());
	/* Closed by its process: the socket is nobody's. */
	close(c);
	assert_int_equal(vm_http_peer_of(a, &p, &err), 0);
	assert_false(p.local && p.held);
	close(a);
	close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_answer),
		cmocka_unit_test(test_proc_line),
		cmocka_unit_test(test_loopback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
