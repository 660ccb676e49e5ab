// SPDX-License-Identifier: Apache-2.0
/*
 * http_server.c - the libmicrohttpd daemon of `serve`.
 *
 * One thread per connection, so a POST blocked for the length of its
 * profile holds up nothing else.  Who opened a connection is known before
 * its request is read (http_deadline.c): a user of this machine that may
 * not use the API is answered 403 and closed at once.  Slow or idle
 * clients cannot pin the service: connections are limited in total and
 * per client (an address outside, a user inside), the one waiting longest
 * for its request giving its slot to a newer one (http_deadline.c), a
 * connection that sends nothing for idle_timeout seconds is closed, the
 * headers of a request must fit in a small memory pool, and a body larger
 * than body_limit is answered 413 (at once when Content-Length says so,
 * and never read beyond a bound otherwise).  A request must also arrive
 * whole within request_timeout seconds however slowly its bytes trickle
 * in.  Before any body is read, the request's head is
 * checked where libmicrohttpd does not (http_framing.h: one body length,
 * no transfer coding but chunked, no control byte in the target), and
 * then the token, when set; a request refused there gets its answer and
 * the connection is closed after it, so no byte of its body can be read
 * as another request.
 *
 * Each request gets a struct vm_http_exchange, from its request line on;
 * the completion callback logs it (method, path, status, duration,
 * samples; the client's words escaped, common/escape.h) and frees it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/serve/http_deadline.h"
#include "agent/serve/http_framing.h"
#include "agent/serve/http_int.h"
#include "agent/serve/request.h"
#include "agent/serve/service.h"
#include "common/array.h"
#include "common/clock.h"
#include "common/escape.h"
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
	/*
	 * What follows each MHD_NO the agent returns, each said in its own
	 * words already (refused at its opening, out of memory, a body past
	 * its bound).
	 */
	if (!strncmp(msg, "Application reported internal error", 35))
		return;
	/* Its error pages are quoted whole; the status code says enough. */
	html = strstr(msg, " ('<html>");
	if (html)
		snprintf(html, sizeof(msg) - (size_t)(html - msg), ").");
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n')
		msg[--n] = '\0';
	vm_log("libmicrohttpd: %s", msg);
}

/*
 * The request line has arrived: the exchange starts here, with the target
 * as the client sent it (libmicrohttpd decodes it only afterwards), so
 * that a control byte hidden as %00 is seen.  Returned to libmicrohttpd,
 * it becomes the request's *con_cls.
 */
static void *on_request_line(void *cls, const char *uri,
			     struct MHD_Connection *conn)
{
	struct vm_http_server *srv = cls;
	struct vm_http_conn_info ci;
	struct vm_http_exchange *x;

	/* Answered at its opening: the rest of it is not looked at. */
	vm_http_conn_info(srv->deadlines, conn, &ci);
	if (ci.end == VM_HTTP_CONN_REFUSED)
		return NULL;
	x = calloc(1, sizeof(*x));
	if (!x) {
		vm_log("out of memory for a request; its connection is closed");
		return NULL;
	}
	x->srv = cls;
	x->conn = conn;
	x->start_ns = vm_clock_ns(CLOCK_MONOTONIC);
	x->target_bad = vm_http_check_target(uri, strlen(uri), &x->refusal) < 0;
	/* Logged as sent until the head is whole and it is decoded. */
	snprintf(x->path, sizeof(x->path), "%s", uri);
	return x;
}

struct header_list {
	struct vm_http_header *v;
	size_t n, cap;
	bool failed;
};

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind,
				  const char *key, size_t key_size,
				  const char *value, size_t value_size)
{
	struct header_list *l = cls;

	if (vm_grow(l->v, &l->cap, l->n + 1) < 0) {
		l->failed = true;
		return MHD_NO;
	}
	l->v[l->n++] = (struct vm_http_header){ key, key_size,
						value ? value : "",
						value ? value_size : 0 };
	return MHD_YES;
}

/* The head as libmicrohttpd does not check it (http_framing.h). */
static enum MHD_Result check_framing(struct vm_http_exchange *x)
{
	struct header_list l = { 0 };
	struct vm_http_framing f;
	struct vm_error err = { 0 };
	int r;

	if (x->target_bad)
		return vm_http_reply_error(x, 400, "%s",
					   vm_error_str(&x->refusal));
	sym_MHD_get_connection_values_n(x->conn, MHD_HEADER_KIND, add_header,
					&l);
	r = l.failed ? -ENOMEM : vm_http_check_headers(l.v, l.n, &f, &err);
	free(l.v);
	if (r == -ENOMEM)
		return vm_http_reply_error(x, 500, "out of memory");
	if (r < 0)
		return vm_http_reply_error(x, r == -EOPNOTSUPP ? 501 : 400,
					   "%s", vm_error_str(&err));
	if (f.has_length && f.length > x->srv->cfg.body_limit)
		return reply_too_large(x);
	return MHD_YES;
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
	enum MHD_Result r = check_framing(x);

	if (r == MHD_YES && !x->answered && srv->cfg.token &&
	    !authorized(x, srv->cfg.token))
		r = vm_http_reply_error(
			x, 401,
			"this agent requires a token: send the header 'Authorization: Bearer TOKEN' with the token of its --auth-token-file (a browser asks for it: give the token as the password)");
	if (x->answered)
		vm_http_deadline_arm(srv->deadlines, x->conn, false);
	return r;
}

static enum MHD_Result on_upload(struct vm_http_exchange *x, const char *data,
				 size_t *size)
{
	size_t room = x->srv->cfg.body_limit - x->body_len;
	size_t take = *size < room ? *size : room;

	if (take < *size) {
		/* Beyond the limit: keep reading a while, then hang up. */
		x->discarded += *size - take;
		if (x->discarded > DISCARD_LIMIT)
			return MHD_NO;
	}
	if (take > 0) {
		if (vm_grow(x->body, &x->body_cap, x->body_len + take + 1) < 0)
			return MHD_NO;
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

	if (!x)
		return MHD_NO; /* refused at its opening, or out of memory */
	if (!x->method) {
		x->method = method;
		if (!x->target_bad)
			snprintf(x->path, sizeof(x->path), "%s", url);
		return on_headers(x);
	}
	if (x->answered) {
		/* Refused at the headers; drop whatever body follows. */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size)
		return on_upload(x, upload_data, upload_data_size);
	/* The request is whole: the rest is the answer's time. */
	vm_http_deadline_arm(srv->deadlines, conn, false);
	if (x->discarded)
		return reply_too_large(x);
	return vm_http_route(x);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct vm_http_server *srv = cls;
	struct vm_http_exchange *x = *con_cls;
	char samples[40] = "", how[96] = "";
	char method[64], path[4 * sizeof(x->path)], uid[24] = "";
	struct vm_http_conn_info ci;

	/* The next request on this connection gets the time this one had. */
	vm_http_deadline_arm(srv->deadlines, conn, true);
	if (!x)
		return;
	*con_cls = NULL;
	vm_http_conn_info(srv->deadlines, conn, &ci);
	if (ci.local)
		snprintf(uid, sizeof(uid), " uid=%u", (unsigned)ci.uid);
	if (x->has_samples)
		snprintf(samples, sizeof(samples), " samples=%" PRIu64,
			 x->samples);
	if (x->client_gone)
		snprintf(how, sizeof(how), " (client hung up)");
	else if (ci.end == VM_HTTP_CONN_EXPIRED)
		snprintf(
			how, sizeof(how),
			" (closed: the request did not arrive whole within %u s)",
			srv->cfg.request_timeout);
	else if (ci.end == VM_HTTP_CONN_EVICTED)
		snprintf(
			how, sizeof(how),
			" (closed: waiting longest, its slot went to another)");
	else if (!x->method && toe == MHD_REQUEST_TERMINATED_WITH_ERROR)
		snprintf(how, sizeof(how),
			 " (its head was refused by libmicrohttpd)");
	else if (!x->method)
		snprintf(how, sizeof(how),
			 " (closed before its head was whole)");
	else if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		snprintf(how, sizeof(how),
			 " (connection closed before the response was sent)");
	/* Before its head is whole, a request has no method yet. */
	vm_escape(method, sizeof(method), x->method ? x->method : "-",
		  strlen(x->method ? x->method : "-"), VM_ESCAPE_WORD);
	vm_escape(path, sizeof(path), x->path, strlen(x->path), VM_ESCAPE_WORD);
	vm_log("%s %s %u %.1fms%s client=%s%s%s", method, path, x->status,
	       (vm_clock_ns(CLOCK_MONOTONIC) - x->start_ns) / 1e6, samples,
	       ci.addr, uid, how);
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
	struct vm_http_watch_config watch;
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
	watch = (struct vm_http_watch_config){
		.request_timeout = cfg->request_timeout,
		.max_connections = cfg->max_connections,
		.max_per_client = cfg->max_per_client,
		.access = &srv->cfg.access,
	};
	r = vm_http_deadlines_start(&watch, &srv->deadlines, err);
	if (r < 0) {
		free(srv);
		return r;
	}
	if (cfg->addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	srv->daemon = sym_MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, srv,
		/* First, so that every message goes through it. */
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_SOCK_ADDR,
		(const struct sockaddr *)&cfg->addr,
		/*
		 * The limits are http_deadline.c's, by client; libmicrohttpd's
		 * own, by address, would count every local user as one.  Its
		 * total leaves room for the connections being closed.
		 */
		MHD_OPTION_CONNECTION_LIMIT, 2 * cfg->max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, 0U,
		MHD_OPTION_CONNECTION_TIMEOUT, cfg->idle_timeout,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MEMORY_LIMIT,
		MHD_OPTION_URI_LOG_CALLBACK, on_request_line, srv,
		MHD_OPTION_NOTIFY_CONNECTION, vm_http_deadline_notify,
		srv->deadlines, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
		MHD_OPTION_END);
	if (!srv->daemon) {
		int e = errno ? errno : EADDRINUSE;

		vm_http_deadlines_stop(srv->deadlines);
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
	vm_http_deadlines_stop(srv->deadlines);
	free(srv);
}
