// SPDX-License-Identifier: Apache-2.0
/*
 * http_deadline.c - each connection from its opening: who opened it, the
 * slot it holds, and a deadline for each request to arrive whole.
 *
 * Who: when libmicrohttpd has accepted a connection, and before a byte of
 * it is read, http_admit.c tells who opened it and refuses a user of this
 * machine that may not use the API: such a connection holds no slot, and
 * its request is never read.
 *
 * Slots: a client, an address outside or a user inside (every process of
 * the machine connects from the same loopback address), holds at most
 * max_per_client connections, and all together max_connections.  When a
 * connection would go over either, the one that has waited longest for
 * its request (of that client, or of anyone) gives up its slot and is
 * closed: a client that sends its request at once is served while the
 * slow ones wait, however many there are.  Only when every slot is busy
 * answering is the new connection refused (503).
 *
 * Deadline: libmicrohttpd's connection timeout counts silence only: a
 * client that sends one header line a second is never silent.  So from
 * its opening, and again from the end of each answer, a connection's next
 * request (head and body) must arrive whole within request_timeout
 * seconds.  While a request is being answered (a profile may take a
 * minute) the deadline is disarmed.
 *
 * A watchdog thread shuts down the socket of a connection past its
 * deadline; the connection's own thread then reads the end of the stream
 * and closes it as when the client hangs up.  A socket is only touched
 * under the lock, and libmicrohttpd reports a connection closed (and the
 * entry leaves the list) before it closes the socket, so neither the
 * watchdog nor an eviction ever shuts down a descriptor that was reused.
 */
#include "agent/serve/http_deadline.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "agent/serve/http_admit.h"
#include "agent/serve/mhd.h"
#include "common/clock.h"
#include "common/log.h"

#define NS_PER_S 1000000000ULL

struct conn {
	struct conn *prev, *next;
	int fd;
	struct vm_http_peer peer;
	struct sockaddr_storage addr; /* the client's, for one from outside */
	char addr_text[INET6_ADDRSTRLEN]; /* the same for the log */
	bool counted; /* holds a slot */
	uint64_t waiting_ns; /* CLOCK_MONOTONIC since when; 0: answering */
	uint64_t deadline_ns; /* 0 while disarmed */
	enum vm_http_conn_end end;
};

struct vm_http_deadlines {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool stopping;
	struct vm_http_watch_config cfg;
	struct conn list; /* sentinel of a circular list */
};

/* Close what is past its deadline; the earliest deadline left, or 0. */
static uint64_t expire(struct vm_http_deadlines *d, uint64_t now)
{
	uint64_t next = 0;

	for (struct conn *c = d->list.next; c != &d->list; c = c->next) {
		if (!c->deadline_ns)
			continue;
		if (c->deadline_ns <= now) {
			shutdown(c->fd, SHUT_RDWR);
			c->deadline_ns = c->waiting_ns = 0;
			c->counted = false;
			c->end = VM_HTTP_CONN_EXPIRED;
		} else if (!next || c->deadline_ns < next) {
			next = c->deadline_ns;
		}
	}
	return next;
}

static void *watchdog(void *arg)
{
	struct vm_http_deadlines *d = arg;
	uint64_t now, next;

	pthread_mutex_lock(&d->lock);
	while (!d->stopping) {
		now = vm_clock_ns(CLOCK_MONOTONIC);
		next = expire(d, now);
		if (!next) {
			pthread_cond_wait(&d->wake, &d->lock);
			continue;
		}
		vm_cond_wait_until(&d->wake, &d->lock, next);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

int vm_http_deadlines_start(const struct vm_http_watch_config *cfg,
			    struct vm_http_deadlines **out,
			    struct vm_error *err)
{
	struct vm_http_deadlines *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return vm_error_set(err, ENOMEM, "out of memory");
	d->cfg = *cfg;
	d->list.next = d->list.prev = &d->list;
	pthread_mutex_init(&d->lock, NULL);
	vm_cond_init_monotonic(&d->wake);
	r = pthread_create(&d->thread, NULL, watchdog, d);
	if (r) {
		pthread_cond_destroy(&d->wake);
		pthread_mutex_destroy(&d->lock);
		free(d);
		return vm_error_errno(err, r,
				      "cannot start the HTTP request watchdog");
	}
	*out = d;
	return 0;
}

void vm_http_deadlines_stop(struct vm_http_deadlines *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stopping = true;
	pthread_cond_signal(&d->wake);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	pthread_cond_destroy(&d->wake);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* The client's address, kept and as text for the log. */
static void set_addr(struct conn *c, const struct sockaddr *sa)
{
	snprintf(c->addr_text, sizeof(c->addr_text), "?");
	if (!sa)
		return;
	if (sa->sa_family == AF_INET) {
		memcpy(&c->addr, sa, sizeof(struct sockaddr_in));
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
			  c->addr_text, sizeof(c->addr_text));
	} else if (sa->sa_family == AF_INET6) {
		memcpy(&c->addr, sa, sizeof(struct sockaddr_in6));
		inet_ntop(AF_INET6,
			  &((const struct sockaddr_in6 *)sa)->sin6_addr,
			  c->addr_text, sizeof(c->addr_text));
	}
}

static bool same_client(const struct conn *a, const struct conn *b)
{
	const struct sockaddr_in *a4 = (const void *)&a->addr;
	const struct sockaddr_in *b4 = (const void *)&b->addr;
	const struct sockaddr_in6 *a6 = (const void *)&a->addr;
	const struct sockaddr_in6 *b6 = (const void *)&b->addr;

	if (a->peer.local || b->peer.local)
		return a->peer.local && b->peer.local &&
		       a->peer.uid == b->peer.uid;
	if (a->addr.ss_family != b->addr.ss_family)
		return false;
	if (a->addr.ss_family == AF_INET)
		return a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	return a->addr.ss_family == AF_INET6 &&
	       !memcmp(&a6->sin6_addr, &b6->sin6_addr, sizeof(a6->sin6_addr));
}

/*
 * Give c a slot, under the lock: the connection that has waited longest
 * for its request gives up its own when c's client, or everybody, is at
 * the limit.  False when every slot in question is busy answering.
 */
static bool take_slot(struct vm_http_deadlines *d, struct conn *c)
{
	struct conn *oldest = NULL, *oldest_client = NULL, *victim = NULL;
	unsigned all = 0, client = 0;

	for (struct conn *o = d->list.next; o != &d->list; o = o->next) {
		if (!o->counted)
			continue;
		all++;
		if (o->waiting_ns &&
		    (!oldest || o->waiting_ns < oldest->waiting_ns))
			oldest = o;
		if (!same_client(o, c))
			continue;
		client++;
		if (o->waiting_ns &&
		    (!oldest_client ||
		     o->waiting_ns < oldest_client->waiting_ns))
			oldest_client = o;
	}
	if (client >= d->cfg.max_per_client) {
		if (!oldest_client)
			return false;
		victim = oldest_client;
	} else if (all >= d->cfg.max_connections) {
		if (!oldest)
			return false;
		victim = oldest;
	}
	if (victim) {
		shutdown(victim->fd, SHUT_RDWR);
		victim->counted = false;
		victim->deadline_ns = victim->waiting_ns = 0;
		victim->end = VM_HTTP_CONN_EVICTED;
	}
	c->counted = true;
	return true;
}

static void opened(struct vm_http_deadlines *d, struct MHD_Connection *mc,
		   void **socket_context)
{
	const union MHD_ConnectionInfo *fd, *addr;
	struct conn *c;
	uint64_t now;
	bool slot;

	fd = sym_MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	addr = sym_MHD_get_connection_info(mc,
					   MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	c = calloc(1, sizeof(*c));
	if (!c || !fd) {
		/* Not watched: no slot can be given, nor anyone refused. */
		free(c);
		if (fd)
			shutdown(fd->connect_fd, SHUT_RDWR);
		return;
	}
	c->fd = fd->connect_fd;
	set_addr(c, addr ? addr->client_addr : NULL);
	c->end = VM_HTTP_CONN_OPEN;
	if (!vm_http_admit(c->fd, d->cfg.access, c->addr_text, &c->peer))
		c->end = VM_HTTP_CONN_REFUSED;
	pthread_mutex_lock(&d->lock);
	slot = c->end == VM_HTTP_CONN_OPEN && take_slot(d, c);
	if (slot) {
		now = vm_clock_ns(CLOCK_MONOTONIC);
		c->waiting_ns = now;
		c->deadline_ns =
			now + (uint64_t)d->cfg.request_timeout * NS_PER_S;
	}
	c->next = &d->list;
	c->prev = d->list.prev;
	c->prev->next = c;
	d->list.prev = c;
	pthread_cond_signal(&d->wake);
	pthread_mutex_unlock(&d->lock);
	*socket_context = c;
	if (c->end == VM_HTTP_CONN_OPEN && !slot) {
		c->end = VM_HTTP_CONN_REFUSED;
		vm_log("refused a connection from %s: every slot is busy answering a request",
		       c->addr_text);
		vm_http_answer_and_close(
			c->fd, 503, "Service Unavailable",
			"every connection of the agent is busy answering a request; retry in a moment");
	}
}

void vm_http_deadline_notify(void *cls, struct MHD_Connection *mc,
			     void **socket_context,
			     enum MHD_ConnectionNotificationCode code)
{
	struct vm_http_deadlines *d = cls;
	struct conn *c;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		opened(d, mc, socket_context);
		return;
	}
	c = *socket_context;
	if (!c)
		return;
	pthread_mutex_lock(&d->lock);
	c->prev->next = c->next;
	c->next->prev = c->prev;
	pthread_mutex_unlock(&d->lock);
	*socket_context = NULL;
	free(c);
}

static struct conn *conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci;

	ci = sym_MHD_get_connection_info(mc,
					 MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

void vm_http_deadline_arm(struct vm_http_deadlines *d,
			  struct MHD_Connection *mc, bool armed)
{
	struct conn *c = conn_of(mc);
	uint64_t now = vm_clock_ns(CLOCK_MONOTONIC);

	if (!c)
		return;
	pthread_mutex_lock(&d->lock);
	if (c->counted) {
		c->waiting_ns = armed ? now : 0;
		c->deadline_ns =
			armed ? now + (uint64_t)d->cfg.request_timeout *
						NS_PER_S :
				0;
		pthread_cond_signal(&d->wake);
	}
	pthread_mutex_unlock(&d->lock);
}

void vm_http_conn_info(struct vm_http_deadlines *d, struct MHD_Connection *mc,
		       struct vm_http_conn_info *info)
{
	struct conn *c = conn_of(mc);

	*info = (struct vm_http_conn_info){ 0 };
	snprintf(info->addr, sizeof(info->addr), "?");
	if (!c)
		return;
	pthread_mutex_lock(&d->lock);
	memcpy(info->addr, c->addr_text, sizeof(info->addr));
	info->end = c->end;
	info->local = c->peer.local;
	info->uid = c->peer.uid;
	pthread_mutex_unlock(&d->lock);
}
