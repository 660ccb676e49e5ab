// SPDX-License-Identifier: Apache-2.0
/*
 * test_pgtitle.c - unit tests of agent/symbolize/pgtitle.c: PostgreSQL's
 * backend type from a process title, with and without cluster_name, and
 * none for processes that are not PostgreSQL's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "agent/symbolize/pgtitle.h"

static void test_backend_type(void **state)
{
	(void)state;
	assert_string_equal(vm_pg_backend_type("postgres",
					       "postgres: checkpointer"),
			    "checkpointer");
	assert_string_equal(vm_pg_backend_type("postgres",
					       "postgres: walwriter"),
			    "walwriter");
	assert_string_equal(vm_pg_backend_type("postgres",
					       "postgres: background writer"),
			    "background writer");
	assert_string_equal(vm_pg_backend_type("postgres",
					       "postgres: autovacuum launcher"),
			    "autovacuum launcher");
	assert_string_equal(
		vm_pg_backend_type("postgres",
				   "postgres: autovacuum worker shop"),
		"autovacuum worker");
	assert_string_equal(
		vm_pg_backend_type("postgres",
				   "postgres: logical replication launcher"),
		"logical replication launcher");
	assert_string_equal(
		vm_pg_backend_type("postgres",
				   "postgres: alice shop [local] SELECT"),
		"client backend");
	assert_string_equal(
		vm_pg_backend_type("postgres",
				   "postgres: alice shop 10.0.0.1(5432) idle"),
		"client backend");
	assert_string_equal(vm_pg_backend_type("postgres",
					       "postgres: main: checkpointer"),
			    "checkpointer"); /* cluster_name = main */
	assert_string_equal(
		vm_pg_backend_type("postgres",
				   "postgres: main: bob db [local] idle"),
		"client backend");
	assert_string_equal(
		vm_pg_backend_type("postgres",
				   "postgres: parallel worker for PID 42"),
		"parallel worker");
	assert_string_equal(
		vm_pg_backend_type(
			"postgres",
			"postgres: walsender rep 10.0.0.2(40000) streaming 0/3000000"),
		"walsender");
	assert_string_equal(vm_pg_backend_type("postgres", "postgres: pg_cron"),
			    "background worker");
	assert_string_equal(
		vm_pg_backend_type(
			"postgres",
			"/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main"),
		"postmaster");
	assert_null(vm_pg_backend_type("bash", "/bin/bash -c x"));
	assert_null(vm_pg_backend_type("burn", NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backend_type),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
