// SPDX-License-Identifier: Apache-2.0
/*
 * http_response.c - building and queueing the service's responses: JSON
 * documents, {"error": "..."} bodies, profiles, and the web UI's files.
 * Every response but the UI's says not to be cached; errors are sentences
 * a person can act on.  A 401 offers Basic beside Bearer, so that a
 * browser asks for the token (as the password) and sends it from then on.
 * Every JSON document is valid UTF-8, whatever a client's path or a
 * process's name put into it: bytes that are not are written as \\xHH
 * (common/escape.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/serve/http_int.h"
#include "common/escape.h"

static enum MHD_Result queue_as(struct vm_http_exchange *x, unsigned status,
				struct MHD_Response *resp,
				const char *content_type,
				const char *cache_control)
{
	enum MHD_Result r;

	if (!resp)
		return MHD_NO;
	sym_MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				    content_type);
	sym_MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				    cache_control);
	if (status == 401) {
		sym_MHD_add_response_header(resp,
					    MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					    "Bearer realm=\"vmtools\"");
		sym_MHD_add_response_header(
			resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
			"Basic realm=\"vmtools\", charset=\"UTF-8\"");
	}
	if (status == 405) {
		const char *allow = "GET, HEAD";

		if (!strcmp(x->path, "/profile/cpu"))
			allow = "GET, HEAD, POST, DELETE";
		else if (!strcmp(x->path, "/debug/pprof/profile"))
			allow = "GET"; /* HEAD would take a profile for nothing */
		sym_MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
	}
	r = sym_MHD_queue_response(x->conn, status, resp);
	sym_MHD_destroy_response(resp);
	if (r == MHD_YES) {
		x->answered = true;
		x->status = status;
	}
	return r;
}

static enum MHD_Result queue(struct vm_http_exchange *x, unsigned status,
			     struct MHD_Response *resp,
			     const char *content_type)
{
	return queue_as(x, status, resp, content_type, "no-store");
}

enum MHD_Result vm_http_reply_text(struct vm_http_exchange *x, unsigned status,
				   char *text, size_t len,
				   const char *content_type)
{
	struct MHD_Response *resp;

	resp = sym_MHD_create_response_from_buffer(len, text,
						   MHD_RESPMEM_MUST_FREE);
	if (!resp)
		free(text);
	return queue(x, status, resp, content_type);
}

enum MHD_Result vm_http_reply_json(struct vm_http_exchange *x, unsigned status,
				   struct json_object *body)
{
	const char *s;
	size_t len, n = 0;
	char *copy = NULL;

	s = json_object_to_json_string_length(
		body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
		&len);
	if (s)
		n = vm_escape(NULL, 0, s, len, VM_ESCAPE_JSON);
	copy = s ? malloc(n + 2) : NULL;
	if (copy) {
		vm_escape(copy, n + 1, s, len, VM_ESCAPE_JSON);
		copy[n++] = '\n';
	}
	json_object_put(body);
	if (!copy)
		return MHD_NO;
	return vm_http_reply_text(x, status, copy, n, "application/json");
}

enum MHD_Result vm_http_reply_error(struct vm_http_exchange *x, unsigned status,
				    const char *fmt, ...)
{
	struct json_object *o = json_object_new_object();
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(o, "error", json_object_new_string(msg));
	return vm_http_reply_json(x, status, o);
}

enum MHD_Result vm_http_reply_data(struct vm_http_exchange *x, unsigned status,
				   void *data, size_t len,
				   const char *content_type,
				   const char *filename)
{
	struct MHD_Response *resp;
	char disposition[128];

	resp = sym_MHD_create_response_from_buffer(len, data,
						   MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(data);
		return MHD_NO;
	}
	if (filename) {
		snprintf(disposition, sizeof(disposition),
			 "attachment; filename=\"%s\"", filename);
		sym_MHD_add_response_header(
			resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disposition);
	}
	return queue(x, status, resp, content_type);
}

enum MHD_Result vm_http_reply_file(struct vm_http_exchange *x, void *data,
				   size_t len, const char *content_type,
				   const char *cache_control,
				   const char *const *headers)
{
	struct MHD_Response *resp;

	resp = sym_MHD_create_response_from_buffer(len, data,
						   MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(data);
		return MHD_NO;
	}
	for (; headers && headers[0]; headers += 2)
		sym_MHD_add_response_header(resp, headers[0], headers[1]);
	return queue_as(x, 200, resp, content_type, cache_control);
}
