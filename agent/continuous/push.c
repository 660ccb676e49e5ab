// SPDX-License-Identifier: Apache-2.0
/*
 * push.c - the push thread and its queue (see push.h).
 *
 * The queue is an array, oldest first, under one mutex; the thread sends
 * its head with libcurl while the mutex is free, so enqueueing never
 * waits for the network.  The head being sent is never the one a full
 * queue drops.  A transfer is bounded (connect and total timeouts) and
 * aborted by vm_push_stop() at once: it shuts the transfer's socket down
 * (libcurl opens and closes it through our callbacks), which wakes
 * libcurl from its wait; its progress callback, which it calls only about
 * once a second while a server says nothing, was up to a second late.
 */
#include "agent/continuous/push.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent/continuous/curl.h"
#include "agent/encode/encode.h"
#include "common/array.h"
#include "common/clock.h"
#include "common/log.h"

#define CONNECT_TIMEOUT_MS 5000
#define TRANSFER_TIMEOUT_MS 30000
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 60000

struct item {
	uint64_t start_ns, end_ns;
	void *data;
	size_t len;
	bool spooled;
};

struct vm_push {
	struct vm_push_config cfg;
	char *url, *name, *token, *userpwd, *tenant, *escaped_name;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	atomic_bool stopping;
	struct item *q;
	size_t n, cap;
	bool sending; /* q[0] is being sent */
	struct vm_push_stats st;
	CURL *curl;
	/* What the answer being read has had; past the bound, the rest goes. */
	size_t body_bytes;
	bool body_cut;
	/* libcurl's socket, -1 when none: vm_push_stop() shuts it down. */
	pthread_mutex_t sock_lock;
	int sock;
};

const char *vm_push_outcome_name(enum vm_push_outcome o)
{
	static const char *const names[] = {
		[VM_PUSH_OK] = "ok",
		[VM_PUSH_RETRY] = "retry",
		[VM_PUSH_REJECTED] = "rejected",
		[VM_PUSH_DROPPED] = "dropped",
	};

	return o < VM_PUSH_OUTCOMES ? names[o] : "unknown";
}

int vm_push_check_url(const char *url, char *why, size_t size)
{
	const char *host, *end;

	if (!strncmp(url, "http://", 7))
		host = url + 7;
	else if (!strncmp(url, "https://", 8))
		host = url + 8;
	else
		goto bad_scheme;
	for (const char *c = url; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f) {
			snprintf(
				why, size,
				"--push-url '%s' has a blank or control character; give the server's address as is",
				url);
			return -EINVAL;
		}
	if (strpbrk(url, "?#")) {
		snprintf(
			why, size,
			"--push-url '%s' has a query or fragment, which would take the place of the ingest request's own; give the server's base URL (http://HOST:PORT[/PREFIX])",
			url);
		return -EINVAL;
	}
	end = host + strcspn(host, "/");
	if (memchr(host, '@', (size_t)(end - host))) {
		snprintf(
			why, size,
			"--push-url has credentials in it, which would show in logs and /healthz; put USER:PASSWORD in a file readable only by root and give it with --push-basic-auth-file");
		return -EINVAL;
	}
	if (end == host) {
		snprintf(why, size, "--push-url '%s' names no host", url);
		return -EINVAL;
	}
	return 0;
bad_scheme:
	snprintf(why, size,
		 "--push-url '%s' must start with http:// or https://", url);
	return -EINVAL;
}

char *vm_push_ingest_url(const char *base, const char *escaped_name,
			 uint64_t start_ns, uint64_t end_ns, uint32_t frequency)
{
	size_t n = strlen(base);
	char *url;

	while (n && base[n - 1] == '/')
		n--;
	if (asprintf(&url,
		     "%.*s/ingest?name=%s&from=%" PRIu64 "&until=%" PRIu64
		     "&spyName=vmtools&sampleRate=%u",
		     (int)n, base, escaped_name,
		     (uint64_t)(start_ns / 1000000000u),
		     (uint64_t)((end_ns + 999999999u) / 1000000000u),
		     frequency) < 0)
		return NULL;
	return url;
}

static void count(struct vm_push *p, enum vm_push_outcome o)
{
	p->st.outcomes[o]++;
}

static void item_free(struct item *it)
{
	free(it->data);
	memset(it, 0, sizeof(*it));
}

/* The oldest window not being sent goes; the caller holds the lock. */
static void drop_one(struct vm_push *p)
{
	size_t i = p->sending ? 1 : 0;

	if (i >= p->n)
		return;
	if (p->q[i].spooled && p->cfg.forget)
		p->cfg.forget(p->cfg.forget_arg, p->q[i].start_ns,
			      p->q[i].end_ns);
	item_free(&p->q[i]);
	memmove(p->q + i, p->q + i + 1, (p->n - i - 1) * sizeof(p->q[0]));
	p->n--;
	count(p, VM_PUSH_DROPPED);
}

void vm_push_enqueue(struct vm_push *p, uint64_t start_ns, uint64_t end_ns,
		     const void *data, size_t len, bool spooled)
{
	struct item it = { start_ns, end_ns, malloc(len ? len : 1), len,
			   spooled };

	pthread_mutex_lock(&p->lock);
	if (!it.data) {
		count(p, VM_PUSH_DROPPED);
		goto out;
	}
	memcpy(it.data, data, len);
	while (p->n >= p->cfg.queue_max && p->n > (p->sending ? 1u : 0u))
		drop_one(p);
	if (vm_grow(p->q, &p->cap, p->n + 1)) {
		item_free(&it);
		count(p, VM_PUSH_DROPPED);
		goto out;
	}
	p->q[p->n++] = it;
	p->st.queued = p->n;
	pthread_cond_signal(&p->wake);
out:
	pthread_mutex_unlock(&p->lock);
}

void vm_push_enqueue_profile(struct vm_push *p, uint64_t start_ns,
			     uint64_t end_ns, const struct vm_symbolized *y,
			     const char *what)
{
	struct vm_encoded gz = { 0 };
	struct vm_error err = { 0 };

	if (!p)
		return;
	if (vm_encode_profile(y, VM_FORMAT_PPROF, true, &gz, &err) == 0)
		vm_push_enqueue(p, start_ns, end_ns, gz.data, gz.len, false);
	else
		vm_log("continuous: cannot encode %s: %s", what,
		       vm_error_str(&err));
	free(gz.data);
}

static int on_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c,
		       curl_off_t d)
{
	struct vm_push *p = ctx;

	(void)a, (void)b, (void)c, (void)d;
	return atomic_load(&p->stopping); /* non-zero aborts the transfer */
}

/* libcurl's sockets, made here so that a stop can shut them down. */
static curl_socket_t open_socket(void *ctx, curlsocktype purpose,
				 struct curl_sockaddr *a)
{
	struct vm_push *p = ctx;
	int fd;

	(void)purpose;
	pthread_mutex_lock(&p->sock_lock);
	fd = atomic_load(&p->stopping) ?
		     -1 :
		     socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
	if (fd >= 0)
		p->sock = fd;
	pthread_mutex_unlock(&p->sock_lock);
	return fd >= 0 ? fd : CURL_SOCKET_BAD;
}

static int close_socket(void *ctx, curl_socket_t fd)
{
	struct vm_push *p = ctx;

	pthread_mutex_lock(&p->sock_lock);
	if (p->sock == fd)
		p->sock = -1;
	pthread_mutex_unlock(&p->sock_lock);
	return close(fd);
}

/*
 * The answer's body is not needed, and a server may send without end:
 * past VM_PUSH_BODY_MAX the transfer ends (its status is known by then).
 */
static size_t discard(char *ptr, size_t size, size_t n, void *ctx)
{
	struct vm_push *p = ctx;

	(void)ptr;
	p->body_bytes += size * n;
	if (p->body_bytes > VM_PUSH_BODY_MAX) {
		p->body_cut = true;
		return 0; /* libcurl ends the transfer: CURLE_WRITE_ERROR */
	}
	return size * n;
}

/* A header line "NAME: VALUE" onto list, however long VALUE is. */
static struct curl_slist *add_header(struct curl_slist *list, const char *name,
				     const char *value, bool *failed)
{
	struct curl_slist *l;
	char *line;

	if (asprintf(&line, "%s: %s", name, value) < 0) {
		*failed = true;
		return list;
	}
	l = sym_curl_slist_append(list, line);
	free(line);
	if (!l)
		*failed = true;
	return l ? l : list;
}

/* Whether sending the same body again may succeed. */
static bool may_pass(long status)
{
	return status == 408 || status == 429 || status >= 500;
}

/* One POST of it; the outcome, with a sentence in err when not ok. */
static enum vm_push_outcome send_one(struct vm_push *p, const struct item *it,
				     char *err, size_t errlen)
{
	struct curl_slist *headers = NULL;
	bool failed = false;
	char *url;
	curl_mime *mime;
	curl_mimepart *part;
	CURLcode c;
	long status = 0;
	enum vm_push_outcome o;

	url = vm_push_ingest_url(p->url, p->escaped_name, it->start_ns,
				 it->end_ns, p->cfg.frequency);
	mime = sym_curl_mime_init(p->curl);
	if (!url || !mime) {
		free(url);
		sym_curl_mime_free(mime);
		snprintf(err, errlen, "out of memory");
		return VM_PUSH_RETRY;
	}
	part = sym_curl_mime_addpart(mime);
	sym_curl_mime_name(part, "profile");
	sym_curl_mime_filename(part, "profile.pb.gz");
	sym_curl_mime_type(part, "application/octet-stream");
	sym_curl_mime_data(part, it->data, it->len);
	if (p->token) {
		char *bearer;

		if (asprintf(&bearer, "Bearer %s", p->token) < 0) {
			failed = true;
		} else {
			headers = add_header(headers, "Authorization", bearer,
					     &failed);
			free(bearer);
		}
	}
	if (p->tenant)
		headers = add_header(headers, "X-Scope-OrgID", p->tenant,
				     &failed);
	if (failed) {
		free(url);
		sym_curl_mime_free(mime);
		sym_curl_slist_free_all(headers);
		snprintf(err, errlen, "out of memory");
		return VM_PUSH_RETRY;
	}
	p->body_bytes = 0;
	p->body_cut = false;
	sym_curl_easy_setopt(p->curl, CURLOPT_URL, url);
	sym_curl_easy_setopt(p->curl, CURLOPT_MIMEPOST, mime);
	sym_curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, headers);
	c = sym_curl_easy_perform(p->curl);
	sym_curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
	sym_curl_easy_setopt(p->curl, CURLOPT_MIMEPOST, NULL);
	sym_curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, NULL);
	sym_curl_mime_free(mime);
	sym_curl_slist_free_all(headers);
	free(url);

	/* Cut short by us: what counts is the status, already read. */
	if (c == CURLE_WRITE_ERROR && p->body_cut && status >= 200)
		c = CURLE_OK;
	if (c != CURLE_OK) {
		snprintf(err, errlen, "cannot send to %s: %s", p->url,
			 sym_curl_easy_strerror(c));
		return VM_PUSH_RETRY;
	}
	if (status >= 200 && status < 300)
		return VM_PUSH_OK;
	o = may_pass(status) ? VM_PUSH_RETRY : VM_PUSH_REJECTED;
	snprintf(err, errlen, "%s answered HTTP %ld%s", p->url, status,
		 o == VM_PUSH_REJECTED ? "; the window was dropped" : "");
	return o;
}

static void *push_thread(void *arg)
{
	struct vm_push *p = arg;
	unsigned backoff = 0;
	uint64_t next_ns = 0;
	char err[256];

	pthread_mutex_lock(&p->lock);
	while (!atomic_load(&p->stopping)) {
		struct item it;
		enum vm_push_outcome o;

		if (p->n == 0) {
			pthread_cond_wait(&p->wake, &p->lock);
			continue;
		}
		if (vm_clock_ns(CLOCK_MONOTONIC) < next_ns) {
			vm_cond_wait_until(&p->wake, &p->lock, next_ns);
			continue;
		}
		it = p->q[0];
		p->sending = true;
		pthread_mutex_unlock(&p->lock);
		o = send_one(p, &it, err, sizeof(err));
		pthread_mutex_lock(&p->lock);
		p->sending = false;
		if (atomic_load(&p->stopping))
			break; /* aborted: it stays spooled */
		count(p, o);
		if (o == VM_PUSH_RETRY) {
			backoff = backoff ? backoff * 2 : p->cfg.backoff_min_ms;
			if (backoff > p->cfg.backoff_max_ms)
				backoff = p->cfg.backoff_max_ms;
			next_ns = vm_clock_ns(CLOCK_MONOTONIC) +
				  backoff * 1000000ULL;
			snprintf(p->st.last_error, sizeof(p->st.last_error),
				 "%s", err);
			continue;
		}
		backoff = 0;
		next_ns = 0;
		if (o == VM_PUSH_OK)
			p->st.last_error[0] = '\0';
		else
			snprintf(p->st.last_error, sizeof(p->st.last_error),
				 "%s", err);
		if (o == VM_PUSH_REJECTED)
			vm_log("push: %s", err);
		if (p->q[0].spooled && p->cfg.forget)
			p->cfg.forget(p->cfg.forget_arg, p->q[0].start_ns,
				      p->q[0].end_ns);
		item_free(&p->q[0]);
		memmove(p->q, p->q + 1, (p->n - 1) * sizeof(p->q[0]));
		p->n--;
		p->st.queued = p->n;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static int setup_curl(struct vm_push *p, struct vm_error *err)
{
	char label[512];
	char *e;

	p->curl = sym_curl_easy_init();
	if (!p->curl)
		return vm_error_set(err, ENOMEM, "cannot start libcurl");
	snprintf(label, sizeof(label), "%s{host=%s,kernel=%s}", p->name,
		 p->cfg.host, p->cfg.kernel);
	e = sym_curl_easy_escape(p->curl, label, 0);
	p->escaped_name = e ? strdup(e) : NULL;
	sym_curl_free(e);
	if (!p->escaped_name)
		return vm_error_set(err, ENOMEM, "out of memory");
	sym_curl_easy_setopt(p->curl, CURLOPT_NOSIGNAL, 1L);
	sym_curl_easy_setopt(p->curl, CURLOPT_CONNECTTIMEOUT_MS,
			     (long)CONNECT_TIMEOUT_MS);
	sym_curl_easy_setopt(p->curl, CURLOPT_TIMEOUT_MS,
			     (long)TRANSFER_TIMEOUT_MS);
	sym_curl_easy_setopt(p->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	sym_curl_easy_setopt(p->curl, CURLOPT_NOPROGRESS, 0L);
	sym_curl_easy_setopt(p->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	sym_curl_easy_setopt(p->curl, CURLOPT_XFERINFODATA, p);
	sym_curl_easy_setopt(p->curl, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	sym_curl_easy_setopt(p->curl, CURLOPT_OPENSOCKETDATA, p);
	sym_curl_easy_setopt(p->curl, CURLOPT_CLOSESOCKETFUNCTION,
			     close_socket);
	sym_curl_easy_setopt(p->curl, CURLOPT_CLOSESOCKETDATA, p);
	sym_curl_easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, discard);
	sym_curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, p);
	if (p->userpwd) {
		sym_curl_easy_setopt(p->curl, CURLOPT_HTTPAUTH,
				     (long)CURLAUTH_BASIC);
		sym_curl_easy_setopt(p->curl, CURLOPT_USERPWD, p->userpwd);
	}
	sym_curl_easy_setopt(p->curl, CURLOPT_USERAGENT,
			     "vmtools-agent/" VMTOOLS_VERSION);
	return 0;
}

int vm_push_start(const struct vm_push_config *cfg, struct vm_push **out,
		  struct vm_error *err)
{
	struct vm_push *p;
	int r;

	*out = NULL;
	r = vm_curl_load(err);
	if (r < 0)
		return r;
	p = calloc(1, sizeof(*p));
	if (!p)
		return vm_error_set(err, ENOMEM, "out of memory");
	p->cfg = *cfg;
	if (!p->cfg.queue_max)
		p->cfg.queue_max = VM_PUSH_QUEUE_MAX;
	if (!p->cfg.backoff_min_ms)
		p->cfg.backoff_min_ms = BACKOFF_MIN_MS;
	if (!p->cfg.backoff_max_ms)
		p->cfg.backoff_max_ms = BACKOFF_MAX_MS;
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->sock_lock, NULL);
	p->sock = -1;
	vm_cond_init_monotonic(&p->wake);
	p->url = strdup(cfg->url);
	p->name = strdup(cfg->name ? cfg->name : VM_PUSH_DEFAULT_NAME);
	p->token = cfg->token ? strdup(cfg->token) : NULL;
	p->userpwd = cfg->userpwd ? strdup(cfg->userpwd) : NULL;
	p->tenant = cfg->tenant ? strdup(cfg->tenant) : NULL;
	if (!p->url || !p->name || (cfg->token && !p->token) ||
	    (cfg->userpwd && !p->userpwd) || (cfg->tenant && !p->tenant)) {
		vm_push_stop(p);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	r = setup_curl(p, err);
	if (r < 0) {
		vm_push_stop(p);
		return r;
	}
	r = pthread_create(&p->thread, NULL, push_thread, p);
	if (r) {
		vm_push_stop(p);
		return vm_error_errno(err, r, "cannot start the push thread");
	}
	p->thread_started = true;
	*out = p;
	return 0;
}

void vm_push_stats(struct vm_push *p, struct vm_push_stats *st)
{
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	st->queued = p->n;
	pthread_mutex_unlock(&p->lock);
}

void vm_push_stop(struct vm_push *p)
{
	if (!p)
		return;
	atomic_store(&p->stopping, true);
	/* A transfer under way fails now; no new socket is opened. */
	pthread_mutex_lock(&p->sock_lock);
	if (p->sock >= 0)
		shutdown(p->sock, SHUT_RDWR);
	pthread_mutex_unlock(&p->sock_lock);
	if (p->thread_started) {
		pthread_mutex_lock(&p->lock);
		pthread_cond_broadcast(&p->wake);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
	}
	for (size_t i = 0; i < p->n; i++)
		item_free(&p->q[i]);
	free(p->q);
	if (p->curl)
		sym_curl_easy_cleanup(p->curl);
	free(p->url);
	free(p->name);
	free(p->token);
	if (p->userpwd)
		explicit_bzero(p->userpwd, strlen(p->userpwd));
	free(p->userpwd);
	free(p->tenant);
	free(p->escaped_name);
	pthread_mutex_destroy(&p->lock);
	pthread_mutex_destroy(&p->sock_lock);
	pthread_cond_destroy(&p->wake);
	free(p);
}
