// SPDX-License-Identifier: Apache-2.0
/*
 * test_symbolize.c - unit tests of symbolization and encoding on real
 * files, without BPF: this test program captures itself from /proc
 * (proc.c), a sample of addresses of its own functions is symbolized
 * (elf.c, symcache.c, symbolize.c) and encoded; the pprof is unpacked
 * again with protobuf-c and checked field by field against docs/profiler.md's
 * "The pprof we emit" (default_sample_type included); the folded text and
 * the gzip are checked too, and the sample types and labels of a memory
 * snapshot and a faults profile.  The symbol cache's bounds: a binary whose
 * symbols outgrow one binary's bound, or what the cache has left, is kept
 * without symbols and listed with the reason.
 *
 * Every frame is named, counted by where its name came from; an address 0 is
 * no frame.  Two copies of the process share the frames named in their one
 * output mapping of the executable, and a third whose file there is another
 * (another inode) is named from its own file.  Off-CPU and wall-clock
 * profiles: their sample and period types, blocks worth their time, and the
 * thread_state, sched_state, wait_event (none for a version without a table)
 * and query_id labels.  A memory snapshot: frames that are names, Go's heap
 * sample types with the bytes first, a context's type and ident as labels,
 * its notes as a comment, folded stacks in bytes.  An entry a later run
 * does not use is dropped to make room.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "agent/encode/encode.h"
#include "agent/samples/fault_maps.h"
#include "agent/samples/pg_memctx.h"
#include "agent/samples/proc.h"
#include "agent/symbolize/symbolize.h"
#include "agent/symbolize/symcache.h"
#include "hostile_elf.h"
#include "proto/profile.pb-c.h"

__attribute__((noinline)) int vmtest_outer_function(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) int vmtest_inner_function(int x)
{
	return x * 5 + 2;
}

/* A sample of this process: leaf vmtest_inner, caller vmtest_outer. */
/* The file readers, as the agent's context holds them: the first capture's. */
static struct vm_iopool *pool;

static void make_samples(struct vm_samples *s, struct vm_proc_files *files)
{
	uint64_t ips[3] = {
		(uint64_t)(uintptr_t)vmtest_inner_function + 4,
		/* a return address: one past a call inside the function */
		(uint64_t)(uintptr_t)vmtest_outer_function + 5,
		0x10, /* nowhere: [unknown] */
	};
	uint64_t kips[1] = { 0xffffffff00000000ull };

	memset(s, 0, sizeof(*s));
	memset(files, 0, sizeof(*files));
	if (!pool)
		pool = vm_iopool_new(); /* kept till the test ends */
	files->iopool = pool;
	assert_int_equal(vm_proc_capture(s, files, getpid(), "/proc", NULL), 0);
	assert_int_equal(vm_samples_add(s, getpid(), getpid(), "unit", 3, ips,
					3, kips, 1),
			 0);
	assert_int_equal(vm_samples_add(s, getpid(), getpid() + 1, "unit", 2,
					ips, 3, NULL, 0),
			 0);
	assert_int_equal(vm_samples_add(s, 424242, 424242, "lost", 1, NULL, 0,
					NULL, 0),
			 0);
	s->v[2].lost = VM_SAMPLE_LOST_USER; /* e.g. -EEXIST */
	s->frequency = 100;
	s->time_nanos = 1700000000000000000ull;
	s->duration_nanos = 2000000000ull;
	s->lost_stacks = 7;
}

static void test_capture_self(void **state)
{
	struct vm_samples s;
	struct vm_proc_files files;
	const struct vm_process *p;
	bool exe = false;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	(void)state;
	assert_true(n > 0);
	self[n] = '\0';
	make_samples(&s, &files);
	p = vm_samples_find_process(&s, getpid());
	assert_non_null(p);
	assert_true(p->n_maps > 0);
	assert_non_null(p->title);
	for (size_t i = 0; i < p->n_maps; i++)
		if (p->maps[i].path && !strcmp(p->maps[i].path, self)) {
			exe = true;
			/* held open, so it survives the process */
			assert_non_null(p->maps[i].open_path);
			assert_non_null(
				strstr(p->maps[i].open_path, "/proc/self/fd/"));
		}
	assert_true(exe);
	assert_true(s.n_held_fds > 0);
	/* A process that is gone is said so. */
	assert_int_equal(vm_proc_capture(&s, &files, 1, "/nonexistent", NULL),
			 -ESRCH);
	vm_samples_free(&s);
	vm_proc_files_free(&files);
}

/*
 * A cache of the test's own, bounded to total for every binary and
 * per_file for one (0: the defaults), as the agent's command makes one.
 */
static struct vm_symcache *new_cache(struct vm_binaries **home, size_t total,
				     size_t per_file)
{
	struct vm_binaries_limits lim = { .max_bytes = total };
	struct vm_symcache_config cfg = { .per_file_max_bytes = per_file };
	struct vm_symcache *sc;

	*home = vm_binaries_new(&lim);
	assert_non_null(*home);
	sc = vm_symcache_new(*home, &cfg);
	assert_non_null(sc);
	return sc;
}

static void free_cache(struct vm_binaries *home, struct vm_symcache *sc)
{
	vm_symcache_free(sc);
	vm_binaries_free(home);
}

static void test_symbolize_and_cache(void **state)
{
	struct vm_samples s;
	struct vm_proc_files files;
	struct vm_symbolized y;
	struct vm_symcache_stats st, again;
	struct vm_binaries *home;
	struct vm_symcache *sc = new_cache(&home, 0, 0);

	(void)state;
	make_samples(&s, &files);
	assert_int_equal(vm_symbolize(sc, &s, &y, NULL), 0);
	assert_int_equal(y.n_stacks, 3);
	/* kernel frame first, then user frames leaf first */
	assert_int_equal(y.stacks[0].n_frames, 4);
	assert_string_equal(y.stacks[0].frames[1].function,
			    "vmtest_inner_function");
	assert_string_equal(y.stacks[0].frames[2].function,
			    "vmtest_outer_function");
	assert_string_equal(y.stacks[0].frames[3].function, "[unknown]");
	assert_int_equal(y.stacks[0].frames[3].source, VM_NAME_ADDRESS);
	assert_int_equal(y.stacks[0].frames[3].mapping, 0);
	/* every frame is named, and counted by where its name came from */
	assert_int_equal(y.frames_total, 4 + 3 + 1);
	assert_int_equal(y.frames_by[VM_NAME_SYMBOL] +
				 y.frames_by[VM_NAME_DEBUG_FILE] +
				 y.frames_by[VM_NAME_FUNCTION_START] +
				 y.frames_by[VM_NAME_ADDRESS],
			 y.frames_total);
	assert_true(y.frames_by[VM_NAME_SYMBOL] >= 5);
	assert_true(y.mappings[y.stacks[0].frames[0].mapping - 1].kernel);
	/* the kernel mapping is the last: pprof takes the first as main */
	assert_true(y.mappings[y.n_mappings - 1].kernel);
	assert_false(y.mappings[0].kernel);
	assert_int_equal(y.stacks[2].n_frames, 1);
	assert_string_equal(y.stacks[2].frames[0].function,
			    "[lost user stack]");
	assert_null(y.stacks[2].proc);
	vm_symbolized_free(&y);
	vm_symcache_stats(sc, &st);
	assert_true(st.entries >= 1);
	assert_true(st.misses >= 1);

	/* Again: every binary comes from the cache. */
	assert_int_equal(vm_symbolize(sc, &s, &y, NULL), 0);
	vm_symcache_stats(sc, &again);
	assert_true(again.hits > st.hits);
	vm_symbolized_free(&y);
	vm_samples_free(&s);
	vm_proc_files_free(&files);
	free_cache(home, sc);
}

/*
 * Pid twin's copy of this process's mappings, the executable's with a
 * build id of its own (so that twins are one output mapping, apart from
 * this process's); with other_fd, the executable's is another file at
 * the same place (another inode, opened through other_fd).
 */
static void copy_process(struct vm_samples *s, uint32_t twin, int other_fd)
{
	const struct vm_process *self;
	struct vm_process *p = vm_samples_get_process(s, twin);
	uint64_t f = (uint64_t)(uintptr_t)vmtest_inner_function;
	char held[64];

	assert_non_null(p);
	p->exited = true; /* its files by their paths, not its root */
	self = vm_samples_find_process(s, getpid());
	for (size_t i = 0; i < self->n_maps; i++) {
		struct vm_mapping m = self->maps[i];

		if (f >= m.start && f < m.end) {
			memset(m.build_id, 0x5a, sizeof(m.build_id));
			m.build_id_len = 20;
		}
		if (other_fd >= 0 && f >= m.start && f < m.end) {
			snprintf(held, sizeof(held), "/proc/self/fd/%d",
				 other_fd);
			m.open_path = held;
			m.ino ^= 1;
		}
		assert_int_equal(vm_process_add_mapping(p, &m), 0);
	}
}

/*
 * Processes that map the same file at the same place (a postmaster's
 * forked backends) share the frames named there; one whose file there is
 * another (another inode) has its frames named from its own file, not
 * from what the first process's file says.
 */
static void test_shared_between_processes(void **state)
{
	uint64_t ips[1] = { (uint64_t)(uintptr_t)vmtest_inner_function + 4 };
	struct vm_samples s;
	struct vm_proc_files files;
	struct vm_symbolized y;
	int fd = open("/bin/true", O_RDONLY | O_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	make_samples(&s, &files);
	copy_process(&s, 1000001, -1);
	copy_process(&s, 1000002, fd);
	assert_int_equal(vm_samples_add(&s, 1000001, 1000001, "unit", 1, ips, 1,
					NULL, 0),
			 0);
	assert_int_equal(vm_samples_add(&s, 1000002, 1000002, "unit", 1, ips, 1,
					NULL, 0),
			 0);
	assert_int_equal(vm_symbolize(NULL, &s, &y, NULL), 0);
	assert_int_equal(y.n_stacks, 5);
	assert_string_equal(y.stacks[3].frames[0].function,
			    "vmtest_inner_function");
	/* One output mapping, two files: nothing shared between them. */
	assert_int_equal(y.stacks[3].frames[0].mapping,
			 y.stacks[4].frames[0].mapping);
	assert_string_not_equal(y.stacks[4].frames[0].function,
				"vmtest_inner_function");
	vm_symbolized_free(&y);
	vm_samples_free(&s);
	vm_proc_files_free(&files);
	close(fd);
}

static const char *str(const Perftools__Profiles__Profile *p, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < p->n_string_table);
	return p->string_table[i];
}

static const char *label(const Perftools__Profiles__Profile *p,
			 const Perftools__Profiles__Sample *s, const char *key,
			 int64_t *num)
{
	for (size_t i = 0; i < s->n_label; i++)
		if (!strcmp(str(p, s->label[i]->key), key)) {
			if (num)
				*num = s->label[i]->num;
			return str(p, s->label[i]->str);
		}
	return NULL;
}

static void test_pprof(void **state)
{
	struct vm_samples s;
	struct vm_proc_files files;
	struct vm_symbolized y;
	Perftools__Profiles__Profile *p;
	void *buf;
	size_t len;
	int64_t num = 0;
	bool found_inner = false, found_build_id = false;

	(void)state;
	make_samples(&s, &files);
	assert_int_equal(vm_symbolize(NULL, &s, &y, NULL), 0);
	assert_int_equal(vm_pprof_encode(&y, &buf, &len, NULL), 0);
	p = perftools__profiles__profile__unpack(NULL, len, buf);
	assert_non_null(p);

	assert_string_equal(p->string_table[0], "");
	assert_int_equal(p->n_sample_type, 2);
	assert_string_equal(str(p, p->sample_type[0]->type), "samples");
	assert_string_equal(str(p, p->sample_type[0]->unit), "count");
	assert_string_equal(str(p, p->sample_type[1]->type), "cpu");
	assert_string_equal(str(p, p->sample_type[1]->unit), "nanoseconds");
	assert_string_equal(str(p, p->period_type->type), "cpu");
	assert_string_equal(str(p, p->period_type->unit), "nanoseconds");
	/* What viewers show first: the time (speedscope, pprof -http). */
	assert_string_equal(str(p, p->default_sample_type), "cpu");
	assert_int_equal(p->period, 10000000);
	assert_int_equal(p->time_nanos, 1700000000000000000ll);
	assert_int_equal(p->duration_nanos, 2000000000ll);
	assert_int_equal(p->n_comment, 2);
	assert_non_null(strstr(str(p, p->comment[0]), "7 stacks lost"));
	assert_non_null(
		strstr(str(p, p->comment[1]), "frames named by symbols"));

	assert_int_equal(p->n_sample, 3);
	assert_int_equal(p->sample[0]->value[0], 3);
	assert_int_equal(p->sample[0]->value[1], 30000000);
	assert_int_equal(p->sample[0]->n_location_id, 4);
	assert_string_equal(label(p, p->sample[0], "comm", NULL), "unit");
	label(p, p->sample[0], "pid", &num);
	assert_int_equal(num, getpid());
	assert_null(label(p, p->sample[0], "backend_type", NULL));
	/* a sample whose stack was lost keeps its count under a marker */
	assert_int_equal(p->sample[2]->n_location_id, 1);

	for (size_t i = 0; i < p->n_location; i++) {
		const Perftools__Profiles__Location *l = p->location[i];

		assert_int_equal(l->id, i + 1);
		/* no location without a function */
		assert_int_equal(l->n_line, 1);
		assert_true(l->line[0]->function_id > 0);
		if (l->n_line &&
		    !strcmp(str(p,
				p->function[l->line[0]->function_id - 1]->name),
			    "vmtest_inner_function")) {
			const Perftools__Profiles__Mapping *m =
				p->mapping[l->mapping_id - 1];

			found_inner = true;
			assert_int_equal(
				l->address,
				(uint64_t)(uintptr_t)vmtest_inner_function + 4);
			assert_true(l->address >= m->memory_start &&
				    l->address < m->memory_limit);
			found_build_id = str(p, m->build_id)[0] != '\0';
			assert_true(m->has_functions);
		}
	}
	assert_true(found_inner);
	assert_true(found_build_id);
	assert_string_equal(str(p, p->mapping[p->n_mapping - 1]->filename),
			    "[kernel.kallsyms]");

	perftools__profiles__profile__free_unpacked(p, NULL);
	free(buf);
	vm_symbolized_free(&y);
	vm_samples_free(&s);
	vm_proc_files_free(&files);
}

/* A 0 in a stack, where a frame-pointer walk stopped, is no frame. */
static void test_zero_is_no_frame(void **state)
{
	uint64_t ips[3] = {
		(uint64_t)(uintptr_t)vmtest_inner_function + 4,
		0,
		(uint64_t)(uintptr_t)vmtest_outer_function + 5,
	};
	uint64_t kips[1] = { 0 };
	struct vm_samples s = { 0 };
	struct vm_symbolized y;

	(void)state;
	assert_int_equal(vm_samples_add(&s, 424243, 424243, "zero", 1, ips, 3,
					kips, 1),
			 0);
	assert_int_equal(vm_symbolize(NULL, &s, &y, NULL), 0);
	assert_int_equal(y.stacks[0].n_frames, 2);
	assert_int_equal(y.stacks[0].frames[0].addr, ips[0]);
	assert_int_equal(y.stacks[0].frames[1].addr, ips[2]);
	vm_symbolized_free(&y);
	vm_samples_free(&s);
}

static void test_folded_and_gzip(void **state)
{
	struct vm_samples s;
	struct vm_proc_files files;
	struct vm_symbolized y;
	char *text, out[65536];
	void *gz;
	size_t len, gz_len;
	z_stream z = { 0 };

	(void)state;
	make_samples(&s, &files);
	assert_int_equal(vm_symbolize(NULL, &s, &y, NULL), 0);
	assert_int_equal(vm_folded_encode(&y, (void **)&text, &len, NULL), 0);
	assert_int_equal(strlen(text), len);
	/* two threads, one stack without the kernel frame and one with */
	assert_non_null(strstr(text, "unit;[unknown];vmtest_outer_function;"
				     "vmtest_inner_function 2\n"));
	assert_non_null(strstr(text, "unit;[unknown];vmtest_outer_function;"
				     "vmtest_inner_function;"));
	assert_non_null(strstr(text, "lost;[lost_user_stack] 1\n"));

	assert_int_equal(vm_gzip(text, len, &gz, &gz_len, NULL), 0);
	assert_true(gz_len > 18);
	assert_int_equal(((unsigned char *)gz)[0], 0x1f);
	assert_int_equal(((unsigned char *)gz)[1], 0x8b);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = gz;
	z.avail_in = gz_len;
	z.next_out = (Bytef *)out;
	z.avail_out = sizeof(out);
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	assert_int_equal(z.total_out, len);
	assert_memory_equal(out, text, len);
	inflateEnd(&z);

	free(gz);
	free(text);
	vm_symbolized_free(&y);
	vm_samples_free(&s);
	vm_proc_files_free(&files);
}

/*
 * Off-CPU and wall-clock profiles: their sample and period types, a block
 * worth its time, CPU samples the period, and the labels of PostgreSQL
 * and of the thread's state.
 */
static void test_pprof_kinds(void **state)
{
	struct vm_samples s;
	struct vm_proc_files files;
	struct vm_symbolized y;
	Perftools__Profiles__Profile *p;
	void *buf;
	size_t len;

	(void)state;
	make_samples(&s, &files);
	s.kind = VM_KIND_WALL;
	vm_samples_get_process(&s, getpid())->pg_major = 15;
	s.v[1].state = VM_STATE_BLOCKED;
	s.v[1].sched_state = VM_SCHED_SLEEPING;
	s.v[1].value = 1500000000ull;
	s.v[1].wait_event = 0x0300000A; /* PG_WAIT_LOCK | LOCKTAG_ADVISORY */
	s.v[1].query_id = (uint64_t)-42;
	assert_int_equal(vm_symbolize(NULL, &s, &y, NULL), 0);
	assert_int_equal(vm_pprof_encode(&y, &buf, &len, NULL), 0);
	p = perftools__profiles__profile__unpack(NULL, len, buf);
	assert_non_null(p);
	assert_string_equal(str(p, p->sample_type[0]->type), "samples");
	assert_string_equal(str(p, p->sample_type[1]->type), "wall");
	assert_string_equal(str(p, p->period_type->type), "wall");
	assert_string_equal(str(p, p->default_sample_type), "wall");
	assert_int_equal(p->period, 10000000);
	assert_int_equal(p->sample[0]->value[1], 30000000);
	assert_string_equal(label(p, p->sample[0], "thread_state", NULL),
			    "running");
	assert_null(label(p, p->sample[0], "wait_event", NULL));
	assert_null(label(p, p->sample[0], "query_id", NULL));
	assert_null(label(p, p->sample[0], "sched_state", NULL));
	assert_int_equal(p->sample[1]->value[0], 2);
	assert_int_equal(p->sample[1]->value[1], 1500000000ll);
	assert_string_equal(label(p, p->sample[1], "thread_state", NULL),
			    "blocked");
	assert_string_equal(label(p, p->sample[1], "sched_state", NULL),
			    "sleeping");
	assert_string_equal(label(p, p->sample[1], "wait_event", NULL),
			    "Lock:advisory");
	/* As pg_stat_activity shows it: a signed bigint. */
	assert_string_equal(label(p, p->sample[1], "query_id", NULL), "-42");
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(buf);
	vm_symbolized_free(&y);

	s.kind = VM_KIND_OFFCPU;
	assert_int_equal(vm_symbolize(NULL, &s, &y, NULL), 0);
	assert_int_equal(vm_pprof_encode(&y, &buf, &len, NULL), 0);
	p = perftools__profiles__profile__unpack(NULL, len, buf);
	assert_non_null(p);
	assert_string_equal(str(p, p->sample_type[0]->type), "switches");
	assert_string_equal(str(p, p->sample_type[0]->unit), "count");
	assert_string_equal(str(p, p->sample_type[1]->type), "offcpu");
	assert_string_equal(str(p, p->sample_type[1]->unit), "nanoseconds");
	assert_string_equal(str(p, p->period_type->type), "offcpu");
	assert_string_equal(str(p, p->default_sample_type), "offcpu");
	assert_int_equal(p->period, 1);
	assert_null(label(p, p->sample[1], "thread_state", NULL));
	assert_string_equal(label(p, p->sample[1], "wait_event", NULL),
			    "Lock:advisory");
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(buf);
	/* Folded text weighs a block by its nanoseconds. */
	assert_int_equal(vm_folded_encode(&y, &buf, &len, NULL), 0);
	assert_non_null(strstr(buf, "vmtest_inner_function 1500000000\n"));
	free(buf);
	vm_symbolized_free(&y);

	/* A version without a table: no label, never a guess. */
	vm_samples_get_process(&s, getpid())->pg_major = 13;
	assert_int_equal(vm_symbolize(NULL, &s, &y, NULL), 0);
	assert_null(y.stacks[1].wait_event);
	vm_symbolized_free(&y);
	vm_samples_free(&s);
	vm_proc_files_free(&files);
}

/*
 * A memory snapshot: frames that are names, Go's heap sample types with
 * the bytes first, a context's type and ident as labels, the notes as a
 * comment, and folded stacks weighed in bytes.
 */
static void test_pprof_memory(void **state)
{
	struct vm_samples s = { .kind = VM_KIND_MEMORY };
	struct vm_symbolized y;
	Perftools__Profiles__Profile *p;
	uint32_t top, child, ident, pseudo;
	uint64_t ips[2];
	void *buf;
	size_t len;

	(void)state;
	assert_int_equal(vm_samples_add_name(&s, "TopMemoryContext", &top), 0);
	assert_int_equal(vm_samples_add_name(&s, "ExecutorState", &child), 0);
	assert_int_equal(vm_samples_add_name(&s, "SELECT 1", &ident), 0);
	assert_int_equal(vm_samples_add_name(&s, "[shared memory]", &pseudo),
			 0);
	ips[0] = child;
	ips[1] = top;
	assert_int_equal(
		vm_samples_add(&s, 42, 42, "postgres", 1, ips, 2, NULL, 0), 0);
	s.v[0].value = 117440568;
	s.v[0].memctx_type = VM_MEMCTX_GENERATION + 1;
	s.v[0].memctx_ident = ident + 1;
	ips[0] = pseudo;
	assert_int_equal(
		vm_samples_add(&s, 42, 42, "postgres", 1, ips, 1, NULL, 0), 0);
	s.v[1].value = 4096;
	assert_int_equal(vm_samples_note(&s, "pid 42: partial"), 0);
	assert_int_equal(vm_symbolize(NULL, &s, &y, NULL), 0);
	assert_int_equal(vm_pprof_encode(&y, &buf, &len, NULL), 0);
	p = perftools__profiles__profile__unpack(NULL, len, buf);
	assert_non_null(p);
	assert_string_equal(str(p, p->sample_type[0]->type), "inuse_space");
	assert_string_equal(str(p, p->sample_type[0]->unit), "bytes");
	assert_string_equal(str(p, p->sample_type[1]->type), "inuse_objects");
	assert_string_equal(str(p, p->sample_type[1]->unit), "count");
	assert_string_equal(str(p, p->default_sample_type), "inuse_space");
	assert_string_equal(str(p, p->period_type->type), "inuse_space");
	assert_int_equal(p->sample[0]->value[0], 117440568);
	assert_int_equal(p->sample[0]->value[1], 1);
	assert_int_equal(p->sample[0]->n_location_id, 2);
	assert_string_equal(label(p, p->sample[0], "context_type", NULL),
			    "Generation");
	assert_string_equal(label(p, p->sample[0], "context_ident", NULL),
			    "SELECT 1");
	assert_null(label(p, p->sample[1], "context_type", NULL));
	assert_int_equal(p->sample[1]->value[0], 4096);
	assert_true(p->n_comment >= 1);
	assert_non_null(strstr(str(p, p->comment[0]), "pid 42: partial"));
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(buf);
	assert_int_equal(vm_folded_encode(&y, &buf, &len, NULL), 0);
	assert_non_null(strstr(
		buf, "postgres;TopMemoryContext;ExecutorState 117440568\n"));
	assert_non_null(strstr(buf, "postgres;[shared_memory] 4096\n"));
	free(buf);
	vm_symbolized_free(&y);
	vm_samples_free(&s);
}

/*
 * A faults profile: bytes first, then faults, its period the bytes a
 * sample is worth, the mapping's kind as a label, folded in bytes.
 */
static void test_pprof_faults(void **state)
{
	struct vm_samples s = { .kind = VM_KIND_FAULTS,
				.fault_period = 64,
				.page_size = 4096 };
	struct vm_symbolized y;
	Perftools__Profiles__Profile *p;
	uint64_t ips[1] = { 0x1000 };
	void *buf;
	size_t len;

	(void)state;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(vm_samples_add(&s, 42, 42, "postgres",
						64 * (i + 1), ips, 1, NULL, 0),
				 0);
		s.v[i].value = 64 * 4096 * (uint64_t)(i + 1);
	}
	s.v[0].fault_mapping = VM_FAULT_SHARED;
	assert_int_equal(vm_symbolize(NULL, &s, &y, NULL), 0);
	assert_int_equal(vm_pprof_encode(&y, &buf, &len, NULL), 0);
	p = perftools__profiles__profile__unpack(NULL, len, buf);
	assert_non_null(p);
	/* Bytes first, as a heap profile's, then faults. */
	const char *const want[] = { "fault_space", "bytes", "faults",
				     "count" };
	int64_t got[] = { p->sample_type[0]->type, p->sample_type[0]->unit,
			  p->sample_type[1]->type, p->sample_type[1]->unit };
	for (int i = 0; i < 4; i++)
		assert_string_equal(str(p, got[i]), want[i]);
	assert_int_equal(p->default_sample_type, got[0]);
	assert_int_equal(p->period_type->type, got[0]);
	assert_int_equal(p->period, 64 * 4096);
	assert_int_equal(p->sample[1]->value[0], 2 * 64 * 4096);
	assert_int_equal(p->sample[1]->value[1], 128);
	assert_string_equal(label(p, p->sample[0], "fault_mapping", NULL),
			    "shared");
	assert_null(label(p, p->sample[1], "fault_mapping", NULL));
	assert_null(label(p, p->sample[0], "context_type", NULL));
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(buf);
	assert_int_equal(vm_folded_encode(&y, &buf, &len, NULL), 0);
	/* One stack: both samples' bytes. */
	assert_non_null(strstr(buf, " 786432\n"));
	free(buf);
	vm_symbolized_free(&y);
	vm_samples_free(&s);
}

static void test_symcache_bounds(void **state)
{
	char dir[] = "/tmp/test_symbolize.XXXXXX", *big, *small;
	const struct vm_symfile *f, *again;
	struct vm_binaries_skip skip[4];
	struct vm_binaries_stats st;
	struct vm_symcache_stats cs;
	struct vm_binaries *home;
	struct vm_symcache *sc;
	size_t n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	/* 200,000 distinct 100-byte names: about 35 MiB of symbols. */
	big = hostile_elf(dir, "big",
			  "--symbols 200000 --name-bytes 100 --distinct");
	small = hostile_elf(dir, "small", "--symbols 1000 --name-bytes 100");

	/* Over one binary's bound: kept without symbols, listed. */
	sc = new_cache(&home, 64u << 20, 16u << 20);
	vm_symcache_lock(sc);
	assert_int_equal(vm_symcache_get(sc, big, big, "", 0, &f, NULL), 0);
	assert_true(f->skipped);
	assert_int_equal(f->info.n_syms, 0);
	assert_int_equal(vm_symcache_get(sc, big, big, "", 0, &again, NULL), 0);
	assert_ptr_equal(f, again); /* not read again */
	vm_symcache_unlock(sc);
	vm_binaries_skipped(home, VM_BINARY_SYMBOLS, skip, 4, &n);
	vm_binaries_stats(home, &st);
	assert_int_equal(st.facet[VM_BINARY_SYMBOLS].skipped, 1);
	assert_int_equal(n, 1);
	assert_string_equal(skip[0].file, big);
	assert_string_equal(skip[0].reason,
			    "its symbols take more than 16 MiB, the most one "
			    "binary may have");
	free_cache(home, sc);

	/* Within it, but over what the cache has left. */
	sc = new_cache(&home, 20u << 20, 64u << 20);
	vm_symcache_lock(sc);
	assert_int_equal(vm_symcache_get(sc, small, small, "", 0, &f, NULL), 0);
	assert_false(f->skipped);
	assert_int_equal(f->info.n_syms, 1001);
	assert_int_equal(vm_symcache_get(sc, big, big, "", 0, &f, NULL), 0);
	assert_true(f->skipped);
	vm_symcache_unlock(sc);
	vm_binaries_skipped(home, VM_BINARY_SYMBOLS, skip, 4, &n);
	assert_int_equal(n, 1);
	assert_non_null(strstr(skip[0].reason, "the symbol cache has left"));
	free_cache(home, sc);

	/* A later run drops the unused entry to make room. */
	sc = new_cache(&home, 48u << 20, 40u << 20);
	vm_symcache_lock(sc);
	assert_int_equal(vm_symcache_get(sc, big, big, "", 0, &f, NULL), 0);
	assert_false(f->skipped);
	vm_symcache_unlock(sc);
	vm_symcache_lock(sc);
	assert_int_equal(vm_symcache_get(sc, small, small, "", 0, &f, NULL), 0);
	assert_false(f->skipped);
	vm_symcache_unlock(sc);
	vm_symcache_stats(sc, &cs);
	assert_int_equal(cs.entries, 1); /* big was dropped for small */
	assert_true(cs.bytes <= (48u << 20));
	free_cache(home, sc);

	hostile_elf_done(dir);
	free(big);
	free(small);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_self),
		cmocka_unit_test(test_symbolize_and_cache),
		cmocka_unit_test(test_shared_between_processes),
		cmocka_unit_test(test_pprof),
		cmocka_unit_test(test_folded_and_gzip),
		cmocka_unit_test(test_pprof_kinds),
		cmocka_unit_test(test_pprof_memory),
		cmocka_unit_test(test_pprof_faults),
		cmocka_unit_test(test_zero_is_no_frame),
		cmocka_unit_test(test_symcache_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
