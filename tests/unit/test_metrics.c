// SPDX-License-Identifier: Apache-2.0
/*
 * test_metrics.c - unit tests of agent/serve/metrics.c: the Prometheus
 * text of /metrics after sessions, refusals and answers of each status,
 * and the sums of the sessions' user stacks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/serve/metrics.h"

static void test_metrics_render(void **state)
{
	struct vm_metrics m;
	struct vm_metrics_snapshot s;
	size_t len;
	char *text;

	vm_metrics_init(&m);
	vm_metrics_session(&m, VM_OUTCOME_COMPLETED, 500, 3, 5.012);
	vm_metrics_session(&m, VM_OUTCOME_STOPPED, 20, 0, 0.25);
	vm_metrics_session(&m, VM_OUTCOME_CLIENT_GONE, 0, 0, 0.5);
	vm_metrics_rejected(&m);
	vm_metrics_http(&m, 200);
	vm_metrics_http(&m, 200);
	vm_metrics_http(&m, 422);
	vm_metrics_http(&m, 418);
	vm_metrics_running(&m, true);
	vm_metrics_unwound(&m, 40, 2, 5, 1);
	vm_metrics_unwound(&m, 10, 0, 1, 2);
	vm_metrics_snapshot(&m, &s);
	text = vm_metrics_render(&s, "1.2.3", &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	static const char *const want[] = {
		"vmtools_build_info{version=\"1.2.3\"} 1\n",
		"vmtools_sessions_total{outcome=\"completed\"} 1\n",
		"vmtools_sessions_total{outcome=\"stopped\"} 1\n",
		"vmtools_sessions_total{outcome=\"client_gone\"} 1\n",
		"vmtools_sessions_total{outcome=\"failed\"} 0\n",
		"vmtools_sessions_rejected_total 1\n",
		"vmtools_session_running 1\n",
		"vmtools_samples_total 520\n",
		"vmtools_lost_stacks_total 3\n",
		"vmtools_last_session_duration_seconds 0.500\n",
		"vmtools_http_requests_total{code=\"200\"} 2\n",
		"vmtools_http_requests_total{code=\"422\"} 1\n",
		"vmtools_http_requests_total{code=\"other\"} 1\n",
		"# TYPE vmtools_sessions_total counter\n",
		"# TYPE vmtools_last_session_duration_seconds gauge\n",
		"vmtools_unwound_frames_total{by=\"table\"} 50\n",
		"vmtools_unwind_processes_skipped_total 3\n",
		"# TYPE vmtools_unwind_processes_skipped_total counter\n",
		"vmtools_unwind_walks_cut_total 6\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(text, want[i]))
			fail_msg("/metrics lacks %s", want[i]);
	/* Every line is a comment or "name value". */
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		assert_true(line[0] == '#' || strchr(line, ' '));
	free(text);
	assert_string_equal(vm_outcome_name(VM_OUTCOME_SHUTDOWN), "shutdown");
	pthread_mutex_destroy(&m.lock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
