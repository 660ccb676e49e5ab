// SPDX-License-Identifier: Apache-2.0
/*
 * test_perfdata.c - unit tests of the perf.data reader (agent/profile/perf/perfdata.c):
 * a real file perf recorded of the CPU burner (the fuzz seeds), and files
 * built here record by record to pin down the target selection (command
 * names, pid lineage across FORK, records out of file order), mappings
 * (inheritance, exec, overlaps, build ids from MMAP2 and HEADER_BUILD_ID),
 * call chain context markers, lost counts, and clean refusal of damaged
 * files (every truncation of a valid file).
 *
 * Also: synthesized forks, pipe mode, byte order, bad magic, oversized call
 * chains, the counter of a file being written fed in pieces; a --call-graph
 * dwarf sample decoded (the user registers of perf's mask, the copied stack
 * and its dynamic size) and refused when cut short anywhere; and a file perf
 * wrote with --call-graph dwarf of nofp read whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/profile/perf/perfdata.h"
#include "agent/profile/perf/perfdata_int.h"

/* --- a perf.data writer, just enough for the tests --- */

#define SAMPLE_TYPE                                            \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
	 PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_PERIOD)

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *v, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	memcpy(b->p + b->n, v, n);
	b->n += n;
}

static void put64(struct buf *b, uint64_t v)
{
	put(b, &v, 8);
}

static void put32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}

static void pad8(struct buf *b)
{
	static const uint8_t zero[8];

	put(b, zero, (8 - b->n % 8) % 8);
}

/* Finish a record started at `at`: fix its size, add the sample_id. */
static void rec_end(struct buf *b, size_t at, uint32_t pid, uint32_t tid,
		    uint64_t time, bool trailer)
{
	uint16_t size;

	pad8(b);
	if (trailer) {
		put32(b, pid);
		put32(b, tid);
		put64(b, time);
	}
	size = (uint16_t)(b->n - at);
	memcpy(b->p + at + 6, &size, 2);
}

static size_t rec_begin(struct buf *b, uint32_t type, uint16_t misc)
{
	size_t at = b->n;
	uint16_t zero = 0;

	put32(b, type);
	put(b, &misc, 2);
	put(b, &zero, 2);
	return at;
}

static void rec_comm(struct buf *b, uint32_t pid, uint32_t tid,
		     const char *comm, bool exec, uint64_t time)
{
	size_t at = rec_begin(b, PERF_RECORD_COMM,
			      exec ? PERF_RECORD_MISC_COMM_EXEC : 0);

	put32(b, pid);
	put32(b, tid);
	put(b, comm, strlen(comm) + 1);
	rec_end(b, at, pid, tid, time, true);
}

static void rec_task(struct buf *b, uint32_t type, uint32_t pid, uint32_t ppid,
		     uint32_t tid, uint32_t ptid, uint64_t time)
{
	size_t at = rec_begin(b, type, 0);

	put32(b, pid);
	put32(b, ppid);
	put32(b, tid);
	put32(b, ptid);
	put64(b, time);
	rec_end(b, at, pid, tid, time, true);
}

static void rec_mmap2(struct buf *b, uint32_t pid, uint64_t start, uint64_t len,
		      uint64_t pgoff, const char *name, const uint8_t *build_id,
		      uint64_t time)
{
	size_t at = rec_begin(b, PERF_RECORD_MMAP2,
			      build_id ? PERF_RECORD_MISC_MMAP_BUILD_ID : 0);
	uint8_t ids[24] = { 0 };

	put32(b, pid);
	put32(b, pid);
	put64(b, start);
	put64(b, len);
	put64(b, pgoff);
	if (build_id) {
		ids[0] = 20;
		memcpy(ids + 4, build_id, 20);
	}
	put(b, ids, 24);
	put32(b, PROT_READ | PROT_EXEC);
	put32(b, MAP_PRIVATE);
	put(b, name, strlen(name) + 1);
	rec_end(b, at, pid, pid, time, true);
}

static void rec_sample(struct buf *b, uint32_t pid, uint32_t tid, uint64_t time,
		       const uint64_t *chain, size_t nr)
{
	size_t at = rec_begin(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);

	put64(b, nr ? chain[nr - 1] : 0x1000); /* ip */
	put32(b, pid);
	put32(b, tid);
	put64(b, time);
	put64(b, 10101010); /* period */
	put64(b, nr);
	for (size_t i = 0; i < nr; i++)
		put64(b, chain[i]);
	rec_end(b, at, 0, 0, 0, false);
}

static void rec_lost(struct buf *b, uint64_t lost, uint64_t time)
{
	size_t at = rec_begin(b, PERF_RECORD_LOST, 0);

	put64(b, 1);
	put64(b, lost);
	rec_end(b, at, 0, 0, time, true);
}

/* Wrap the records of `data` in a file; with a HEADER_BUILD_ID for name. */
static struct buf make_file(const struct buf *data, const char *bid_name,
			    const uint8_t *bid)
{
	struct pd_file_header h = { .magic = PD_MAGIC,
				    .size = sizeof(h),
				    .attr_size =
					    sizeof(struct perf_event_attr) +
					    sizeof(struct pd_section) };
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE,
				     .size = sizeof(a),
				     .config = PERF_COUNT_SW_CPU_CLOCK,
				     .sample_type = SAMPLE_TYPE,
				     .sample_id_all = 1 };
	struct pd_section ids = { 0 }, feat;
	struct buf f = { 0 };

	h.attrs.offset = sizeof(h);
	h.attrs.size = h.attr_size;
	h.data.offset = h.attrs.offset + h.attrs.size;
	h.data.size = data->n;
	if (bid_name)
		h.features[0] = 1u << PD_FEAT_BUILD_ID;
	put(&f, &h, sizeof(h));
	put(&f, &a, sizeof(a));
	put(&f, &ids, sizeof(ids));
	put(&f, data->p, data->n);
	if (bid_name) {
		struct buf e = { 0 };
		size_t at = rec_begin(&e, 0, PD_MISC_BUILD_ID_SIZE);
		uint8_t id[24] = { 0 };

		put32(&e, UINT32_MAX); /* pid: host */
		memcpy(id, bid, 20);
		id[20] = 20;
		put(&e, id, 24);
		put(&e, bid_name, strlen(bid_name) + 1);
		rec_end(&e, at, 0, 0, 0, false);
		feat.offset = f.n + sizeof(feat);
		feat.size = e.n;
		put(&f, &feat, sizeof(feat));
		put(&f, e.p, e.n);
		free(e.p);
	}
	return f;
}

static int read_buf(const struct buf *f, const struct vm_perfdata_filter *flt,
		    struct vm_samples *out, struct vm_error *err)
{
	memset(out, 0, sizeof(*out));
	return vm_perfdata_read(f->p, f->n, flt, out, NULL, err);
}

static const struct vm_sample *find_tid(const struct vm_samples *s,
					uint32_t tid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].tid == tid)
			return &s->v[i];
	return NULL;
}

static const struct vm_process *find_proc(const struct vm_samples *s,
					  uint32_t pid)
{
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

static const uint64_t user_chain[] = { PERF_CONTEXT_USER, 0x401000, 0x402000 };

/* --- tests --- */

static void test_comm_filter_and_threads(void **state)
{
	struct buf d = { 0 }, f;
	struct vm_samples s;
	struct vm_error err = { 0 };

	rec_comm(&d, 10, 10, "postgres", false, 0);
	rec_comm(&d, 20, 20, "bash", false, 0);
	rec_task(&d, PERF_RECORD_FORK, 10, 10, 11, 10, 5); /* thread */
	rec_sample(&d, 10, 11, 6, user_chain, 3);
	rec_sample(&d, 20, 20, 7, user_chain, 3);
	rec_sample(&d, 10, 11, 8, user_chain, 3);
	f = make_file(&d, NULL, NULL);

	assert_int_equal(read_buf(&f, NULL, &s, &err), 0); /* postgres */
	assert_int_equal(s.n, 1);
	assert_int_equal(s.v[0].pid, 10);
	assert_int_equal(s.v[0].tid, 11);
	assert_string_equal(s.v[0].comm, "postgres");
	assert_int_equal(s.v[0].count, 2);
	assert_int_equal(s.v[0].n_user, 2);
	assert_int_equal(s.v[0].user_ips[0], 0x401000);
	assert_int_equal(s.n_procs, 1);
	vm_samples_free(&s);

	const char *bash[] = { "bash" };
	struct vm_perfdata_filter flt = { .comms = bash, .n_comms = 1 };

	assert_int_equal(read_buf(&f, &flt, &s, &err), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.v[0].pid, 20);
	vm_samples_free(&s);

	/* The agent and its perf are never profiled, whatever their name. */
	const pid_t self[] = { 20 };

	flt.exclude = self;
	flt.n_exclude = 1;
	assert_int_equal(read_buf(&f, &flt, &s, &err), 0);
	assert_int_equal(s.n, 0);
	vm_samples_free(&s);
	free(d.p);
	free(f.p);
}

/*
 * A pid target's child forked during the recording is a target, even when
 * its first sample lies in the file before the FORK (another CPU's buffer)
 * and its parent's mappings are all it has.
 */
static void test_pid_lineage_out_of_order(void **state)
{
	struct buf d = { 0 }, f;
	struct vm_samples s;
	struct vm_error err = { 0 };
	pid_t pids[] = { 100 };
	struct vm_perfdata_filter flt = { .pids = pids, .n_pids = 1 };
	const struct vm_process *child;

	rec_comm(&d, 100, 100, "server", false, 0);
	rec_mmap2(&d, 100, 0x400000, 0x10000, 0, "/usr/bin/server", NULL, 0);
	rec_sample(&d, 200, 200, 50, user_chain, 3); /* CPU 1, written first */
	rec_sample(&d, 300, 300, 51, user_chain, 3); /* not related */
	rec_comm(&d, 300, 300, "other", false, 0);
	rec_task(&d, PERF_RECORD_FORK, 200, 100, 200, 100, 40); /* CPU 0 */
	rec_task(&d, PERF_RECORD_EXIT, 200, 100, 200, 100, 60);
	f = make_file(&d, NULL, NULL);

	assert_int_equal(read_buf(&f, &flt, &s, &err), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.v[0].pid, 200);
	assert_string_equal(s.v[0].comm, "server");
	child = find_proc(&s, 200);
	assert_non_null(child);
	assert_true(child->exited);
	assert_int_equal(child->n_maps, 1);
	assert_string_equal(child->maps[0].path, "/usr/bin/server");
	assert_int_equal(child->maps[0].start, 0x400000);
	vm_samples_free(&s);
	free(d.p);
	free(f.p);
}

/*
 * perf writes FORK records at time 0 from /proc for processes that existed
 * before it started; such a child has its own MMAP records and must not
 * inherit its parent's mappings (it has usually exec'd since).
 */
static void test_synthesized_fork_keeps_own_maps(void **state)
{
	struct buf d = { 0 }, f;
	struct vm_samples s;
	struct vm_error err = { 0 };
	const struct vm_process *p;

	rec_comm(&d, 1, 1, "bash", false, 0);
	rec_mmap2(&d, 1, 0x400000, 0x1000, 0, "/usr/bin/bash", NULL, 0);
	rec_task(&d, PERF_RECORD_FORK, 2, 1, 2, 1, 0);
	rec_comm(&d, 2, 2, "postgres", false, 0);
	rec_mmap2(&d, 2, 0x500000, 0x1000, 0, "/usr/bin/postgres", NULL, 0);
	rec_sample(&d, 2, 2, 5, user_chain, 3);
	f = make_file(&d, NULL, NULL);

	assert_int_equal(read_buf(&f, NULL, &s, &err), 0);
	p = find_proc(&s, 2);
	assert_non_null(p);
	assert_int_equal(p->n_maps, 1);
	assert_string_equal(p->maps[0].path, "/usr/bin/postgres");
	vm_samples_free(&s);
	free(d.p);
	free(f.p);
}

/* The name at sampling time decides, as the eBPF filter's does. */
static void test_comm_changes_and_exec(void **state)
{
	struct buf d = { 0 }, f;
	struct vm_samples s;
	struct vm_error err = { 0 };
	const struct vm_process *p;

	rec_comm(&d, 30, 30, "sh", false, 0);
	rec_mmap2(&d, 30, 0x1000, 0x1000, 0, "/bin/sh", NULL, 0);
	rec_sample(&d, 30, 30, 10, user_chain, 3); /* sh: dropped */
	rec_comm(&d, 30, 30, "postgres", true, 20);
	rec_mmap2(&d, 30, 0x5000, 0x1000, 0, "/usr/lib/postgresql/postgres",
		  NULL, 21);
	rec_sample(&d, 30, 30, 30, user_chain, 3);
	f = make_file(&d, NULL, NULL);

	assert_int_equal(read_buf(&f, NULL, &s, &err), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.v[0].count, 1);
	p = find_proc(&s, 30);
	assert_non_null(p);
	assert_false(p->exited);
	assert_int_equal(p->n_maps, 1); /* /bin/sh went with the exec */
	assert_string_equal(p->maps[0].path, "/usr/lib/postgresql/postgres");
	vm_samples_free(&s);
	free(d.p);
	free(f.p);
}

static void test_mappings_overlap_and_build_ids(void **state)
{
	static const uint8_t id_a[20] = { 0xaa, 1, 2, 3 };
	static const uint8_t id_lib[20] = { 0x11, 0x22 };
	struct buf d = { 0 }, f;
	struct vm_samples s;
	struct vm_error err = { 0 };
	const struct vm_process *p;
	const struct vm_mapping *lib = NULL, *head = NULL, *tail = NULL,
				*mid = NULL;
	struct vm_perfdata_stats st;

	rec_comm(&d, 40, 40, "postgres", false, 0);
	rec_mmap2(&d, 40, 0x10000, 0x30000, 0x1000, "/old", NULL, 0);
	rec_mmap2(&d, 40, 0x20000, 0x10000, 0, "/new", id_a, 1); /* middle */
	rec_mmap2(&d, 40, 0x70000, 0x1000, 0, "/lib/libx.so", NULL, 2);
	rec_mmap2(&d, 40, 0x80000, 0x1000, 0, "//anon", NULL, 3);
	rec_sample(&d, 40, 40, 10, user_chain, 3);
	f = make_file(&d, "/lib/libx.so", id_lib);

	memset(&s, 0, sizeof(s));
	assert_int_equal(vm_perfdata_read(f.p, f.n, NULL, &s, &st, &err), 0);
	assert_int_equal(st.build_ids, 1);
	assert_int_equal(st.kept, 1);
	p = find_proc(&s, 40);
	assert_non_null(p);
	assert_int_equal(p->n_maps, 5);
	for (size_t i = 0; i < p->n_maps; i++) {
		const struct vm_mapping *m = &p->maps[i];

		if (!m->path)
			continue;
		if (!strcmp(m->path, "/lib/libx.so"))
			lib = m;
		else if (!strcmp(m->path, "/new"))
			mid = m;
		else if (m->start == 0x10000)
			head = m;
		else if (m->start == 0x30000)
			tail = m;
	}
	assert_non_null(lib);
	assert_int_equal(lib->build_id_len, 20);
	assert_memory_equal(lib->build_id, id_lib, 20);
	assert_non_null(mid);
	assert_int_equal(mid->build_id_len, 20);
	assert_memory_equal(mid->build_id, id_a, 20);
	assert_non_null(head);
	assert_int_equal(head->end, 0x20000);
	assert_int_equal(head->pgoff, 0x1000);
	assert_non_null(tail);
	assert_int_equal(tail->end, 0x40000);
	assert_int_equal(tail->pgoff, 0x1000 + 0x20000);
	vm_samples_free(&s);
	free(d.p);
	free(f.p);
}

static void test_callchain_contexts_and_lost(void **state)
{
	static const uint64_t chain[] = {
		PERF_CONTEXT_KERNEL,
		0xffffffff81000010,
		0xffffffff81000020,
		PERF_CONTEXT_USER,
		0x401000,
		0x402000,
		PERF_CONTEXT_GUEST_KERNEL,
		0xdead,
	};
	struct buf d = { 0 }, f;
	struct vm_samples s;
	struct vm_error err = { 0 };
	const struct vm_sample *v;

	rec_comm(&d, 50, 50, "postgres", false, 0);
	rec_comm(&d, 50, 51, "postgres", false, 0);
	rec_sample(&d, 50, 50, 10, chain, 8);
	rec_sample(&d, 50, 51, 11, user_chain, 3);
	rec_lost(&d, 7, 12);
	f = make_file(&d, NULL, NULL);

	assert_int_equal(read_buf(&f, NULL, &s, &err), 0);
	assert_int_equal(s.n, 2);
	v = find_tid(&s, 50);
	assert_non_null(v);
	assert_int_equal(v->n_kernel, 2);
	assert_int_equal(v->kernel_ips[0], 0xffffffff81000010);
	assert_int_equal(v->kernel_ips[1], 0xffffffff81000020);
	assert_int_equal(v->n_user, 2);
	assert_int_equal(v->user_ips[1], 0x402000);
	assert_int_equal(s.lost_samples, 7);
	vm_samples_free(&s);
	free(d.p);
	free(f.p);
}

static void expect_bad(const uint8_t *p, size_t n, const char *words)
{
	struct vm_samples s = { 0 };
	struct vm_error err = { 0 };

	assert_int_equal(vm_perfdata_read(p, n, NULL, &s, NULL, &err),
			 -EBADMSG);
	assert_non_null(strstr(err.msg, words));
	vm_samples_free(&s);
}

static void test_damaged_files(void **state)
{
	struct buf d = { 0 }, f;
	uint64_t v;

	rec_comm(&d, 10, 10, "postgres", false, 0);
	rec_sample(&d, 10, 10, 6, user_chain, 3);
	f = make_file(&d, "/x", (const uint8_t *)"01234567890123456789");

	expect_bad(f.p, 8, "too short");
	/* Every truncation fails cleanly: never a crash, always a reason. */
	for (size_t n = 16; n < f.n; n++) {
		struct vm_samples s = { 0 };
		struct vm_error err = { 0 };

		assert_int_equal(vm_perfdata_read(f.p, n, NULL, &s, NULL, &err),
				 -EBADMSG);
		assert_true(err.msg[0] != 0);
		vm_samples_free(&s);
	}
	v = __builtin_bswap64(PD_MAGIC);
	memcpy(f.p, &v, 8);
	expect_bad(f.p, f.n, "other byte order");
	memcpy(f.p, "NOTPERF!", 8);
	expect_bad(f.p, f.n, "PERFILE2");
	v = PD_MAGIC;
	memcpy(f.p, &v, 8);
	v = 16;
	memcpy(f.p + 8, &v, 8);
	expect_bad(f.p, f.n, "pipe mode");
	free(f.p);

	/* A record whose size is 0 would loop forever; one too long. */
	f = make_file(&d, NULL, NULL);
	size_t rec = sizeof(struct pd_file_header) + 144;

	f.p[rec + 6] = 0;
	f.p[rec + 7] = 0;
	expect_bad(f.p, f.n, "bytes long");
	free(f.p);
	f = make_file(&d, NULL, NULL);
	f.p[rec + 7] = 0x40;
	expect_bad(f.p, f.n, "bytes long");
	free(f.p);
	/* A call chain longer than its record. */
	f = make_file(&d, NULL, NULL);
	size_t sample = rec + pd_u16(f.p + rec + 6);

	v = 1000;
	memcpy(f.p + sample + 8 + 32, &v, 8);
	expect_bad(f.p, f.n, "inconsistent");
	free(f.p);
	free(d.p);
}

static int map_file(const char *name, uint8_t **p, size_t *n)
{
	char path[4096];
	const char *src = getenv("SRC");
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/tests/fuzz/seeds/fuzz_perfdata/%s",
		 src ? src : ".", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return -1;
	*n = (size_t)st.st_size;
	*p = mmap(NULL, *n, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	return *p == MAP_FAILED ? -1 : 0;
}

/*
 * Files perf 6.1 wrote of the CPU burner:
 *   perf record -e cpu-clock -g -F 99 -N [--buildid-mmap] -o FILE --
 *       burn --threads 2 --seconds 0.3 --comm burner
 * without --buildid-mmap the build ids are in HEADER_BUILD_ID, with it in
 * the MMAP2 records.
 */
static void check_real(const char *name, bool header_build_ids)
{
	const char *comms[] = { "burner" };
	struct vm_perfdata_filter flt = { .comms = comms, .n_comms = 1 };
	struct vm_samples s = { 0 };
	struct vm_error err = { 0 };
	struct vm_perfdata_stats st;
	bool burn_has_id = false;
	uint64_t total = 0;
	uint8_t *p = NULL;
	size_t n = 0;

	if (map_file(name, &p, &n) < 0) {
		print_message("seed %s not found; run from the source tree\n",
			      name);
		fail();
	}
	assert_int_equal(vm_perfdata_read(p, n, &flt, &s, &st, &err), 0);
	assert_true(st.kept > 10);
	assert_int_equal(st.kept, st.samples); /* only burn ran */
	assert_int_equal(header_build_ids, st.build_ids > 0);
	for (size_t i = 0; i < s.n; i++) {
		assert_string_equal(s.v[i].comm, "burner");
		assert_true(s.v[i].n_user > 2); /* frame pointers walked */
		total += s.v[i].count;
	}
	assert_int_equal(total, st.kept);
	assert_int_equal(s.n_procs, 1);
	for (size_t i = 0; i < s.procs[0].n_maps; i++) {
		const struct vm_mapping *m = &s.procs[0].maps[i];

		if (m->path && strstr(m->path, "/programs/burn"))
			burn_has_id = m->build_id_len == 20;
	}
	assert_true(burn_has_id);
	vm_samples_free(&s);

	/* Nothing else matches. */
	comms[0] = "nosuch";
	assert_int_equal(vm_perfdata_read(p, n, &flt, &s, &st, &err), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(s.n_procs, 0);
	vm_samples_free(&s);
	munmap(p, n);
}

/*
 * Fed piece by piece, as perf writes it, the counter finds about the same
 * count (in file order, a sample can come before the COMM naming its
 * thread, which the time-sorted full read sees first).
 */
static void test_counter_in_pieces(void **state)
{
	const char *comms[] = { "burner" };
	struct vm_perfdata_filter flt = { .comms = comms, .n_comms = 1 };
	struct vm_samples s = { 0 };
	struct vm_perfdata_stats st;
	struct vm_perfdata_counter *c;
	uint8_t *p = NULL, junk[4096];
	size_t n = 0, step = 1;
	uint64_t count = 0;

	assert_int_equal(map_file("burn-header-build-id.data", &p, &n), 0);
	assert_int_equal(vm_perfdata_read(p, n, &flt, &s, &st, NULL), 0);
	vm_samples_free(&s);
	assert_int_equal(vm_perfdata_counter_new(&flt, &c), 0);
	for (size_t off = 0; off < n; off += step, step = step * 3 % 997 + 1) {
		size_t len = off + step <= n ? step : n - off;

		count = vm_perfdata_counter_feed(c, p + off, len);
		assert_true(count <= st.kept);
	}
	assert_true(count + 2 >= st.kept);
	vm_perfdata_counter_free(c);

	/* Not perf.data: nothing counted, nothing broken. */
	memset(junk, 0x5a, sizeof(junk));
	assert_int_equal(vm_perfdata_counter_new(&flt, &c), 0);
	assert_int_equal(vm_perfdata_counter_feed(c, junk, sizeof(junk)), 0);
	assert_int_equal(vm_perfdata_counter_feed(c, p, n), 0);
	vm_perfdata_counter_free(c);
	munmap(p, n);
}

/*
 * A sample of --call-graph dwarf: the user registers of the mask perf
 * asks (sample_regs_user), then the copied stack and its dynamic size;
 * and the same cut short anywhere is refused, never read past.
 */
static void test_regs_and_stack_user(void **state)
{
	const uint64_t mask = 0xff0fff; /* perf's x86-64 mask */
	uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN |
		      PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	uint8_t rec[8 + 8 + 8 + 16 + 8 + 8 * 20 + 8 + 64 + 8];
	struct pd_layout l;
	struct pd_sample s;
	size_t off = 8, nregs = (size_t)__builtin_popcountll(mask);
	uint64_t v;

	(void)state;
	memset(rec, 0, sizeof(rec));
	pd_layout_init(&l, st, 0, false, mask);
#define PUT(x) (v = (x), memcpy(rec + off, &v, 8), off += 8)
	PUT(0x401000); /* ip */
	PUT(7ULL << 32 | 7); /* pid, tid */
	PUT(1); /* callchain: nr */
	PUT(PERF_CONTEXT_KERNEL);
	PUT(2); /* regs: abi 64 */
	for (size_t i = 0; i < nregs; i++)
		PUT(i == 6 ? 0x7ffd00000100 : /* bp, bit 6 */
		    i == 7 ? 0x7ffd00000000 : /* sp, bit 7 */
		    i == 8 ? 0x401234 : /* ip, bit 8 */
			     0);
	PUT(64); /* stack: size */
	for (int i = 0; i < 8; i++)
		PUT(0x1111111111111111ULL * (unsigned)i);
	PUT(48); /* dyn_size: what was really copied */
#undef PUT
	memcpy(rec, &(uint32_t){ PERF_RECORD_SAMPLE }, 4);
	memcpy(rec + 6, &(uint16_t){ (uint16_t)off }, 2);
	assert_int_equal(pd_decode_sample(&l, rec, off, &s), 0);
	assert_true(s.has_regs);
	assert_int_equal(s.user_ip, 0x401234);
	assert_int_equal(s.user_sp, 0x7ffd00000000);
	assert_int_equal(s.user_bp, 0x7ffd00000100);
	assert_int_equal(s.stack_size, 48);
	assert_int_equal(pd_u64(s.stack + 8), 0x1111111111111111ULL);
	for (size_t cut = 8; cut < off; cut += 8)
		assert_int_equal(pd_decode_sample(&l, rec, cut, &s), -EBADMSG);
}

/*
 * A file perf 6.1 wrote with --call-graph dwarf,256 of tests/programs/nofp
 * (-F 49 -B, 0.2 s): read whole, each sample has its user stack (walked
 * from the copied bytes; how far depends on finding the binary now).
 */
static void test_real_dwarf(void **state)
{
	const char *comms[] = { "nofp" };
	struct vm_perfdata_filter flt = { .comms = comms, .n_comms = 1 };
	struct vm_samples s = { 0 };
	struct vm_perfdata_stats st;
	uint8_t *p = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(map_file("nofp-dwarf.data", &p, &n), 0);
	assert_int_equal(vm_perfdata_read(p, n, &flt, &s, &st, NULL), 0);
	assert_true(st.kept >= 5);
	for (size_t i = 0; i < s.n; i++)
		assert_true(s.v[i].n_user >= 1);
	vm_samples_free(&s);
	munmap(p, n);
}

static void test_real_header_build_id(void **state)
{
	check_real("burn-header-build-id.data", true);
}

static void test_real_mmap2_build_id(void **state)
{
	check_real("burn-mmap2-build-id.data", false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_comm_filter_and_threads),
		cmocka_unit_test(test_pid_lineage_out_of_order),
		cmocka_unit_test(test_synthesized_fork_keeps_own_maps),
		cmocka_unit_test(test_comm_changes_and_exec),
		cmocka_unit_test(test_mappings_overlap_and_build_ids),
		cmocka_unit_test(test_callchain_contexts_and_lost),
		cmocka_unit_test(test_damaged_files),
		cmocka_unit_test(test_real_header_build_id),
		cmocka_unit_test(test_real_mmap2_build_id),
		cmocka_unit_test(test_counter_in_pieces),
		cmocka_unit_test(test_regs_and_stack_user),
		cmocka_unit_test(test_real_dwarf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
