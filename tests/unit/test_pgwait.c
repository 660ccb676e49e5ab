// SPDX-License-Identifier: Apache-2.0
/*
 * test_pgwait.c - unit tests of agent/symbolize/pgwait.c and its tables
 * (pgwait_15.c to pgwait_18.c): wait events named as pg_stat_activity
 * names them (values from PostgreSQL 15's utils/wait_event.h, and from
 * what 16, 17 and 18 name them: tests/integration/36-pg-versions.sh
 * checks the tables whole), numbering that moved between versions,
 * nothing for no wait, an unknown number, an extension's own event or an
 * unknown version; and of the PG_VERSION parser of
 * agent/profile/bpf/bpf_pg.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "agent/profile/bpf/bpf_pg.h"
#include "agent/symbolize/pgwait.h"

static const char *name_in(unsigned major, uint32_t info)
{
	static char buf[128];

	if (!vm_pg_wait_event_name(vm_pg_layout(major), info, buf, sizeof(buf)))
		return "";
	return buf;
}

static const char *name_of(uint32_t info)
{
	return name_in(15, info);
}

static void test_names_15(void **state)
{
	(void)state;
	/* PG_WAIT_LOCK | LOCKTAG_ADVISORY (10) */
	assert_string_equal(name_of(0x0300000A), "Lock:advisory");
	assert_string_equal(name_of(0x03000005), "Lock:transactionid");
	/* PG_WAIT_CLIENT: WAIT_EVENT_CLIENT_READ is the first */
	assert_string_equal(name_of(0x06000000), "Client:ClientRead");
	/* PG_WAIT_TIMEOUT: BASE_BACKUP_THROTTLE, CHECKPOINT_WRITE_DELAY, PG_SLEEP */
	assert_string_equal(name_of(0x09000002), "Timeout:PgSleep");
	/* PG_WAIT_IO: DATA_FILE_READ is the 18th */
	assert_string_equal(name_of(0x0A000011), "IO:DataFileRead");
	assert_string_equal(name_of(0x0A000048), "IO:WALWrite");
	assert_string_equal(name_of(0x01000008), "LWLock:WALWrite");
	assert_string_equal(name_of(0x01000100), "LWLock:extension");
	assert_string_equal(name_of(0x04000000), "BufferPin:BufferPin");
	assert_string_equal(name_of(0x07000003), "Extension:Extension");
	assert_string_equal(name_of(0x05000004), "Activity:CheckpointerMain");
}

static void test_names_16_to_18(void **state)
{
	(void)state;
	for (unsigned v = 16; v <= 18; v++) {
		assert_non_null(vm_pg_layout(v));
		assert_string_equal(name_in(v, 0x0300000A), "Lock:advisory");
		assert_string_equal(name_in(v, 0x06000000),
				    "Client:ClientRead");
		assert_string_equal(name_in(v, 0x09000002), "Timeout:PgSleep");
		assert_string_equal(name_in(v, 0x04000000),
				    "BufferPin:BufferPin");
		assert_string_equal(name_in(v, 0x07000000),
				    "Extension:Extension");
		assert_int_equal(vm_pg_layout(v)->query_id_offset, 424);
	}
	/* 18 added asynchronous I/O's events ahead of DataFileRead */
	assert_string_equal(name_in(17, 0x0A000011), "IO:DataFileRead");
	assert_string_equal(name_in(18, 0x0A000015), "IO:DataFileRead");
	/* before 17 every Extension event is "Extension"; from 17 on an
	 * extension names its own, in shared memory: no label */
	assert_string_equal(name_in(16, 0x07000003), "Extension:Extension");
	assert_string_equal(name_in(17, 0x07000003), "");
	assert_string_equal(name_in(18, 0x0B000001), "");
}

static void test_no_label(void **state)
{
	char buf[64];

	(void)state;
	assert_string_equal(name_of(0), ""); /* not waiting */
	assert_string_equal(name_of(0x09000050), ""); /* past the table */
	assert_string_equal(name_of(0x02000000), ""); /* no such class */
	assert_string_equal(name_of(0x01000000), ""); /* unassigned LWLock */
	assert_null(vm_pg_layout(13));
	assert_null(vm_pg_layout(19));
	assert_string_equal(vm_pg_known_versions(), "15, 16, 17 and 18");
	assert_int_equal(
		vm_pg_wait_event_name(NULL, 0x0300000A, buf, sizeof(buf)), 0);
	assert_int_equal(vm_pg_layout(15)->query_id_offset, 424);
}

static void test_pg_version(void **state)
{
	(void)state;
	assert_int_equal(vm_pg_parse_version("15\n", 3), 15);
	assert_int_equal(vm_pg_parse_version("9.6\n", 4), 9);
	assert_int_equal(vm_pg_parse_version("16", 2), 16);
	assert_int_equal(vm_pg_parse_version("", 0), 0);
	assert_int_equal(vm_pg_parse_version("x15\n", 4), 0);
	assert_int_equal(vm_pg_parse_version("15 \n", 4), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_15),
		cmocka_unit_test(test_names_16_to_18),
		cmocka_unit_test(test_no_label),
		cmocka_unit_test(test_pg_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
