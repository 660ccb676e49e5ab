// SPDX-License-Identifier: Apache-2.0
/*
 * test_request.c - unit tests of agent/serve/request.c: the JSON body of
 * POST /profile/cpu and the query of /debug/pprof/profile, every row of
 * docs/api.md's field table, the 400/413/422 messages a person reads, and
 * RFC 8259 strictness (single quotes, control characters, leading zeros,
 * a byte order mark, \u0000 in names and values, a field given twice).
 *
 * The strictness beyond json-c 0.16 is request_strict.c's.  Also the bodies
 * of /profile/offcpu (min_block_us), /profile/wall (no min_block_us) and
 * /profile/faults (period), and {"Perf": null} refused for each with a
 * sentence.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/serve/request.h"

static int parse(const char *body, struct vm_api_request *r,
		 struct vm_error *err)
{
	static const char *const comms[] = { "postgres", "pgbouncer" };
	struct vm_request_limits limits = { .max_seconds = 0,
					    .default_comms = comms,
					    .n_default_comms = 2 };

	vm_error_clear(err);
	return vm_request_parse_json(body, strlen(body), VM_KIND_CPU, &limits,
				     r, err);
}

/* The request must be refused with 422 and a message containing needle. */
static void assert_422(const char *body, const char *needle)
{
	struct vm_api_request r;
	struct vm_error err = { 0 };

	if (parse(body, &r, &err) != -EINVAL || !strstr(err.msg, needle))
		fail_msg("body %s: expected 422 naming '%s', got: %s", body,
			 needle, err.msg);
}

static void assert_400(const char *body, const char *needle)
{
	struct vm_api_request r;
	struct vm_error err = { 0 };

	if (parse(body, &r, &err) != -EBADMSG || !strstr(err.msg, needle))
		fail_msg("body %s: expected 400 saying '%s', got: %s", body,
			 needle, err.msg);
}

static void test_contract_example(void **state)
{
	struct vm_api_request r;
	struct vm_error err = { 0 };

	assert_int_equal(
		parse("{\"profiler\": {\"BccProfile\": null}, \"sampling_frequency\": 99,"
		      " \"timeout_seconds\": 5, \"archive\": false}",
		      &r, &err),
		0);
	assert_int_equal(r.req.profiler, VM_PROFILER_BPF);
	assert_int_equal(r.req.frequency, 99);
	assert_int_equal(r.req.seconds, 5);
	assert_false(r.req.gzip);
	assert_int_equal(r.req.format, VM_FORMAT_PPROF);
	assert_int_equal(r.req.n_comms, 2);
	assert_string_equal(r.req.comms[1], "pgbouncer");
	assert_int_equal(r.req.n_pids, 0);
}

static void test_defaults(void **state)
{
	struct vm_api_request r;
	struct vm_error err = { 0 };

	assert_int_equal(parse("", &r, &err), 0);
	assert_int_equal(r.req.frequency, 99);
	assert_int_equal(r.req.seconds, 5);
	assert_int_equal(parse(" \n{}\n", &r, &err), 0);
	assert_int_equal(r.req.profiler, VM_PROFILER_BPF);
	assert_string_equal(r.req.comms[0], "postgres");
	/* No agent --comm at all: postgres. */
	assert_int_equal(
		vm_request_parse_json("{}", 2, VM_KIND_CPU, NULL, &r, &err), 0);
	assert_int_equal(r.req.n_comms, 1);
	assert_string_equal(r.req.comms[0], "postgres");
}

static void test_all_fields(void **state)
{
	struct vm_api_request r, copy;
	struct vm_error err = { 0 };

	assert_int_equal(
		parse("{\"profiler\": {\"Perf\": null}, \"sampling_frequency\": 1000,"
		      " \"timeout_seconds\": 60, \"archive\": true,"
		      " \"targets\": {\"comm\": [\"burn\", \"postmaster\"], \"pids\": [1, 4194304]},"
		      " \"format\": \"folded\"}",
		      &r, &err),
		0);
	assert_int_equal(r.req.profiler, VM_PROFILER_PERF);
	assert_int_equal(r.req.frequency, 1000);
	assert_int_equal(r.req.seconds, 60);
	assert_true(r.req.gzip);
	assert_int_equal(r.req.format, VM_FORMAT_FOLDED);
	assert_int_equal(r.req.n_comms, 2);
	assert_int_equal(r.req.n_pids, 2);
	assert_int_equal(r.req.pids[1], 4194304);
	/* The names live inside the struct. */
	copy = r;
	assert_string_equal(copy.req.comms[0], "burn");
	assert_ptr_equal(r.req.comms[0], r.comm_buf[0]);
	/* Only pids: the default command names no longer apply. */
	assert_int_equal(parse("{\"targets\": {\"pids\": [42]}}", &r, &err), 0);
	assert_int_equal(r.req.n_comms, 0);
	assert_int_equal(r.req.n_pids, 1);
	/* serde's bare-string form of a unit variant. */
	assert_int_equal(parse("{\"profiler\": \"Perf\"}", &r, &err), 0);
	assert_int_equal(r.req.profiler, VM_PROFILER_PERF);
}

static void test_out_of_range(void **state)
{
	assert_422("{\"sampling_frequency\": -1}", "sampling_frequency");
	assert_422("{\"sampling_frequency\": 0}", "from 1 to 1000");
	assert_422("{\"sampling_frequency\": 1001}", "got 1001");
	assert_422("{\"sampling_frequency\": 1000000}", "sampling_frequency");
	assert_422("{\"timeout_seconds\": -1}", "timeout_seconds");
	assert_422("{\"timeout_seconds\": 0}", "from 1 to 60");
	assert_422("{\"timeout_seconds\": 61}", "timeout_seconds");
	assert_422("{\"timeout_seconds\": 1000000}", "got 1000000");
	assert_422("{\"timeout_seconds\": 99999999999999999999999}",
		   "timeout_seconds");
	assert_422("{\"timeout_seconds\": -99999999999999999999999}",
		   "timeout_seconds");
	assert_422("{\"targets\": {\"pids\": [0]}}", "targets.pids[0]");
	assert_422("{\"targets\": {\"pids\": [1, 4194305]}}",
		   "targets.pids[1]");
}

static void test_wrong_types(void **state)
{
	assert_422("{\"sampling_frequency\": \"99\"}", "got \"99\"");
	assert_422("{\"sampling_frequency\": 99.5}", "whole number");
	assert_422("{\"timeout_seconds\": 5.0}", "timeout_seconds");
	assert_422("{\"timeout_seconds\": 1e3}", "timeout_seconds");
	assert_422("{\"timeout_seconds\": true}", "timeout_seconds");
	assert_422("{\"timeout_seconds\": null}", "got null");
	assert_422("{\"archive\": \"yes\"}", "archive must be true or false");
	assert_422("{\"archive\": 1}", "archive");
	assert_422("{\"format\": \"png\"}",
		   "format must be pprof, folded or svg; got \"png\"");
	assert_422("{\"format\": 1}", "format");
	assert_422("[1, 2]", "must be a JSON object");
	assert_422("\"hello\"", "must be a JSON object");
	assert_422("null", "must be a JSON object");
	assert_422("{\"targets\": []}", "targets must be an object");
	assert_422("{\"targets\": {\"comm\": \"postgres\"}}", "targets.comm");
	assert_422("{\"targets\": {\"comm\": [\"\"]}}", "targets.comm[0]");
	assert_422("{\"targets\": {\"comm\": [\"postgres\", 5]}}",
		   "targets.comm[1]");
	assert_422("{\"targets\": {\"comm\": [\"a-name-longer-than-15\"]}}",
		   "1 to 15 characters");
	assert_422("{\"targets\": {\"comm\": [\"a\\u0000b\"]}}",
		   "targets.comm[0]");
	assert_422("{\"targets\": {\"pids\": [\"1\"]}}", "targets.pids[0]");
	assert_422("{\"targets\": {\"comm\": [], \"pids\": []}}",
		   "selects no process");
	assert_422("{\"targets\": {\"uid\": [0]}}", "targets.uid");
}

static void test_profiler(void **state)
{
	assert_422("{\"profiler\": {\"Foo\": null}}", "{\"Foo\":null}");
	assert_422("{\"profiler\": \"Foo\"}", "BccProfile");
	assert_422("{\"profiler\": null}", "profiler must be");
	assert_422("{\"profiler\": {}}", "profiler must be");
	assert_422("{\"profiler\": {\"BccProfile\": null, \"Perf\": null}}",
		   "profiler must be");
	assert_422("{\"profiler\": 3}", "profiler");
	/* A path to run is refused: the agent never runs a named binary. */
	assert_422("{\"profiler\": {\"Perf\": \"/tmp/evil\"}}",
		   "never runs a binary");
	assert_422("{\"profiler\": {\"BccProfile\": {\"path\": \"/bin/sh\"}}}",
		   "profiler.BccProfile must be null");
	assert_422("{\"binary\": \"/bin/sh\"}", "unknown field \"binary\"");
	assert_422("{\"timeout\": 5}", "allowed: profiler, sampling_frequency");
}

static void test_not_json(void **state)
{
	assert_400("{", "ends at byte 1");
	assert_400("{\"timeout_seconds\": 5", "before the value is complete");
	assert_400("{\"timeout_seconds\": }", "at byte 20");
	assert_400("hello", "at byte");
	assert_400("{} x", "at byte 3");
	assert_400("{}}", "at byte 2");
	assert_400("5 5", "at byte 2");
	assert_400("{\"a\": 1,}", "not valid JSON");
	assert_400(
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
		"not valid JSON");
}

/*
 * RFC 8259 and nothing looser: what json-c 0.16's strict tokener lets
 * through is refused with a sentence saying what is wrong.
 */
static void test_strict_json(void **state)
{
	assert_400("{'timeout_seconds': 1}", "a single quote at byte 1");
	assert_400("{\"timeout_seconds\": '1'}", "at byte 20");
	assert_400("{\"format\": \"pp\nrof\"}", "not valid JSON");
	assert_400("{\"format\": \"pp\x01rof\"}", "not valid JSON");
	assert_400("{\"timeout_seconds\": 05}", "not valid JSON");
	assert_400("{\"timeout_seconds\": -}", "not valid JSON");
	assert_400("\xef\xbb\xbf{}", "byte order mark");
	/* A name cut at \u0000 is not the field it starts like. */
	assert_422("{\"timeout_seconds\\u0000x\": 1}", "holds \\u0000");
	assert_422("{\"targets\": {\"pids\\u0000\": [1]}}", "holds \\u0000");
	/* Nor is a value cut there the value it starts like. */
	assert_422("{\"format\": \"folded\\u0000x\"}", "format must not hold");
	assert_422("{\"profiler\": \"Perf\\u0000\"}", "profiler must not hold");
	assert_422("{\"timeout_seconds\": 1, \"timeout_seconds\": 60}",
		   "a field is given twice");
	assert_422("{\"targets\": {\"comm\": [\"a\"], \"comm\": [\"b\"]}}",
		   "given twice");
}

static void test_embedded_nul(void **state)
{
	static const char body[] = "{\"archive\": true}\0garbage";
	struct vm_api_request r;
	struct vm_error err = { 0 };

	assert_int_equal(vm_request_parse_json(body, sizeof(body) - 1,
					       VM_KIND_CPU, NULL, &r, &err),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, "byte"));
}

static void test_max_seconds(void **state)
{
	struct vm_request_limits limits = { .max_seconds = 600 };
	struct vm_api_request r;
	struct vm_error err = { 0 };
	const char *body = "{\"timeout_seconds\": 300}";

	assert_int_equal(vm_request_parse_json(body, strlen(body), VM_KIND_CPU,
					       &limits, &r, &err),
			 0);
	assert_int_equal(r.req.seconds, 300);
	limits.max_seconds = 3;
	assert_int_equal(vm_request_parse_json(body, strlen(body), VM_KIND_CPU,
					       &limits, &r, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "from 1 to 3;"));
	/* The default itself is capped. */
	assert_int_equal(vm_request_parse_json("", 0, VM_KIND_CPU, &limits, &r,
					       &err),
			 0);
	assert_int_equal(r.req.seconds, 3);
}

/* ?format= of /debug/pprof/profile: svg and folded as themselves. */
static void test_pprof_format(void **state)
{
	struct vm_request_limits limits = { 0 };
	struct vm_api_request r;
	struct vm_error err = { 0 };

	assert_int_equal(vm_request_from_pprof_query(NULL, &limits, &r, &err),
			 0);
	assert_int_equal(vm_request_pprof_format(NULL, &r, &err), 0);
	assert_int_equal(r.req.format, VM_FORMAT_PPROF);
	assert_true(r.req.gzip);
	assert_int_equal(vm_request_pprof_format("svg", &r, &err), 0);
	assert_int_equal(r.req.format, VM_FORMAT_SVG);
	assert_false(r.req.gzip);
	assert_int_equal(vm_request_pprof_format("folded", &r, &err), 0);
	assert_int_equal(r.req.format, VM_FORMAT_FOLDED);
	assert_int_equal(vm_request_pprof_format("pprof", &r, &err), 0);
	assert_true(r.req.gzip);
	assert_int_equal(vm_request_pprof_format("png", &r, &err), -EINVAL);
	assert_non_null(strstr(
		err.msg, "format must be pprof, folded or svg; got \"png\""));
}

static void test_pprof_query(void **state)
{
	struct vm_request_limits limits = { 0 };
	struct vm_api_request r;
	struct vm_error err = { 0 };

	assert_int_equal(vm_request_from_pprof_query(NULL, &limits, &r, &err),
			 0);
	assert_int_equal(r.req.seconds, 30);
	assert_true(r.req.gzip);
	assert_int_equal(r.req.format, VM_FORMAT_PPROF);
	assert_int_equal(r.req.profiler, VM_PROFILER_BPF);
	assert_int_equal(vm_request_from_pprof_query("2", &limits, &r, &err),
			 0);
	assert_int_equal(r.req.seconds, 2);
	assert_int_equal(vm_request_from_pprof_query("60", &limits, &r, &err),
			 0);
	static const char *const bad[] = {
		"", "0", "61", "-1", "2s", "1.5", "99999999999999999999", " 2"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		vm_error_clear(&err);
		assert_int_equal(vm_request_from_pprof_query(bad[i], &limits,
							     &r, &err),
				 -EINVAL);
		assert_non_null(strstr(err.msg, "seconds must be"));
	}
	limits.max_seconds = 10;
	assert_int_equal(vm_request_from_pprof_query(NULL, &limits, &r, &err),
			 0);
	assert_int_equal(r.req.seconds, 10);
}

static void test_too_large(void **state)
{
	size_t n = VM_REQUEST_MAX_BODY + 1;
	char *body = malloc(n);
	struct vm_api_request r;
	struct vm_error err = { 0 }, said = { 0 };

	assert_non_null(body);
	/* {"archive": true} padded with blanks to the limit: still parsed. */
	memset(body, ' ', n);
	memcpy(body, "{\"archive\": true}", 17);
	assert_int_equal(vm_request_parse_json(body, n - 1, VM_KIND_CPU, NULL,
					       &r, &err),
			 0);
	assert_true(r.req.gzip);
	/* One byte more is 413, said as the HTTP server says it. */
	assert_int_equal(vm_request_parse_json(body, n, VM_KIND_CPU, NULL, &r,
					       &err),
			 -EFBIG);
	assert_int_equal(vm_request_too_large(VM_REQUEST_MAX_BODY, &said),
			 -EFBIG);
	assert_string_equal(err.msg, said.msg);
	assert_non_null(strstr(err.msg, "larger than 8192 bytes"));
	/* Blanks alone are no exception. */
	memset(body, ' ', n);
	vm_error_clear(&err);
	assert_int_equal(vm_request_parse_json(body, n, VM_KIND_CPU, NULL, &r,
					       &err),
			 -EFBIG);
	free(body);
	/* The server's own limit, when it is another, is named. */
	vm_error_clear(&said);
	vm_request_too_large(100, &said);
	assert_non_null(strstr(said.msg, "larger than 100 bytes"));
}

static void test_comm_rule(void **state)
{
	/* The engine's rule for a command name, said in the API's words. */
	assert_422(
		"{\"targets\": {\"comm\": [\"postgres\", \"a/b\"]}}",
		"targets.comm[1] must be a command name of 1 to 15 characters without '/'");
	assert_422("{\"targets\": {\"comm\": [\"sixteen-chars-xx\"]}}",
		   "targets.comm[0]");
	assert_422("{\"targets\": {\"pids\": [-4]}}",
		   "targets.pids[0] must be a whole number from 1 to 4194304");
	assert_422(
		"{\"sampling_frequency\": 1001}",
		"sampling_frequency must be a whole number from 1 to 1000 (Hz); got 1001");
}

/* The kinds of /profile/offcpu and /profile/wall: the same body and more. */
static void test_kinds(void **state)
{
	struct vm_api_request r;
	struct vm_error err = { 0 };
	const char *b;

	(void)state;
	vm_error_clear(&err);
	b = "{\"min_block_us\": 250, \"timeout_seconds\": 3}";
	assert_int_equal(vm_request_parse_json(b, strlen(b), VM_KIND_OFFCPU,
					       NULL, &r, &err),
			 0);
	assert_int_equal(r.req.kind, VM_KIND_OFFCPU);
	assert_int_equal(r.req.min_block_us, 250);
	assert_int_equal(r.req.seconds, 3);
	assert_int_equal(vm_request_parse_json("", 0, VM_KIND_OFFCPU, NULL, &r,
					       &err),
			 0);
	assert_int_equal(r.req.min_block_us, VM_MIN_BLOCK_US_DEFAULT);
	/* Every block counts in a wall profile, and it takes no threshold. */
	assert_int_equal(vm_request_parse_json("{}", 2, VM_KIND_WALL, NULL, &r,
					       &err),
			 0);
	assert_int_equal(r.req.kind, VM_KIND_WALL);
	assert_int_equal(r.req.min_block_us, 0);
	vm_error_clear(&err);
	b = "{\"min_block_us\": 1}";
	assert_int_equal(vm_request_parse_json(b, strlen(b), VM_KIND_WALL, NULL,
					       &r, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "unknown field \"min_block_us\""));
	/* ... nor does /profile/cpu. */
	assert_422("{\"min_block_us\": 1}", "unknown field");
	vm_error_clear(&err);
	b = "{\"min_block_us\": 1000001}";
	assert_int_equal(vm_request_parse_json(b, strlen(b), VM_KIND_OFFCPU,
					       NULL, &r, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "min_block_us must be a whole number "
					"from 0 to 1000000"));
	vm_error_clear(&err);
	b = "{\"profiler\": {\"Perf\": null}}";
	assert_int_equal(vm_request_parse_json(b, strlen(b), VM_KIND_OFFCPU,
					       NULL, &r, &err),
			 -EINVAL);
	assert_non_null(
		strstr(err.msg,
		       "offcpu profiles are taken by the eBPF profiler only"));
	assert_int_equal(vm_request_parse_json(b, strlen(b), VM_KIND_CPU, NULL,
					       &r, &err),
			 0);
}

#define PERIOD_RULE "period must be a whole number from 1 to 1000000"

/* /profile/faults: its period, in range, and only there. */
static void test_faults_period(void **state)
{
	struct vm_api_request r;
	struct vm_error err = { 0 };
	const char *b;

	(void)state;
	assert_int_equal(vm_request_parse_json("", 0, VM_KIND_FAULTS, NULL, &r,
					       &err),
			 0);
	assert_int_equal(r.req.kind, VM_KIND_FAULTS);
	assert_int_equal(r.req.period, VM_PERIOD_DEFAULT);
	b = "{\"period\": 1000, \"timeout_seconds\": 3}";
	assert_int_equal(vm_request_parse_json(b, strlen(b), VM_KIND_FAULTS,
					       NULL, &r, &err),
			 0);
	assert_int_equal(r.req.period, 1000);
	/* Refused: out of range, not a whole number, anywhere else, perf. */
	static const struct {
		enum vm_profile_kind kind;
		const char *body, *says;
	} bad[] = {
		{ VM_KIND_FAULTS, "{\"period\": 0}", PERIOD_RULE },
		{ VM_KIND_FAULTS, "{\"period\": 1000001}", PERIOD_RULE },
		{ VM_KIND_FAULTS, "{\"period\": -1}", PERIOD_RULE },
		{ VM_KIND_FAULTS, "{\"period\": \"64\"}", PERIOD_RULE },
		{ VM_KIND_FAULTS, "{\"period\": 6.4}", PERIOD_RULE },
		{ VM_KIND_CPU, "{\"period\": 64}", "unknown field \"period\"" },
		{ VM_KIND_OFFCPU, "{\"period\": 64}",
		  "unknown field \"period\"" },
		{ VM_KIND_FAULTS, "{\"profiler\": {\"Perf\": null}}",
		  "faults profiles are taken by the eBPF profiler only" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		vm_error_clear(&err);
		assert_int_equal(
			vm_request_parse_json(bad[i].body, strlen(bad[i].body),
					      bad[i].kind, NULL, &r, &err),
			-EINVAL);
		assert_non_null(strstr(err.msg, bad[i].says));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_contract_example),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_all_fields),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_profiler),
		cmocka_unit_test(test_not_json),
		cmocka_unit_test(test_strict_json),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_max_seconds),
		cmocka_unit_test(test_pprof_query),
		cmocka_unit_test(test_pprof_format),
		cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_comm_rule),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_faults_period),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
