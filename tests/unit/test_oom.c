// SPDX-License-Identifier: Apache-2.0
/*
 * test_oom.c - OOM reports without a kernel: the store's bounds in count
 * and bytes, in memory and on the disk (agent/oom/oom_store.c), its files
 * read back by a new store and never through a link someone else put
 * there; the tracepoint's format (agent/profile/oom_format.c); the
 * cgroup files' parsers (agent/oom/oom_cgroup.c); a report's JSON
 * (agent/oom/oom_report.c); the last memory snapshot kept of each
 * process, small and bounded (agent/profile/memsnap.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/oom/oom_cgroup.h"
#include "agent/oom/oom_report.h"
#include "agent/oom/oom_store.h"
#include "agent/profile/memsnap.h"
#include "agent/profile/oomwatch.h"

/* A report of pid at ms, padded with pad bytes of title. */
static char *report(uint64_t ms, unsigned pid, const char *type, size_t pad)
{
	char *title = malloc(pad + 1), *out;

	memset(title, 'x', pad);
	title[pad] = '\0';
	assert_true(
		asprintf(&out,
			 "{\"id\":\"%013llu-%u\",\"unix_ms\":%llu,\"pid\":%u,"
			 "\"backend_type\":\"%s\",\"title\":\"%s\"}",
			 (unsigned long long)ms, pid, (unsigned long long)ms,
			 pid, type, title) > 0);
	free(title);
	return out;
}

static size_t files_in(const char *dir)
{
	char cmd[256];
	FILE *p;
	size_t n = 0;

	snprintf(cmd, sizeof(cmd), "ls '%s' | grep -c '^oom-.*\\.json$'", dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%zu", &n), 1);
	pclose(p);
	return n;
}

static void test_store_bounds(void **state)
{
	char tmpl[] = "/tmp/test_oom.XXXXXX", cmd[1024], path[64];
	const char *dir = mkdtemp(tmpl);
	struct vm_oom_store_config cfg = { .max_reports = 4,
					   .max_bytes = 4096 };
	struct vm_oom_store_stats st;
	struct vm_oom_store *s;
	struct vm_error err = { 0 };
	char *json, *list, *got;
	size_t len;
	int r;

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/reports", dir);
	cfg.dir = path;
	assert_int_equal(vm_oom_store_open(&cfg, &s, &err), 0);
	/* Ten small reports: the four newest stay, in memory and on disk. */
	for (unsigned i = 0; i < 10; i++) {
		json = report(1000 + i, 100 + i, "client backend", 10);
		assert_int_equal(vm_oom_store_add(s, json, strlen(json), &err),
				 0);
		free(json);
	}
	vm_oom_store_stats(s, &st);
	assert_int_equal(st.reports, 4);
	assert_int_equal(st.dropped, 6);
	assert_string_equal(st.last_id, "0000000001009-109");
	assert_int_equal(st.n_types, 1);
	assert_int_equal(st.by_type[0].n, 4);
	assert_int_equal(files_in(path), 4);
	assert_int_equal(vm_oom_store_get(s, "0000000001005-105", &got, &len),
			 -ENOENT);
	assert_int_equal(vm_oom_store_get(s, "0000000001006-106", &got, &len),
			 0);
	assert_non_null(strstr(got, "\"pid\":106"));
	free(got);
	/* Large ones: the bytes bound takes over. */
	for (unsigned i = 0; i < 3; i++) {
		json = report(2000 + i, 200 + i, "autovacuum worker", 1500);
		assert_int_equal(vm_oom_store_add(s, json, strlen(json), &err),
				 0);
		free(json);
	}
	vm_oom_store_stats(s, &st);
	assert_true(st.bytes <= 4096);
	assert_int_equal(st.reports, 2);
	assert_int_equal(files_in(path), 2);
	/* Not a report, and too large: refused. */
	assert_int_equal(vm_oom_store_add(s, "{\"id\":\"../x\"}", 13, &err),
			 -EINVAL);
	json = report(3000, 300, "x", VM_OOM_REPORT_MAX);
	assert_int_equal(vm_oom_store_add(s, json, strlen(json), &err),
			 -EINVAL);
	free(json);
	vm_oom_store_close(s);

	/*
	 * Read back by a new store; a link named like a report, a file of
	 * another id's name and a leftover temporary file are passed over.
	 */
	snprintf(
		cmd, sizeof(cmd),
		"ln -s /etc/passwd '%s/oom-0000000000001-1.json' && "
		"echo '{\"id\":\"0000000000002-2\"}' >'%s/oom-0000000000003-3.json' && "
		"echo x >'%s/.tmp-oom-0000000000004-4.json'",
		path, path, path);
	assert_int_equal(system(cmd), 0);
	cfg.log = NULL;
	assert_int_equal(vm_oom_store_open(&cfg, &s, &err), 0);
	vm_oom_store_stats(s, &st);
	assert_int_equal(st.reports, 2);
	assert_string_equal(st.last_id, "0000000002002-202");
	list = vm_oom_store_list(s, &len);
	assert_non_null(list);
	assert_non_null(strstr(list, "\"id\":\"0000000002001-201\""));
	assert_null(strstr(list, "root:"));
	assert_null(strstr(list, "0000000000002-2"));
	free(list);
	snprintf(cmd, sizeof(cmd), "%s/.tmp-oom-0000000000004-4.json", path);
	assert_int_equal(access(cmd, F_OK), -1);
	vm_oom_store_close(s);

	/* A directory that is a link is refused. */
	snprintf(cmd, sizeof(cmd), "ln -s '%s' '%s/link'", path, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s/link", dir);
	cfg.dir = cmd;
	r = vm_oom_store_open(&cfg, &s, &err);
	assert_true(r == -ENOTDIR || r == -ELOOP);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void test_id(void **state)
{
	assert_true(vm_oom_id_valid("0000000001009-109"));
	assert_false(vm_oom_id_valid("0000000001009-"));
	assert_false(vm_oom_id_valid("-109"));
	assert_false(vm_oom_id_valid("1-2/../x"));
	assert_false(vm_oom_id_valid(""));
}

static void test_format(void **state)
{
	static const char new_kernel[] =
		"name: mark_victim\nID: 609\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
		"\tfield:int pid;\toffset:8;\tsize:4;\tsigned:1;\n"
		"\tfield:__data_loc char[] comm;\toffset:12;\tsize:4;\tsigned:0;\n"
		"\tfield:unsigned long total_vm;\toffset:16;\tsize:8;\tsigned:0;\n"
		"\tfield:unsigned long anon_rss;\toffset:24;\tsize:8;\tsigned:0;\n"
		"\tfield:unsigned long file_rss;\toffset:32;\tsize:8;\tsigned:0;\n"
		"\tfield:unsigned long shmem_rss;\toffset:40;\tsize:8;\tsigned:0;\n"
		"\tfield:uid_t uid;\toffset:48;\tsize:4;\tsigned:0;\n";
	static const char old_kernel[] =
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:int pid;\toffset:8;\tsize:4;\tsigned:1;\n";
	struct vm_oom_format f = { .id = 609 };
	struct vm_error err = { 0 };

	assert_int_equal(vm_oom_format_parse(new_kernel, &f, &err), 0);
	assert_int_equal(f.id, 609);
	assert_int_equal(f.pid, 8);
	assert_int_equal(f.comm_loc, 12);
	assert_int_equal(f.total_vm, 16);
	assert_int_equal(f.anon_rss, 24);
	assert_int_equal(f.shmem_rss, 40);
	assert_int_equal(f.uid, 48);
	assert_int_equal(vm_oom_format_parse(old_kernel, &f, &err), 0);
	assert_int_equal(f.pid, 8);
	assert_int_equal(f.comm_loc, 0);
	assert_int_equal(f.anon_rss, 0);
	assert_int_equal(
		vm_oom_format_parse(
			"\tfield:int common_pid;\toffset:4;\tsize:4;\n", &f,
			&err),
		-EINVAL);
}

static void test_cgroup_parsers(void **state)
{
	char v2[128], v1[128];
	struct vm_oom_cgroup cg = { 0 };

	vm_oom_cgroup_parse_proc("9:name=systemd:/\n4:memory:/a/b\n0::/u\n", v2,
				 v1, sizeof(v2));
	assert_string_equal(v2, "/u");
	assert_string_equal(v1, "/a/b");
	vm_oom_cgroup_parse_proc("5:cpu,memory:/c\n", v2, v1, sizeof(v2));
	assert_string_equal(v2, "");
	assert_string_equal(v1, "/c");
	vm_oom_cgroup_parse_mounts(
		"35 25 0:30 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
		"40 25 0:35 / /sys/fs/cgroup/memory rw,nosuid shared:15 - cgroup cgroup rw,memory\n"
		"41 25 0:36 / /sys/fs/cgroup/cpu rw,nosuid shared:16 - cgroup cgroup rw,cpu\n",
		v2, v1, sizeof(v2));
	assert_string_equal(v2, "/sys/fs/cgroup/unified");
	assert_string_equal(v1, "/sys/fs/cgroup/memory");
	vm_oom_cgroup_parse_events(
		"oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", &cg);
	assert_int_equal(cg.n_events, 3);
	assert_string_equal(cg.events[2].name, "oom_kill");
	assert_int_equal(cg.events[2].value, 3);
}

static void test_report_json(void **state)
{
	struct vm_memsnap_context c = { .path = "TopMemoryContext;Big",
					.bytes = 5 << 20 };
	struct vm_memsnap m = { .pid = 42,
				.unix_ms = 900,
				.query_id = -7ull,
				.n_contexts = 10,
				.v = &c,
				.n = 1 };
	struct vm_oom_victim v = { .pid = 42, .unix_ms = 1000 };
	struct vm_oom_cgroup cg = { .version = "v1",
				    .limited = true,
				    .limit = 1 << 20 };
	struct vm_oom_facts f = { .victim = &v,
				  .comm = "postgres",
				  .backend_type = "client backend",
				  .snapshot_source = VM_OOM_SNAPSHOT_KEPT,
				  .snap = &m,
				  .not_at_kill = "gone",
				  .cgroup = &cg };
	size_t len;
	char *json = vm_oom_report_json(&f, &len);

	assert_non_null(json);
	assert_non_null(strstr(json, "\"id\":\"0000000001000-42\""));
	assert_non_null(strstr(json, "\"query_id\":-7"));
	assert_non_null(
		strstr(json, "\"heaviest_context\":\"TopMemoryContext;Big\""));
	assert_non_null(strstr(json, "\"age_ms\":100"));
	assert_non_null(strstr(json, "\"limit_bytes\":1048576"));
	free(json);
}

/* A memory profile's samples of pid at ms: contexts Top and Top;Big. */
static void memory_samples(struct vm_samples *s, uint32_t pid, uint64_t ms,
			   uint64_t big)
{
	uint32_t top, name, pseudo;
	uint64_t ips[2];
	struct vm_process *p = vm_samples_get_process(s, pid);

	assert_non_null(p);
	snprintf(p->comm, sizeof(p->comm), "postgres");
	s->time_nanos = ms * 1000000;
	assert_int_equal(vm_samples_add_name(s, "TopMemoryContext", &top), 0);
	assert_int_equal(vm_samples_add_name(s, "Big", &name), 0);
	assert_int_equal(vm_samples_add_name(s, VM_MEM_FRAME_SHARED, &pseudo),
			 0);
	ips[0] = top;
	assert_int_equal(
		vm_samples_add(s, pid, pid, "postgres", 1, ips, 1, NULL, 0), 0);
	s->v[s->n - 1].value = 1000;
	s->v[s->n - 1].memctx_type = 1;
	ips[0] = name;
	ips[1] = top;
	assert_int_equal(
		vm_samples_add(s, pid, pid, "postgres", 1, ips, 2, NULL, 0), 0);
	s->v[s->n - 1].value = big;
	s->v[s->n - 1].memctx_type = 1;
	s->v[s->n - 1].query_id = 77;
	ips[0] = pseudo;
	assert_int_equal(
		vm_samples_add(s, pid, pid, "postgres", 1, ips, 1, NULL, 0), 0);
	s->v[s->n - 1].value = 5;
}

static void test_keep(void **state)
{
	struct vm_memkept *k = vm_memkept_new();
	struct vm_memsnap m;

	assert_non_null(k);
	for (uint32_t pid = 1; pid <= VM_MEMSNAP_KEPT_PIDS + 44; pid++) {
		struct vm_samples s = { 0 };

		memory_samples(&s, pid, 1000 + pid, 2000 + pid);
		assert_int_equal(vm_oom_keep_snapshot(k, &s), 0);
		vm_samples_free(&s);
	}
	/* Bounded: the oldest went. */
	assert_int_equal(vm_memkept_count(k), VM_MEMSNAP_KEPT_PIDS);
	assert_int_equal(vm_memkept_get(k, 44, &m), -ENOENT);
	assert_int_equal(vm_memkept_get(k, 45, &m), 0);
	assert_int_equal(m.unix_ms, 1045);
	assert_int_equal(m.n_contexts, 2);
	assert_int_equal(m.contexts_bytes, 1000 + 2045);
	assert_int_equal(m.shared, 5);
	assert_int_equal(m.query_id, 77);
	assert_string_equal(m.v[0].path, "TopMemoryContext;Big");
	assert_int_equal(m.v[0].bytes, 2045);
	vm_memsnap_free(&m);
	vm_memkept_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_bounds),
		cmocka_unit_test(test_id),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_cgroup_parsers),
		cmocka_unit_test(test_report_json),
		cmocka_unit_test(test_keep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
