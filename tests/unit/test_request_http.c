// SPDX-License-Identifier: Apache-2.0
/*
 * test_request_http.c - unit tests of the pure parts of the REST service:
 * the --listen argument (agent/http_addr.c), the Bearer token check and
 * token file (agent/http_auth.c), and the Prometheus text of /metrics
 * (agent/metrics.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/serve/http.h"
#include "agent/serve/metrics.h"

static void test_listen(void **state)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	struct vm_error err = { 0 };
	socklen_t len;

	assert_int_equal(
		vm_http_parse_listen("127.0.0.1:3080", &ss, &len, &err), 0);
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohs(in4->sin_port), 3080);
	assert_int_equal(len, sizeof(*in4));
	assert_true(vm_http_is_loopback(&ss));

	assert_int_equal(vm_http_parse_listen("0.0.0.0:0", &ss, &len, &err), 0);
	assert_false(vm_http_is_loopback(&ss));
	assert_int_equal(vm_http_parse_listen("10.1.2.3:80", &ss, &len, &err),
			 0);
	assert_false(vm_http_is_loopback(&ss));

	assert_int_equal(vm_http_parse_listen(":3080", &ss, &len, &err), 0);
	assert_true(vm_http_is_loopback(&ss));

	assert_int_equal(vm_http_parse_listen("[::1]:8080", &ss, &len, &err),
			 0);
	assert_int_equal(ss.ss_family, AF_INET6);
	assert_int_equal(ntohs(in6->sin6_port), 8080);
	assert_true(vm_http_is_loopback(&ss));
	assert_int_equal(vm_http_parse_listen("[::]:8080", &ss, &len, &err), 0);
	assert_false(vm_http_is_loopback(&ss));

	static const char *const bad[] = {
		"127.0.0.1",
		"127.0.0.1:",
		"127.0.0.1:65536",
		"127.0.0.1:-1",
		"127.0.0.1:80x",
		"localhost:3080",
		"::1:3080",
		"[::1]3080",
		"[127.0.0.1]:80",
		"1.2.3.4.5:80",
		"",
		"[::1]:",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		vm_error_clear(&err);
		if (vm_http_parse_listen(bad[i], &ss, &len, &err) != -EINVAL)
			fail_msg("--listen '%s' was accepted", bad[i]);
		assert_non_null(strstr(err.msg, "ADDR:PORT"));
	}
}

static void test_bearer(void **state)
{
	assert_true(vm_http_check_bearer("Bearer s3cret", "s3cret"));
	assert_true(vm_http_check_bearer("bearer s3cret", "s3cret"));
	assert_true(vm_http_check_bearer("Bearer   s3cret", "s3cret"));
	assert_false(vm_http_check_bearer(NULL, "s3cret"));
	assert_false(vm_http_check_bearer("", "s3cret"));
	assert_false(vm_http_check_bearer("Bearer ", "s3cret"));
	assert_false(vm_http_check_bearer("Bearer s3cre", "s3cret"));
	assert_false(vm_http_check_bearer("Bearer s3crett", "s3cret"));
	assert_false(vm_http_check_bearer("Bearer S3cret", "s3cret"));
	assert_false(vm_http_check_bearer("Basic czNjcmV0", "s3cret"));
	assert_false(vm_http_check_bearer("s3cret", "s3cret"));
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static void test_token_file(void **state)
{
	char dir[] = "/tmp/test_request_http.XXXXXX", path[128];
	struct vm_error err = { 0 };
	char *token = NULL;
	bool loose;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/token", dir);

	write_file(path, "  abc123\n", 0600);
	assert_int_equal(vm_http_load_token(path, &token, &loose, &err), 0);
	assert_string_equal(token, "abc123");
	assert_false(loose);
	free(token);
	token = NULL;

	write_file(path, "abc123", 0644);
	assert_int_equal(vm_http_load_token(path, &token, &loose, &err), 0);
	assert_true(loose);
	free(token);
	token = NULL;

	write_file(path, "\n \n", 0600);
	assert_int_equal(vm_http_load_token(path, &token, &loose, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "is empty"));

	vm_error_clear(&err);
	write_file(path, "two words", 0600);
	assert_int_equal(vm_http_load_token(path, &token, &loose, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "blank or control"));

	vm_error_clear(&err);
	unlink(path);
	assert_int_equal(vm_http_load_token(path, &token, &loose, &err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, path));
	assert_null(token);
	rmdir(dir);
}

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
		cmocka_unit_test(test_listen),
		cmocka_unit_test(test_bearer),
		cmocka_unit_test(test_token_file),
		cmocka_unit_test(test_metrics_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
