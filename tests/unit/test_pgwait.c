// SPDX-License-Identifier: Apache-2.0
/*
 * test_pgwait.c - unit tests of agent/symbolize/pgwait.c and its tables
 * (pgwait_15.c to pgwait_18.c): wait events named as pg_stat_activity
 * names them (values from PostgreSQL 15's utils/wait_event.h, and from
 * what 16, 17 and 18 name them: tests/integration/36-pg-versions.sh
 * checks the tables whole), numbering that moved between versions,
 * nothing for no wait or an unknown version, a number the table does not
 * name (a later minor release's, an extension's own) labelled by number
 * and never by a neighbour's name, each table's minor release; and of
 * the PG_VERSION parser of agent/profile/bpf/bpf_pg.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "agent/profile/bpf/bpf_pg.h"
#include "agent/symbolize/pgrelease.h"
#include "agent/symbolize/pgwait.h"

/* As minor release minor of major names info. */
static const char *name_at(unsigned major, unsigned minor, uint32_t info)
{
	static char buf[128];

	if (!vm_pg_wait_event_name(vm_pg_layout(major), minor, info, buf,
				   sizeof(buf)))
		return "";
	return buf;
}

/* As the release the table was written from names it. */
static const char *name_in(unsigned major, uint32_t info)
{
	return name_at(major, 99, info);
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
	 * extension names its own, in shared memory: labelled by number */
	assert_string_equal(name_in(16, 0x07000003), "Extension:Extension");
	assert_string_equal(name_in(17, 0x07000003), "Extension:<unknown 3>");
	assert_string_equal(name_in(18, 0x0B000001),
			    "InjectionPoint:<unknown 1>");
}

/*
 * Minor releases append events: 15.20 added WalReceiverUpstreamCatchup as
 * IPC's 51st; a later one's 52nd is labelled by its number, never by the
 * name of the last one the table knows.
 */
static void test_minor_releases(void **state)
{
	(void)state;
	assert_string_equal(name_of(0x08000033),
			    "IPC:WalReceiverUpstreamCatchup");
	assert_string_equal(name_of(0x08000034), "IPC:<unknown 52>");
	assert_string_equal(name_of(0x0A0000FF), "IO:<unknown 255>");
	assert_string_equal(vm_pg_layout(15)->written_from, "15.20");
	assert_string_equal(vm_pg_layout(16)->written_from, "16.14");
	assert_string_equal(vm_pg_layout(17)->written_from, "17.10");
	assert_string_equal(vm_pg_layout(18)->written_from, "18.4");
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(vm_pg_layout_at(i)->major, 15 + i);
	assert_null(vm_pg_layout_at(4));
}

/*
 * Names that changed between minor releases, as each release names them:
 * 17.0 to 17.2 gave individual LWLocks a Lock suffix, 17.4 on none (17.3
 * was not checked: labelled by number); 17.5 and before spell
 * MultixactMemberSLRU; 15.0 and 15.1 CommitTSBuffer.  A server whose
 * release is unknown gets such an event by number, the others by name.
 */
static void test_renames(void **state)
{
	(void)state;
	assert_string_equal(name_at(17, 2, 0x01000004), "LWLock:ProcArrayLock");
	assert_string_equal(name_at(17, 0, 0x01000008), "LWLock:WALWriteLock");
	assert_string_equal(name_at(17, 3, 0x01000004), "LWLock:<unknown 4>");
	assert_string_equal(name_at(17, 4, 0x01000004), "LWLock:ProcArray");
	assert_string_equal(name_at(17, 10, 0x01000004), "LWLock:ProcArray");
	assert_string_equal(name_at(17, 5, 0x01000055),
			    "LWLock:MultixactMemberSLRU");
	assert_string_equal(name_at(17, 6, 0x01000055),
			    "LWLock:MultiXactMemberSLRU");
	assert_string_equal(name_at(15, 1, 0x01000031),
			    "LWLock:CommitTSBuffer");
	assert_string_equal(name_at(15, 2, 0x01000031), "LWLock:<unknown 49>");
	assert_string_equal(name_at(15, 18, 0x01000031),
			    "LWLock:CommitTsBuffer");
	assert_string_equal(name_at(17, VM_PG_MINOR_UNKNOWN, 0x01000004),
			    "LWLock:<unknown 4>");
	/* the rest does not depend on the release */
	assert_string_equal(name_at(17, VM_PG_MINOR_UNKNOWN, 0x0300000A),
			    "Lock:advisory");
	assert_string_equal(name_at(17, 2, 0x0A000011), "IO:DataFileRead");
	assert_string_equal(name_at(16, 1, 0x01000004), "LWLock:ProcArray");
}

/* The minor release from a server's version string. */
static void test_release(void **state)
{
	static const char debian[] =
		"x\0PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on "
		"x86_64-pc-linux-gnu, compiled by gcc\0y";
	static const char npm[] =
		"PostgreSQL 17.2 on x86_64-pc-linux-gnu, compiled by gcc";

	(void)state;
	assert_int_equal(vm_pg_release_in(debian, sizeof(debian), 15), 18);
	assert_int_equal(vm_pg_release_in(npm, strlen(npm), 17), 2);
	/* another major version's, none, a truncated one, two that differ */
	assert_int_equal(vm_pg_release_in(npm, strlen(npm), 15),
			 VM_PG_MINOR_UNKNOWN);
	assert_int_equal(vm_pg_release_in("PostgreSQL 17.", 14, 17),
			 VM_PG_MINOR_UNKNOWN);
	assert_int_equal(vm_pg_release_in("PostgreSQL 17.1.2 ", 18, 17),
			 VM_PG_MINOR_UNKNOWN);
	assert_int_equal(vm_pg_release_in("PostgreSQL 17.123456 ", 21, 17),
			 VM_PG_MINOR_UNKNOWN);
	assert_int_equal(vm_pg_release_in("PostgreSQL 17.2 PostgreSQL 17.3", 31,
					  17),
			 VM_PG_MINOR_UNKNOWN);
	assert_int_equal(
		vm_pg_release_in("PostgreSQL 17.2 PostgreSQL 17.2", 31, 17), 2);
	assert_int_equal(vm_pg_release_in("PostgreSQL 17.4", 15, 17), 4);
	assert_int_equal(vm_pg_release_of_mem(npm, strlen(npm), 17),
			 VM_PG_MINOR_UNKNOWN); /* not an ELF file */
}

static void test_no_label(void **state)
{
	char buf[64];

	(void)state;
	assert_string_equal(name_of(0), ""); /* not waiting */
	/* past the table, a class it does not know, an unassigned LWLock */
	assert_string_equal(name_of(0x09000050), "Timeout:<unknown 80>");
	assert_string_equal(name_of(0x02000000), "<unknown 2>:<unknown 0>");
	assert_string_equal(name_of(0xFF00FFFF),
			    "<unknown 255>:<unknown 65535>");
	assert_string_equal(name_of(0x01000000), "LWLock:<unknown 0>");
	/* too small */
	assert_int_equal(vm_pg_wait_event_name(vm_pg_layout(15), 20, 0x09000050,
					       buf, 12),
			 0);
	assert_null(vm_pg_layout(13));
	assert_null(vm_pg_layout(19));
	assert_string_equal(vm_pg_known_versions(), "15, 16, 17 and 18");
	assert_int_equal(vm_pg_wait_event_name(NULL, 20, 0x0300000A, buf,
					       sizeof(buf)),
			 0);
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
		cmocka_unit_test(test_minor_releases),
		cmocka_unit_test(test_renames),
		cmocka_unit_test(test_release),
		cmocka_unit_test(test_pg_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
