// SPDX-License-Identifier: Apache-2.0
/*
 * http_deadline.c - a deadline for each request to arrive whole.
 *
 * libmicrohttpd's connection timeout counts silence only: a client that
 * sends one header line a second is never silent, and enough of them hold
 * every connection slot for as long as they like (slowloris).  So each
 * connection also has a deadline, independent of how often bytes arrive:
 * from its opening, and again from the end of each answer, its next
 * request (head and body) must arrive whole within the same seconds as
 * the idle timeout.  While a request is being answered (a profile may
 * take a minute) the deadline is disarmed.
 *
 * A watchdog thread shuts down the socket of a connection past its
 * deadline; the connection's own thread then reads the end of the stream
 * and closes it as when the client hangs up.  The socket is only touched
 * under the lock, and libmicrohttpd reports a connection closed (and the
 * entry leaves the list) before it closes the socket, so the watchdog
 * never shuts down a descriptor that was reused.
 */
#include "agent/serve/http_deadline.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "agent/serve/mhd.h"
#include "common/clock.h"

#define NS_PER_S 1000000000ULL

struct conn {
	struct conn *prev, *next;
	int fd;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC; 0 while disarmed */
	bool expired;
};

struct vm_http_deadlines {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool stopping;
	unsigned seconds;
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
			c->deadline_ns = 0;
			c->expired = true;
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

int vm_http_deadlines_start(unsigned seconds, struct vm_http_deadlines **out,
			    struct vm_error *err)
{
	struct vm_http_deadlines *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return vm_error_set(err, ENOMEM, "out of memory");
	d->seconds = seconds;
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

void vm_http_deadline_notify(void *cls, struct MHD_Connection *mc,
			     void **socket_context,
			     enum MHD_ConnectionNotificationCode code)
{
	struct vm_http_deadlines *d = cls;
	const union MHD_ConnectionInfo *ci;
	struct conn *c;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = sym_MHD_get_connection_info(
			mc, MHD_CONNECTION_INFO_CONNECTION_FD);
		c = calloc(1, sizeof(*c));
		if (!c || !ci) {
			/* Not watched; the idle timeout still applies. */
			free(c);
			return;
		}
		c->fd = ci->connect_fd;
		pthread_mutex_lock(&d->lock);
		c->deadline_ns = vm_clock_ns(CLOCK_MONOTONIC) +
				 (uint64_t)d->seconds * NS_PER_S;
		c->next = &d->list;
		c->prev = d->list.prev;
		c->prev->next = c;
		d->list.prev = c;
		pthread_cond_signal(&d->wake);
		pthread_mutex_unlock(&d->lock);
		*socket_context = c;
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

	if (!c)
		return;
	pthread_mutex_lock(&d->lock);
	c->deadline_ns = armed ? vm_clock_ns(CLOCK_MONOTONIC) +
					 (uint64_t)d->seconds * NS_PER_S :
				 0;
	pthread_cond_signal(&d->wake);
	pthread_mutex_unlock(&d->lock);
}

bool vm_http_deadline_expired(struct vm_http_deadlines *d,
			      struct MHD_Connection *mc)
{
	struct conn *c = conn_of(mc);
	bool expired;

	if (!c)
		return false;
	pthread_mutex_lock(&d->lock);
	expired = c->expired;
	pthread_mutex_unlock(&d->lock);
	return expired;
}
