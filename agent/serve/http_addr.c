// SPDX-License-Identifier: Apache-2.0
/*
 * http_addr.c - the --listen ADDR:PORT argument of `serve`: parsed into a
 * socket address (IPv4 "127.0.0.1:3080", IPv6 "[::1]:3080", a bare port
 * ":3080" meaning loopback), and whether it reaches beyond the guest.
 * Pure logic, unit-tested.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/serve/http.h"

static int parse_port(const char *s, uint16_t *port)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > 65535)
		return -EINVAL;
	*port = (uint16_t)v;
	return 0;
}

int vm_http_parse_listen(const char *arg, struct sockaddr_storage *ss,
			 socklen_t *len, struct vm_error *err)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon, *host_start, *host_end;
	uint16_t port;

	memset(ss, 0, sizeof(*ss));
	if (arg[0] == '[') {
		host_start = arg + 1;
		host_end = strchr(arg, ']');
		if (!host_end || host_end[1] != ':')
			goto bad;
		colon = host_end + 1;
	} else {
		colon = strrchr(arg, ':');
		if (!colon || memchr(arg, ':', (size_t)(colon - arg)))
			goto bad;
		host_start = arg;
		host_end = colon;
	}
	if (parse_port(colon + 1, &port) < 0)
		goto bad;
	if ((size_t)(host_end - host_start) >= sizeof(host))
		goto bad;
	memcpy(host, host_start, (size_t)(host_end - host_start));
	host[host_end - host_start] = '\0';
	if (host[0] == '\0')
		snprintf(host, sizeof(host), "127.0.0.1");

	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	if (arg[0] != '[' && inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		*len = sizeof(*in4);
		return 0;
	}
	if (arg[0] == '[' && inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
		return 0;
	}
bad:
	return vm_error_set(
		err, EINVAL,
		"--listen '%s' is not an address and port: use ADDR:PORT with a numeric address, e.g. 127.0.0.1:3080, 0.0.0.0:3080 or [::1]:3080",
		arg);
}

bool vm_http_is_loopback(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *in4 = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET)
		return (ntohl(in4->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	return false;
}
