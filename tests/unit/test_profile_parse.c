// SPDX-License-Identifier: Apache-2.0
/*
 * test_profile_parse.c - unit tests of the pure parsing and sizing of the
 * eBPF profiler: BPF map sizes and CPU lists (bpf_sizing.c), the stack
 * cache that reads each stack once (bpf_read.c), /proc/PID/maps lines and
 * titles (proc.c), kallsyms text
 * (kallsyms.c) and PostgreSQL backend types from titles (pgtitle.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/profile/bpf/bpf_read.h"
#include "agent/profile/bpf/bpf_sizing.h"
#include "agent/symbolize/kallsyms.h"
#include "agent/symbolize/pgtitle.h"
#include "agent/samples/proc.h"

static void test_map_sizes(void **state)
{
	struct vm_bpf_sizes sz;

	(void)state;
	vm_bpf_map_sizes(99, 2, 5, false, &sz);
	assert_int_equal(sz.expected_samples, 990);
	assert_int_equal(sz.stacks, 8192); /* 8 x 990 -> the 8 Ki floor */
	assert_int_equal(sz.counts, 2048);
	assert_int_equal(sz.seen, 1024); /* the floor */
	assert_int_equal(sz.pids, 1); /* no --pid: target_pids unused */
	assert_int_equal(sz.children, 16384);
	vm_bpf_map_sizes(1000, 8, 10, true, &sz);
	assert_int_equal(sz.expected_samples, 80000);
	assert_int_equal(sz.stacks, 65536); /* capped */
	assert_int_equal(sz.counts, 131072); /* next power of two */
	assert_int_equal(sz.seen, 16384); /* capped */
	assert_int_equal(sz.pids, 65536); /* --pid targets and their children */
	vm_bpf_map_sizes(99, 2, 3, false, &sz);
	assert_int_equal(sz.seen, 1024); /* 594 samples: never more processes */
	vm_bpf_map_sizes(100, 4, 5, false, &sz);
	assert_int_equal(sz.seen, 2048);
	vm_bpf_map_sizes(1000, 64, 3600, false, &sz);
	assert_int_equal(sz.counts, 262144); /* capped */
	vm_bpf_map_sizes(1, 0, 1, false, &sz); /* no CPU count: one */
	assert_int_equal(sz.expected_samples, 1);
}

/* A fake stack map: stack id i has i + 1 frames 0x1000 * id + depth. */
static int fake_stack(void *ctx, int32_t id, uint64_t *ips)
{
	int *fails = ctx;

	if (id == *fails)
		return -ENOENT;
	for (int32_t d = 0; d <= id && d < PROFILE_MAX_STACK_DEPTH; d++)
		ips[d] = 0x1000 * (uint64_t)id + d + 1;
	return 0;
}

static void test_stack_cache(void **state)
{
	struct vm_stack_cache c;
	const uint64_t *ips, *again;
	int fails = 7;
	uint32_t n;

	(void)state;
	assert_int_equal(vm_stack_cache_init(&c, 300, fake_stack, &fails), 0);
	assert_int_equal(vm_stack_cache_get(&c, 3, &ips, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(ips[0], 0x3001);
	assert_int_equal(ips[3], 0x3004);
	/* Read once, however often it is asked for. */
	assert_int_equal(vm_stack_cache_get(&c, 3, &again, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(again[3], 0x3004);
	assert_int_equal(c.reads, 1);
	/* Negative ids (-EEXIST, -EFAULT...) and ids out of range: none. */
	assert_int_equal(vm_stack_cache_get(&c, -17, &ips, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(vm_stack_cache_get(&c, 300, &ips, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(c.reads, 1);
	/* A stack that cannot be read is empty, and not asked for again. */
	assert_int_equal(vm_stack_cache_get(&c, 7, &ips, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(vm_stack_cache_get(&c, 7, &ips, &n), 0);
	assert_int_equal(c.reads, 2);
	/* Many stacks, the full depth: earlier ones stay right. */
	for (int32_t id = 8; id < 300; id++) {
		assert_int_equal(vm_stack_cache_get(&c, id, &ips, &n), 0);
		assert_int_equal(n, id < PROFILE_MAX_STACK_DEPTH ?
					    (uint32_t)id + 1 :
					    PROFILE_MAX_STACK_DEPTH);
		assert_int_equal(ips[n - 1], 0x1000 * (uint64_t)id + n);
	}
	assert_int_equal(vm_stack_cache_get(&c, 3, &ips, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(ips[0], 0x3001);
	assert_int_equal(c.reads, 294);
	vm_stack_cache_free(&c);
}

static void test_cpu_list(void **state)
{
	int cpus[16];
	size_t n;

	(void)state;
	assert_int_equal(vm_parse_cpu_list("0-3,8,10-11\n", cpus, 16, &n), 0);
	assert_int_equal(n, 7);
	assert_int_equal(cpus[0], 0);
	assert_int_equal(cpus[3], 3);
	assert_int_equal(cpus[4], 8);
	assert_int_equal(cpus[6], 11);
	assert_int_equal(vm_parse_cpu_list("0", NULL, 0, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(vm_parse_cpu_list("", cpus, 16, &n), -EINVAL);
	assert_int_equal(vm_parse_cpu_list("3-1", cpus, 16, &n), -EINVAL);
	assert_int_equal(vm_parse_cpu_list("a", cpus, 16, &n), -EINVAL);
	assert_int_equal(vm_parse_cpu_list("1;2", cpus, 16, &n), -EINVAL);
}

static void test_maps_line(void **state)
{
	char l1[] =
		"55d0c8a00000-55d0c8e00000 r-xp 00123000 fd:01 1234567                    /usr/lib/postgresql/15/bin/postgres\n";
	char l2[] =
		"7ffd1a1f3000-7ffd1a1f5000 r-xp 00000000 00:00 0                          [vdso]\n";
	char l3[] =
		"55d0c8a00000-55d0c8e00000 rw-p 00000000 fd:01 1234567 /x\n";
	char l4[] = "zz-yy r-xp";
	char l5[] = "7f0000000000-7f0000001000 r-xp 00000000 00:00 0\n";
	struct vm_mapping m;
	uint64_t dev, ino;

	(void)state;
	assert_int_equal(vm_proc_parse_maps_line(l1, &m, &dev, &ino), 1);
	assert_int_equal(m.start, 0x55d0c8a00000);
	assert_int_equal(m.end, 0x55d0c8e00000);
	assert_int_equal(m.pgoff, 0x123000);
	assert_string_equal(m.path, "/usr/lib/postgresql/15/bin/postgres");
	assert_int_equal(dev, (uint64_t)0xfd << 32 | 1);
	assert_int_equal(ino, 1234567);
	assert_int_equal(vm_proc_parse_maps_line(l2, &m, &dev, &ino), 1);
	assert_string_equal(m.path, "[vdso]");
	assert_int_equal(vm_proc_parse_maps_line(l3, &m, &dev, &ino), 0);
	assert_int_equal(vm_proc_parse_maps_line(l4, &m, &dev, &ino), -EINVAL);
	assert_int_equal(vm_proc_parse_maps_line(l5, &m, &dev, &ino), 1);
	assert_null(m.path);
}

static void test_title(void **state)
{
	static const char cmd[] = "/usr/bin/postgres\0-D\0/data\0";
	static const char pg[] = "postgres: checkpointer   \0\0\0";
	char *t;

	(void)state;
	t = vm_proc_title_from_cmdline(cmd, sizeof(cmd) - 1);
	assert_string_equal(t, "/usr/bin/postgres -D /data");
	free(t);
	t = vm_proc_title_from_cmdline(pg, sizeof(pg) - 1);
	assert_string_equal(t, "postgres: checkpointer");
	free(t);
	assert_null(vm_proc_title_from_cmdline("\0\0", 2));
}

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

static void test_kallsyms(void **state)
{
	static const char text[] = "ffffffff81000000 T _stext\n"
				   "ffffffff81000100 t do_one\n"
				   "ffffffff81000200 D some_data\n"
				   "ffffffff81000300 W weak_fn\n"
				   "ffffffffc0000000 t mod_fn\t[e1000]\n"
				   "garbage line\n"
				   "ffffffff81000050 T early_fn\n";
	struct vm_kallsyms k;
	const struct vm_ksym *s;
	char *copy = strdup(text);

	(void)state;
	assert_int_equal(vm_kallsyms_parse(copy, &k, NULL), 0);
	assert_int_equal(k.n, 5); /* no data symbol, no garbage */
	s = vm_kallsyms_lookup(&k, 0xffffffff81000120);
	assert_non_null(s);
	assert_string_equal(s->name, "do_one");
	s = vm_kallsyms_lookup(&k, 0xffffffff81000060);
	assert_string_equal(s->name, "early_fn");
	s = vm_kallsyms_lookup(&k, 0xffffffffc0000010);
	assert_string_equal(s->name, "mod_fn");
	assert_string_equal(s->module, "e1000");
	assert_null(vm_kallsyms_lookup(&k, 0x1000));
	vm_kallsyms_free(&k);

	/* kptr_restrict: every address reads 0. */
	copy = strdup("0000000000000000 T _stext\n0000000000000000 t x\n");
	assert_int_equal(vm_kallsyms_parse(copy, &k, NULL), -EPERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_sizes),
		cmocka_unit_test(test_cpu_list),
		cmocka_unit_test(test_stack_cache),
		cmocka_unit_test(test_maps_line),
		cmocka_unit_test(test_title),
		cmocka_unit_test(test_backend_type),
		cmocka_unit_test(test_kallsyms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
