/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http_int.h - what the files of the HTTP service share: one request in
 * flight (struct vm_http_exchange, libmicrohttpd's per-request pointer),
 * the responses, and the route table.  Only http_*.c include it.
 */
#ifndef VMTOOLS_AGENT_HTTP_INT_H
#define VMTOOLS_AGENT_HTTP_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>
#include <microhttpd.h>

#include "agent/encode/encode.h"
#include "agent/history/history.h"
#include "agent/serve/http.h"
#include "agent/serve/mhd.h"

struct vm_http_server {
	struct MHD_Daemon *daemon;
	struct vm_http_deadlines *deadlines; /* http_deadline.h */
	struct vm_http_config cfg;
	/* Profiles being taken or sent; shutdown waits for them. */
	atomic_int profiles_in_flight;
};

/* One request, from its headers to the completion callback. */
struct vm_http_exchange {
	struct vm_http_server *srv;
	struct MHD_Connection *conn;
	const char *method; /* NULL until the head is whole */
	char path[128];
	bool target_bad; /* refusal says why */
	struct vm_error refusal;
	uint64_t start_ns; /* CLOCK_MONOTONIC */
	char *body;
	size_t body_len, body_cap;
	size_t discarded; /* bytes beyond the limit, dropped */
	bool answered; /* a response is queued */
	bool profile; /* counted in profiles_in_flight */
	bool client_gone;
	unsigned status;
	bool has_samples;
	uint64_t samples;
};

/* Responses: each queues one and records its status; they return MHD's. */
enum MHD_Result vm_http_reply_json(struct vm_http_exchange *x, unsigned status,
				   struct json_object *body);
enum MHD_Result vm_http_reply_error(struct vm_http_exchange *x, unsigned status,
				    const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Takes ownership of data (malloc'd); filename may be NULL. */
enum MHD_Result vm_http_reply_data(struct vm_http_exchange *x, unsigned status,
				   void *data, size_t len,
				   const char *content_type,
				   const char *filename);
enum MHD_Result vm_http_reply_text(struct vm_http_exchange *x, unsigned status,
				   char *text, size_t len,
				   const char *content_type);

/*
 * A file of the web UI (takes ownership of data), with its cache policy
 * and further headers as a NULL-terminated list of name, value pairs.
 */
enum MHD_Result vm_http_reply_file(struct vm_http_exchange *x, void *data,
				   size_t len, const char *content_type,
				   const char *cache_control,
				   const char *const *headers);

/* Answer a complete request (body read, token checked). */
enum MHD_Result vm_http_route(struct vm_http_exchange *x);

/* The profiling routes (http_profile.c). */
enum MHD_Result vm_http_post_profile(struct vm_http_exchange *x);
enum MHD_Result vm_http_get_profile(struct vm_http_exchange *x);
enum MHD_Result vm_http_delete_profile(struct vm_http_exchange *x);
enum MHD_Result vm_http_pprof_profile(struct vm_http_exchange *x);
enum MHD_Result vm_http_pprof_heap(struct vm_http_exchange *x);
/* The continuous profile's history (http_history.c). */
enum MHD_Result vm_http_get_history(struct vm_http_exchange *x);
enum MHD_Result vm_http_get_history_profile(struct vm_http_exchange *x);
/*
 * What the history routes share (http_history.c): a time parameter read
 * (its name first in the error), format= and archive= read into an
 * answer, a history's answer encoded into it (a vm_history_use_fn), and
 * what the history's r becomes: the answer, or 404 pointing at the index,
 * 503 or 500.
 */
struct vm_http_history_answer {
	enum vm_format format;
	bool gzip;
	struct vm_encoded out;
};
/* ns as an RFC 3339 UTC JSON string. */
struct json_object *vm_http_time_json(uint64_t ns);
int vm_http_history_time(const char *name, const char *value, uint64_t now,
			 uint64_t *out, struct vm_error *err);
int vm_http_history_format(struct vm_http_exchange *x,
			   struct vm_http_history_answer *a,
			   struct vm_error *err);
int vm_http_history_encode(const struct vm_symbolized *y,
			   const struct vm_history_window *span, void *arg,
			   struct vm_error *err);
enum MHD_Result vm_http_history_reply(struct vm_http_exchange *x, int r,
				      struct vm_http_history_answer *a,
				      const char *index, struct vm_error *err);
/* The continuous memory snapshots (http_memory_history.c). */
enum MHD_Result vm_http_get_memory_history(struct vm_http_exchange *x);
enum MHD_Result vm_http_get_memory_snapshot(struct vm_http_exchange *x);
enum MHD_Result vm_http_get_memory_growth(struct vm_http_exchange *x);
/* The "continuous" of /healthz. */
struct json_object *vm_http_continuous_health(struct vm_continuous *c);
/* GET /ui/...: the web UI's files (http_ui.c). */
enum MHD_Result vm_http_ui(struct vm_http_exchange *x);
/* GET /profile/cpu's document, also the "profile" of /healthz. */
struct json_object *vm_http_profile_status(struct vm_service *svc);

#endif
