// SPDX-License-Identifier: Apache-2.0
/*
 * request.c - validating what a client asks the profiler for.
 *
 * The body of POST /profile/cpu is parsed with json-c's tokener (strict
 * mode, bounded depth) and must be RFC 8259 JSON (request_strict.c), then
 * every field is checked against the table in
 * docs/api.md.  The first wrong field is reported: its name, what
 * is allowed and what was sent, so a person can fix the request from the
 * message alone.  The profiler is an enum, never a path: a request that
 * names a binary is refused.
 */
#include "agent/serve/request.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "common/cleanup.h"

#define MAX_DEPTH 8
#define GOT_MAX 48 /* how much of a wrong value is quoted back */

static const char allowed_fields[] =
	"profiler, sampling_frequency, timeout_seconds, archive, targets, format";
/* POST /profile/offcpu takes one more. */
static const char allowed_offcpu_fields[] =
	"profiler, sampling_frequency, timeout_seconds, archive, targets, format, min_block_us";
/* And POST /profile/faults, its period. */
static const char allowed_faults_fields[] =
	"profiler, sampling_frequency, timeout_seconds, archive, targets, format, period";

static void json_tokener_freep(struct json_tokener **t)
{
	if (*t)
		json_tokener_free(*t);
}

static void json_object_putp(struct json_object **o)
{
	if (*o)
		json_object_put(*o);
}

uint32_t vm_request_max_seconds(const struct vm_request_limits *limits)
{
	return vm_rule_range(VM_RULE_SECONDS, limits ? limits->max_seconds : 0)
		.max;
}

int vm_request_too_large(size_t limit, struct vm_error *err)
{
	return vm_error_set(
		err, EFBIG,
		"the request body is larger than %zu bytes; a profile request is a small JSON object",
		limit);
}

/* A short quotation of a JSON value for an error message. */
static const char *got(struct json_object *v, char buf[GOT_MAX + 4])
{
	const char *s;
	size_t n;

	if (!v)
		return "null";
	s = json_object_to_json_string_ext(
		v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	n = strlen(s);
	if (n <= GOT_MAX)
		return s;
	memcpy(buf, s, GOT_MAX);
	memcpy(buf + GOT_MAX, "...", 4);
	return buf;
}

static void set_defaults(const struct vm_request_limits *limits,
			 struct vm_api_request *out)
{
	size_t n = 0;

	memset(out, 0, sizeof(*out));
	vm_request_defaults(&out->req);
	if (out->req.seconds > vm_request_max_seconds(limits))
		out->req.seconds = vm_request_max_seconds(limits);
	if (limits && limits->n_default_comms > 0) {
		for (; n < limits->n_default_comms && n < VM_MAX_TARGETS; n++)
			snprintf(out->comm_buf[n], VM_COMM_LEN, "%s",
				 limits->default_comms[n]);
	} else {
		snprintf(out->comm_buf[n++], VM_COMM_LEN, VM_DEFAULT_COMM);
	}
	for (size_t i = 0; i < n; i++)
		out->req.comms[i] = out->comm_buf[i];
	out->req.n_comms = n;
}

/* A whole number within rule, the field named as the API names it. */
static int parse_number(struct json_object *v, const char *field,
			enum vm_rule rule,
			const struct vm_request_limits *limits,
			const char *unit, uint32_t *out, struct vm_error *err)
{
	uint32_t max_seconds = limits ? limits->max_seconds : 0;
	struct vm_range r = vm_rule_range(rule, max_seconds);
	char buf[GOT_MAX + 4];
	int64_t x;

	if (json_object_is_type(v, json_type_int)) {
		/* Saturates beyond int64, which is out of every range. */
		x = json_object_get_int64(v);
		if (vm_rule_allows(rule, x, max_seconds)) {
			*out = (uint32_t)x;
			return 0;
		}
	}
	return vm_error_set(err, EINVAL,
			    "%s must be a whole number from %" PRId64
			    " to %" PRId64 "%s; got %s",
			    field, r.min, r.max, unit, got(v, buf));
}

static int parse_profiler(struct json_object *v, enum vm_profiler *out,
			  struct vm_error *err)
{
	static const char allowed[] =
		"profiler must be {\"BccProfile\": null} (the eBPF profiler) or {\"Perf\": null}";
	char buf[GOT_MAX + 4];
	const char *name = NULL;
	struct json_object *arg = NULL;

	if (json_object_is_type(v, json_type_string)) {
		/* The bare-string form of a unit variant, as serde accepts. */
		name = json_object_get_string(v);
	} else if (json_object_is_type(v, json_type_object) &&
		   json_object_object_length(v) == 1) {
		json_object_object_foreach(v, key, val)
		{
			name = key;
			arg = val;
		}
	}
	if (!name)
		return vm_error_set(err, EINVAL, "%s; got %s", allowed,
				    got(v, buf));
	if (!strcmp(name, "BccProfile"))
		*out = VM_PROFILER_BPF;
	else if (!strcmp(name, "Perf"))
		*out = VM_PROFILER_PERF;
	else
		return vm_error_set(err, EINVAL, "%s; got %s", allowed,
				    got(v, buf));
	if (arg)
		return vm_error_set(
			err, EINVAL,
			"profiler.%s must be null, not %s: the agent never runs a binary named by a request, it uses its own",
			name, got(arg, buf));
	return 0;
}

static int parse_comms(struct json_object *v, struct vm_api_request *out,
		       struct vm_error *err)
{
	char buf[GOT_MAX + 4];
	size_t n;

	if (!json_object_is_type(v, json_type_array))
		return vm_error_set(
			err, EINVAL,
			"targets.comm must be a list of command names like [\"postgres\"]; got %s",
			got(v, buf));
	n = json_object_array_length(v);
	if (n > VM_MAX_TARGETS)
		return vm_error_set(
			err, EINVAL,
			"targets.comm may name at most %d commands; got %zu",
			VM_MAX_TARGETS, n);
	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(v, i);
		const char *s = json_object_get_string(c);
		int len = json_object_get_string_len(c);

		if (!json_object_is_type(c, json_type_string) ||
		    strlen(s) != (size_t)len || !vm_comm_allowed(s))
			return vm_error_set(
				err, EINVAL,
				"targets.comm[%zu] must be " VM_COMM_RULE
				"; got %s",
				i, got(c, buf));
		memcpy(out->comm_buf[i], s, (size_t)len + 1);
		out->req.comms[i] = out->comm_buf[i];
	}
	out->req.n_comms = n;
	return 0;
}

static int parse_pids(struct json_object *v, struct vm_api_request *out,
		      struct vm_error *err)
{
	char buf[GOT_MAX + 4], field[32];
	uint32_t pid;
	size_t n;
	int r;

	if (!json_object_is_type(v, json_type_array))
		return vm_error_set(
			err, EINVAL,
			"targets.pids must be a list of process ids like [1234]; got %s",
			got(v, buf));
	n = json_object_array_length(v);
	if (n > VM_MAX_TARGETS)
		return vm_error_set(
			err, EINVAL,
			"targets.pids may name at most %d processes; got %zu",
			VM_MAX_TARGETS, n);
	for (size_t i = 0; i < n; i++) {
		snprintf(field, sizeof(field), "targets.pids[%zu]", i);
		r = parse_number(json_object_array_get_idx(v, i), field,
				 VM_RULE_PID, NULL, "", &pid, err);
		if (r < 0)
			return r;
		out->req.pids[i] = (pid_t)pid;
	}
	out->req.n_pids = n;
	return 0;
}

static int parse_targets(struct json_object *v, struct vm_api_request *out,
			 struct vm_error *err)
{
	char buf[GOT_MAX + 4];
	int r;

	if (!json_object_is_type(v, json_type_object))
		return vm_error_set(
			err, EINVAL,
			"targets must be an object like {\"comm\": [\"postgres\"], \"pids\": [1234]}; got %s",
			got(v, buf));
	/* Naming targets replaces the agent's default command names. */
	out->req.n_comms = 0;
	out->req.n_pids = 0;
	json_object_object_foreach(v, key, val)
	{
		if (!strcmp(key, "comm"))
			r = parse_comms(val, out, err);
		else if (!strcmp(key, "pids"))
			r = parse_pids(val, out, err);
		else
			r = vm_error_set(
				err, EINVAL,
				"unknown field \"targets.%s\"; allowed: comm, pids",
				key);
		if (r < 0)
			return r;
	}
	if (out->req.n_comms == 0 && out->req.n_pids == 0)
		return vm_error_set(
			err, EINVAL,
			"targets selects no process: give at least one command name in targets.comm or one id in targets.pids");
	return 0;
}

static int parse_format(struct json_object *v, enum vm_format *out,
			struct vm_error *err)
{
	char buf[GOT_MAX + 4];

	if (!json_object_is_type(v, json_type_string) ||
	    vm_format_from_name(json_object_get_string(v), out) < 0)
		return vm_error_set(err, EINVAL,
				    "format must be " VM_FORMAT_NAMES
				    "; got %s",
				    got(v, buf));
	return 0;
}

static int parse_field(const char *key, struct json_object *val,
		       const struct vm_request_limits *limits,
		       struct vm_api_request *out, struct vm_error *err)
{
	char buf[GOT_MAX + 4];

	/* A value is never compared shorter than it was sent. */
	if (json_object_is_type(val, json_type_string) &&
	    strlen(json_object_get_string(val)) !=
		    (size_t)json_object_get_string_len(val))
		return vm_error_set(
			err, EINVAL,
			"%s must not hold the character \\u0000 (NUL); got %s",
			key, got(val, buf));
	if (!strcmp(key, "profiler"))
		return parse_profiler(val, &out->req.profiler, err);
	if (!strcmp(key, "sampling_frequency"))
		return parse_number(val, "sampling_frequency",
				    VM_RULE_FREQUENCY, limits, " (Hz)",
				    &out->req.frequency, err);
	if (!strcmp(key, "timeout_seconds"))
		return parse_number(val, "timeout_seconds", VM_RULE_SECONDS,
				    limits, "", &out->req.seconds, err);
	if (!strcmp(key, "archive")) {
		if (!json_object_is_type(val, json_type_boolean))
			return vm_error_set(
				err, EINVAL,
				"archive must be true or false; got %s",
				got(val, buf));
		out->req.gzip = json_object_get_boolean(val);
		return 0;
	}
	if (!strcmp(key, "targets"))
		return parse_targets(val, out, err);
	if (!strcmp(key, "format"))
		return parse_format(val, &out->req.format, err);
	if (!strcmp(key, "min_block_us") && out->req.kind == VM_KIND_OFFCPU)
		return parse_number(val, "min_block_us", VM_RULE_MIN_BLOCK_US,
				    limits, " (microseconds)",
				    &out->req.min_block_us, err);
	if (!strcmp(key, "period") && out->req.kind == VM_KIND_FAULTS)
		return parse_number(val, "period", VM_RULE_PERIOD, limits,
				    " (page faults per sample)",
				    &out->req.period, err);
	return vm_error_set(
		err, EINVAL, "unknown field \"%s\"; allowed: %s", key,
		out->req.kind == VM_KIND_OFFCPU ? allowed_offcpu_fields :
		out->req.kind == VM_KIND_FAULTS ? allowed_faults_fields :
						  allowed_fields);
}

static bool blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!strchr(" \t\r\n", s[i]) || s[i] == '\0')
			return false;
	return true;
}

/* Off-CPU and wall-clock profiles: the eBPF profiler only. */
static int check_kind(const struct vm_api_request *out, struct vm_error *err)
{
	struct vm_rule_break b;

	if (vm_request_check(&out->req, VM_SECONDS_CEILING, &b) < 0 &&
	    b.rule == VM_RULE_KIND_PROFILER)
		return vm_error_set(
			err, EINVAL,
			"profiler {\"Perf\": null} cannot take this profile: %s %s; use {\"BccProfile\": null}",
			vm_kind_name(out->req.kind),
			vm_kind_profiler_rule(out->req.kind));
	return 0;
}

int vm_request_parse_json(const char *body, size_t len,
			  enum vm_profile_kind kind,
			  const struct vm_request_limits *limits,
			  struct vm_api_request *out, struct vm_error *err)
{
	_cleanup_(json_tokener_freep) struct json_tokener *tok = NULL;
	_cleanup_(json_object_putp) struct json_object *root = NULL;
	enum json_tokener_error jerr;
	size_t end;
	int r;

	set_defaults(limits, out);
	out->req.kind = kind;
	/* Every block counts in a wall-clock profile: the time adds up. */
	if (kind == VM_KIND_WALL)
		out->req.min_block_us = 0;
	/* Also keeps len within the int json-c takes. */
	if (len > VM_REQUEST_MAX_BODY)
		return vm_request_too_large(VM_REQUEST_MAX_BODY, err);
	if (len == 0 || blank(body, len))
		return 0;
	r = vm_request_refuse_bom(body, len, err);
	if (r < 0)
		return r;
	tok = json_tokener_new_ex(MAX_DEPTH);
	if (!tok)
		return vm_error_set(err, ENOMEM, "out of memory parsing JSON");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
					    JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, body, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	if (jerr == json_tokener_continue) {
		/* A bare scalar ends only at the end of the input: say so. */
		root = json_tokener_parse_ex(tok, "", 1);
		if (json_tokener_get_error(tok) != json_tokener_success)
			return vm_error_set(
				err, EBADMSG,
				"the body is not valid JSON: it ends at byte %zu before the value is complete",
				len);
		end = len;
	} else if (jerr != json_tokener_success) {
		return vm_error_set(
			err, EBADMSG,
			"the body is not valid JSON: %s at byte %zu (of %zu)",
			json_tokener_error_desc(jerr), end, len);
	}
	if (end < len && !blank(body + end, len - end))
		return vm_error_set(
			err, EBADMSG,
			"the body is not valid JSON: unexpected data after the object at byte %zu (of %zu)",
			end, len);
	r = vm_request_check_strict(body, len, err);
	if (r < 0)
		return r;
	/* root is NULL for a JSON null. */
	if (!root || !json_object_is_type(root, json_type_object))
		return vm_error_set(
			err, EINVAL,
			"the body must be a JSON object like {\"profiler\": {\"BccProfile\": null}, \"sampling_frequency\": 99, \"timeout_seconds\": 5}");
	json_object_object_foreach(root, key, val)
	{
		r = parse_field(key, val, limits, out, err);
		if (r < 0)
			return r;
	}
	return check_kind(out, err);
}

int vm_request_pprof_format(const char *format, struct vm_api_request *out,
			    struct vm_error *err)
{
	enum vm_format f;

	if (!format)
		return 0;
	if (vm_format_from_name(format, &f) < 0)
		return vm_error_set(err, EINVAL,
				    "format must be " VM_FORMAT_NAMES
				    "; got \"%.*s\"",
				    GOT_MAX, format);
	out->req.format = f;
	out->req.gzip = f == VM_FORMAT_PPROF;
	return 0;
}

int vm_request_from_pprof_query(const char *seconds,
				const struct vm_request_limits *limits,
				struct vm_api_request *out,
				struct vm_error *err)
{
	uint32_t max = vm_request_max_seconds(limits);
	uint64_t x = 0;
	size_t i;

	set_defaults(limits, out);
	out->req.gzip = true;
	out->req.seconds = VM_REQUEST_PPROF_DEFAULT_SECONDS;
	if (out->req.seconds > max)
		out->req.seconds = max;
	if (!seconds)
		return 0;
	for (i = 0; seconds[i] >= '0' && seconds[i] <= '9' && x <= max; i++)
		x = x * 10 + (uint64_t)(seconds[i] - '0');
	if (i == 0 || seconds[i] != '\0' ||
	    !vm_rule_allows(VM_RULE_SECONDS, (int64_t)x, max))
		return vm_error_set(
			err, EINVAL,
			"seconds must be a whole number from %d to %" PRIu32
			"; got \"%.*s\"",
			VM_SECONDS_MIN, max, GOT_MAX, seconds);
	out->req.seconds = (uint32_t)x;
	return 0;
}
