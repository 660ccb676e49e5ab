// SPDX-License-Identifier: Apache-2.0
/*
 * http_server.c - the libmicrohttpd daemon of `serve`.
 *
 * One thread per connection, so a POST blocked for the length of its
 * profile holds up nothing else.  Slow or idle clients cannot pin the
 * service: connections are limited in total and per client address, a
 * connection that sends nothing for idle_timeout seconds is closed, the
 * headers of a request must fit in a small memory pool, and a body larger
 * than body_limit is answered 413 (at once when Content-Length says so,
 * and never read beyond a bound otherwise).  The token, when set, is
 * checked before any body is read.
 *
 * Each request gets a struct vm_http_exchange; the completion callback
 * logs it (method, path, status, duration, samples) and frees it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/serve/http_int.h"
#include "agent/serve/request.h"
#include "agent/serve/service.h"
#include "common/clock.h"
#include "common/log.h"

#define MEMORY_LIMIT (32 * 1024) /* per connection: headers and buffers */
#define DISCARD_LIMIT (1024 * 1024) /* of an oversized chunked body */

/* 413, in the words the request parser uses for the same refusal. */
static enum MHD_Result reply_too_large(struct vm_http_exchange *x)
{
	struct vm_error err = { 0 };

	vm_request_too_large(x->srv->cfg.body_limit, &err);
	return vm_http_reply_error(x, 413, "%s", vm_error_str(&err));
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512], *html;
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* Its error pages are quoted whole; the status code says enough. */
	html = strstr(msg, " ('<html>");
	if (html)
		snprintf(html, sizeof(msg) - (size_t)(html - msg), ").");
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	vm_log("libmicrohttpd: %s", msg);
}

/* The token as a Bearer token, or as a browser's Basic password. */
static bool authorized(struct vm_http_exchange *x, const char *token)
{
	char *user, *password = NULL;
	bool ok;

	if (vm_http_check_bearer(sym_MHD_lookup_connection_value(
					 x->conn, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_AUTHORIZATION),
				 token))
		return true;
	user = sym_MHD_basic_auth_get_username_password(x->conn, &password);
	ok = user && vm_http_check_password(password, token);
	if (password) {
		explicit_bzero(password, strlen(password));
		sym_MHD_free(password);
	}
	if (user)
		sym_MHD_free(user);
	return ok;
}

/* First call for a request: what can be refused before reading a body. */
static enum MHD_Result on_headers(struct vm_http_exchange *x)
{
	struct vm_http_server *srv = x->srv;
	const char *v;
	char *end;
	unsigned long long n;

	if (srv->cfg.token && !authorized(x, srv->cfg.token))
		return vm_http_reply_error(
			x, 401,
			"this agent requires a token: send the header 'Authorization: Bearer TOKEN' with the token of its --auth-token-file (a browser asks for it: give the token as the password)");
	v = sym_MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND,
					    MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (v) {
		errno = 0;
		n = strtoull(v, &end, 10);
		if (errno || *end || n > srv->cfg.body_limit)
			return reply_too_large(x);
	}
	return MHD_YES;
}

static enum MHD_Result on_upload(struct vm_http_exchange *x, const char *data,
				 size_t *size)
{
	size_t room = x->srv->cfg.body_limit - x->body_len;
	size_t take = *size < room ? *size : room;
	char *p;

	if (take < *size) {
		/* Beyond the limit: keep reading a while, then hang up. */
		x->discarded += *size - take;
		if (x->discarded > DISCARD_LIMIT)
			return MHD_NO;
	}
	if (take > 0) {
		p = realloc(x->body, x->body_len + take + 1);
		if (!p)
			return MHD_NO;
		x->body = p;
		memcpy(x->body + x->body_len, data, take);
		x->body_len += take;
		x->body[x->body_len] = '\0';
	}
	*size = 0;
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct vm_http_server *srv = cls;
	struct vm_http_exchange *x = *con_cls;

	if (!x) {
		x = calloc(1, sizeof(*x));
		if (!x)
			return MHD_NO;
		x->srv = srv;
		x->conn = conn;
		x->method = method;
		x->start_ns = vm_clock_ns(CLOCK_MONOTONIC);
		snprintf(x->path, sizeof(x->path), "%s", url);
		*con_cls = x;
		return on_headers(x);
	}
	if (x->answered) {
		/* Refused at the headers; drop whatever body follows. */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size)
		return on_upload(x, upload_data, upload_data_size);
	if (x->discarded)
		return reply_too_large(x);
	return vm_http_route(x);
}

static void client_address(struct MHD_Connection *conn, char *buf, size_t len)
{
	const union MHD_ConnectionInfo *ci;
	const struct sockaddr *sa;

	snprintf(buf, len, "?");
	ci = sym_MHD_get_connection_info(conn,
					 MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!ci || !ci->client_addr)
		return;
	sa = ci->client_addr;
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
			  buf, (socklen_t)len);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6,
			  &((const struct sockaddr_in6 *)sa)->sin6_addr, buf,
			  (socklen_t)len);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct vm_http_server *srv = cls;
	struct vm_http_exchange *x = *con_cls;
	char addr[INET6_ADDRSTRLEN], samples[40] = "";
	const char *how = "";

	if (!x)
		return;
	*con_cls = NULL;
	client_address(conn, addr, sizeof(addr));
	if (x->has_samples)
		snprintf(samples, sizeof(samples), " samples=%" PRIu64,
			 x->samples);
	if (x->client_gone)
		how = " (client hung up)";
	else if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		how = " (connection closed before the response was sent)";
	vm_log("%s %s %u %.1fms%s client=%s%s", x->method, x->path, x->status,
	       (vm_clock_ns(CLOCK_MONOTONIC) - x->start_ns) / 1e6, samples,
	       addr, how);
	vm_metrics_http(vm_service_metrics(srv->cfg.service), x->status);
	if (x->profile)
		atomic_fetch_sub(&srv->profiles_in_flight, 1);
	free(x->body);
	free(x);
}

int vm_http_start(const struct vm_http_config *cfg, struct vm_http_server **out,
		  struct vm_error *err)
{
	struct vm_http_server *srv;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC |
			 MHD_USE_ERROR_LOG;
	int r = vm_mhd_load(err);

	if (r < 0)
		return r;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return vm_error_set(err, ENOMEM, "out of memory");
	srv->cfg = *cfg;
	if (cfg->addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	srv->daemon = sym_MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, srv,
		/* First, so that every message goes through it. */
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_SOCK_ADDR,
		(const struct sockaddr *)&cfg->addr,
		MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->max_per_ip,
		MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MEMORY_LIMIT,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_END);
	if (!srv->daemon) {
		int e = errno ? errno : EADDRINUSE;

		free(srv);
		return vm_error_errno(
			err, e,
			"cannot listen on %s (another agent running? not an address of this machine? use --listen ADDR:PORT)",
			cfg->listen ? cfg->listen : "the --listen address");
	}
	*out = srv;
	return 0;
}

uint16_t vm_http_port(struct vm_http_server *srv)
{
	const union MHD_DaemonInfo *di;

	di = sym_MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
	return di ? di->port : 0;
}

void vm_http_stop(struct vm_http_server *srv, unsigned drain_ms)
{
	uint64_t deadline;
	MHD_socket fd;

	if (!srv)
		return;
	/* No new connections; those open may finish what they are sending. */
	fd = sym_MHD_quiesce_daemon(srv->daemon);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	deadline = vm_clock_ns(CLOCK_MONOTONIC) + (uint64_t)drain_ms * 1000000;
	while (atomic_load(&srv->profiles_in_flight) > 0 &&
	       vm_clock_ns(CLOCK_MONOTONIC) < deadline)
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000000 }, NULL);
	sym_MHD_stop_daemon(srv->daemon);
	free(srv);
}
