// SPDX-License-Identifier: Apache-2.0
/*
 * test_limits.c - unit tests of agent/profile/limits.c: the rules of a
 * profile request every front end shares (docs/api.md's table: frequency
 * 1-1000 default 99, seconds 1-60 default 5 unless --max-seconds, the
 * default target postgres), which rule a request breaks first, and that
 * the REST parser and the engine answer by the same rules.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/profile/engine.h"
#include "agent/profile/limits.h"
#include "agent/serve/request.h"

static void test_contract_values(void **state)
{
	struct vm_profile_request req;
	struct vm_range r;

	(void)state;
	r = vm_rule_range(VM_RULE_FREQUENCY, 0);
	assert_int_equal(r.min, 1);
	assert_int_equal(r.max, 1000);
	r = vm_rule_range(VM_RULE_SECONDS, 0);
	assert_int_equal(r.min, 1);
	assert_int_equal(r.max, 60);
	assert_string_equal(VM_DEFAULT_COMM, "postgres");
	vm_request_defaults(&req);
	assert_int_equal(req.frequency, 99);
	assert_int_equal(req.seconds, 5);
	assert_int_equal(req.profiler, VM_PROFILER_BPF);
	assert_int_equal(req.format, VM_FORMAT_PPROF);
	assert_false(req.gzip);
	assert_int_equal(req.n_comms, 0);
	assert_int_equal(req.n_pids, 0);
}

static void test_seconds_limit(void **state)
{
	(void)state;
	/* --max-seconds raises the limit, up to the ceiling, never past it. */
	assert_int_equal(vm_rule_range(VM_RULE_SECONDS, 600).max, 600);
	assert_int_equal(vm_rule_range(VM_RULE_SECONDS, 2).max, 2);
	assert_int_equal(vm_rule_range(VM_RULE_SECONDS, VM_SECONDS_CEILING).max,
			 VM_SECONDS_CEILING);
	assert_int_equal(vm_rule_range(VM_RULE_SECONDS, UINT32_MAX).max,
			 VM_SECONDS_CEILING);
	assert_true(vm_rule_allows(VM_RULE_SECONDS, 60, 0));
	assert_false(vm_rule_allows(VM_RULE_SECONDS, 61, 0));
	assert_true(vm_rule_allows(VM_RULE_SECONDS, 61, 120));
	assert_false(vm_rule_allows(VM_RULE_SECONDS, 0, 120));
	assert_false(vm_rule_allows(VM_RULE_SECONDS, -1, 0));
	assert_false(vm_rule_allows(VM_RULE_FREQUENCY, INT64_MAX, 0));
	assert_false(vm_rule_allows(VM_RULE_FREQUENCY, INT64_MIN, 0));
	assert_true(vm_rule_allows(VM_RULE_PID, VM_PID_MAX, 0));
	assert_false(vm_rule_allows(VM_RULE_PID, VM_PID_MAX + 1, 0));
	assert_false(vm_rule_allows(VM_RULE_PID, 0, 0));
}

static void test_comm(void **state)
{
	static const struct {
		const char *name;
		bool allowed;
	} names[] = {
		{ "postgres", true },
		{ "a", true },
		{ "fifteen-chars-x", true },
		{ "sixteen-chars-xx", false },
		{ "", false },
		{ NULL, false },
		{ "a/b", false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (vm_comm_allowed(names[i].name) != names[i].allowed)
			fail_msg("command name '%s': expected %s",
				 names[i].name ? names[i].name : "(null)",
				 names[i].allowed ? "allowed" : "refused");
	assert_non_null(strstr(VM_COMM_RULE, "1 to 15 characters"));
}

static struct vm_profile_request valid(void)
{
	struct vm_profile_request req;

	vm_request_defaults(&req);
	req.comms[0] = "postgres";
	req.n_comms = 1;
	req.pids[0] = 1;
	req.n_pids = 1;
	return req;
}

static void expect_break(const struct vm_profile_request *req,
			 uint32_t max_seconds, enum vm_rule rule, size_t index,
			 int64_t value)
{
	struct vm_rule_break b;

	assert_int_equal(vm_request_check(req, max_seconds, &b), -EINVAL);
	assert_int_equal(b.rule, rule);
	assert_int_equal(b.index, index);
	assert_int_equal(b.value, value);
}

static void test_check(void **state)
{
	struct vm_profile_request req = valid();
	struct vm_rule_break b;

	(void)state;
	assert_int_equal(vm_request_check(&req, 0, &b), 0);
	assert_int_equal(b.rule, VM_RULE_NONE);
	/* No target named is valid: the engine then profiles postgres. */
	req.n_comms = req.n_pids = 0;
	assert_int_equal(vm_request_check(&req, 0, &b), 0);

	req = valid();
	req.frequency = 1001;
	expect_break(&req, 0, VM_RULE_FREQUENCY, 0, 1001);
	req.frequency = 0;
	expect_break(&req, 0, VM_RULE_FREQUENCY, 0, 0);
	req = valid();
	req.seconds = 61;
	expect_break(&req, 0, VM_RULE_SECONDS, 0, 61);
	assert_int_equal(vm_request_check(&req, 61, &b), 0);
	req.seconds = VM_SECONDS_CEILING + 1;
	expect_break(&req, UINT32_MAX, VM_RULE_SECONDS, 0,
		     VM_SECONDS_CEILING + 1);
	req = valid();
	req.comms[1] = "a/b";
	req.n_comms = 2;
	expect_break(&req, 0, VM_RULE_COMM, 1, 3);
	req.comms[1] = NULL;
	expect_break(&req, 0, VM_RULE_COMM, 1, 0);
	req = valid();
	req.n_comms = VM_MAX_TARGETS + 1;
	expect_break(&req, 0, VM_RULE_N_COMMS, 0, VM_MAX_TARGETS + 1);
	req = valid();
	req.n_pids = VM_MAX_TARGETS + 1;
	expect_break(&req, 0, VM_RULE_N_PIDS, 0, VM_MAX_TARGETS + 1);
	req = valid();
	req.pids[1] = -4;
	req.n_pids = 2;
	expect_break(&req, 0, VM_RULE_PID, 1, -4);
	req = valid();
	req.format = (enum vm_format)7;
	expect_break(&req, 0, VM_RULE_FORMAT, 0, 7);
	/* The first rule broken, in the order of enum vm_rule. */
	req = valid();
	req.seconds = 0;
	req.frequency = 0;
	expect_break(&req, 0, VM_RULE_FREQUENCY, 0, 0);
}

/* Whatever the REST parser accepts, the engine's check accepts too. */
/*
 * Every kind has a name the API parses back, and a title for the web UI;
 * memory alone is a snapshot.
 */
static void test_kinds(void **state)
{
	(void)state;
	for (int k = 0; k < VM_KINDS; k++) {
		enum vm_profile_kind back;

		assert_non_null(vm_kind_name(k));
		assert_int_equal(vm_kind_parse(vm_kind_name(k), &back), 0);
		assert_int_equal(back, k);
		assert_non_null(vm_kind_title(k));
		assert_true(vm_kind_is_snapshot(k) == (k == VM_KIND_MEMORY));
	}
	assert_null(vm_kind_name(VM_KINDS));
	assert_false(vm_kind_is_snapshot(VM_KINDS));
	assert_string_equal(vm_kind_title(VM_KIND_MEMORY),
			    "Memory (where it is now: a snapshot)");
}

static void test_rest_within_rules(void **state)
{
	static const char *const bodies[] = {
		"",
		"{\"sampling_frequency\": 1, \"timeout_seconds\": 60}",
		"{\"sampling_frequency\": 1000, \"timeout_seconds\": 1}",
		"{\"targets\": {\"comm\": [\"fifteen-chars-x\"], \"pids\": [4194304]}}",
		"{\"format\": \"folded\", \"archive\": true}",
	};
	static const char slash[] = "{\"targets\": {\"comm\": [\"a/b\"]}}";
	struct vm_api_request r;
	struct vm_rule_break b;
	struct vm_error err = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		assert_int_equal(
			vm_request_parse_json(bodies[i], strlen(bodies[i]),
					      VM_KIND_CPU, NULL, &r, &err),
			0);
		assert_int_equal(vm_request_check(&r.req, 0, &b), 0);
	}
	/* A name the rule refuses, the parser refuses in the API's words. */
	assert_int_equal(vm_request_parse_json(slash, strlen(slash),
					       VM_KIND_CPU, NULL, &r, &err),
			 -EINVAL);
	assert_non_null(
		strstr(err.msg, "targets.comm[0] must be " VM_COMM_RULE));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_contract_values),
		cmocka_unit_test(test_seconds_limit),
		cmocka_unit_test(test_comm),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_rest_within_rules),
		cmocka_unit_test(test_kinds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
