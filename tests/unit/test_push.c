// SPDX-License-Identifier: Apache-2.0
/*
 * test_push.c - unit tests of the pure parts of `serve --continuous`'s
 * output: the Pyroscope ingest URL of a window and which --push-url is
 * accepted (agent/continuous/push.c), and
 * the /metrics lines of the continuous profile, its history and its push
 * (agent/continuous/continuous_metrics.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/continuous/continuous.h"
#include "agent/continuous/push.h"

#define NS 1000000000ULL

static void test_ingest_url(void **state)
{
	char *u;

	(void)state;
	/* from is the start's second, until the end's, rounded up. */
	u = vm_push_ingest_url("http://pyro:4040/", "postgres%7Bhost%3Dvm%7D",
			       1795000000ULL * NS + 5, 1795000010ULL * NS + 1,
			       19);
	assert_string_equal(
		u,
		"http://pyro:4040/ingest?name=postgres%7Bhost%3Dvm%7D&from=1795000000&until=1795000011&spyName=vmtools&sampleRate=19");
	free(u);
	u = vm_push_ingest_url("https://h/prefix", "n", 0, NS, 99);
	assert_string_equal(
		u,
		"https://h/prefix/ingest?name=n&from=0&until=1&spyName=vmtools&sampleRate=99");
	free(u);
	assert_string_equal(vm_push_outcome_name(VM_PUSH_REJECTED), "rejected");
}

/*
 * A base URL only: no query or fragment (the windows would go to another
 * endpoint), no credentials (they would be echoed), nothing blank.
 */
static void test_check_url(void **state)
{
	char why[512];

	(void)state;
	assert_int_equal(vm_push_check_url("http://pyro:4040", why, 512), 0);
	assert_int_equal(vm_push_check_url("https://h/prefix/", why, 512), 0);
	assert_int_equal(vm_push_check_url("ftp://h/", why, 512), -EINVAL);
	assert_non_null(strstr(why, "http://"));
	assert_int_equal(vm_push_check_url("http://h/?x=1", why, 512), -EINVAL);
	assert_non_null(strstr(why, "query or fragment"));
	assert_int_equal(vm_push_check_url("http://h/p#f", why, 512), -EINVAL);
	assert_int_equal(vm_push_check_url("http://u:secret@h/", why, 512),
			 -EINVAL);
	assert_null(strstr(why, "secret"));
	assert_non_null(strstr(why, "--push-basic-auth-file"));
	/* an @ in the path is not credentials */
	assert_int_equal(vm_push_check_url("http://h/a@b", why, 512), 0);
	assert_int_equal(vm_push_check_url("http://h /", why, 512), -EINVAL);
	assert_int_equal(vm_push_check_url("http://h/\n", why, 512), -EINVAL);
	assert_int_equal(vm_push_check_url("http:///x", why, 512), -EINVAL);
}

static void test_metrics(void **state)
{
	struct vm_continuous_stats st = { 0 };
	size_t len;
	char *text;

	(void)state;
	st.sampling = true;
	st.windows = 42;
	st.history_bytes = 1000;
	st.history_dropped = 3;
	st.has_dir = true;
	st.dir.bytes = 4096;
	st.dir.dropped = 2;
	st.dir.write_errors = 1;
	st.has_push = true;
	st.push.outcomes[VM_PUSH_OK] = 40;
	st.push.outcomes[VM_PUSH_RETRY] = 5;
	st.push.queued = 2;
	text = vm_continuous_render_metrics(&st, &len);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	static const char *const want[] = {
		"vmtools_continuous_sampling 1\n",
		"vmtools_continuous_windows_total 42\n",
		"vmtools_history_bytes{where=\"memory\"} 1000\n",
		"vmtools_history_bytes{where=\"disk\"} 4096\n",
		"vmtools_history_dropped_windows_total{where=\"memory\"} 3\n",
		"vmtools_history_dropped_windows_total{where=\"disk\"} 2\n",
		"vmtools_history_write_errors_total 1\n",
		"vmtools_push_total{outcome=\"ok\"} 40\n",
		"vmtools_push_total{outcome=\"retry\"} 5\n",
		"vmtools_push_total{outcome=\"rejected\"} 0\n",
		"vmtools_push_total{outcome=\"dropped\"} 0\n",
		"vmtools_push_queued 2\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(text, want[i]))
			fail_msg("/metrics lacks %s", want[i]);
	free(text);

	/* Without a directory or a push, their lines are left out. */
	st.has_dir = st.has_push = false;
	text = vm_continuous_render_metrics(&st, &len);
	assert_null(strstr(text, "where=\"disk\""));
	assert_null(strstr(text, "vmtools_push_total"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ingest_url),
		cmocka_unit_test(test_check_url),
		cmocka_unit_test(test_metrics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
