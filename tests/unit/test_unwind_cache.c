// SPDX-License-Identifier: Apache-2.0
/*
 * test_unwind_cache.c - unit tests of agent/unwind/unwind_cache.c, the
 * unwind facet of the home of binaries, on the test's own executable and
 * libc: one build however often a binary is asked for, a copy of it
 * under another name (the same build id, another file) built for itself
 * and not handed the first's table, a file without call frame information
 * answered NULL and not read again, the bound evicting tables no one
 * holds and skipping, with a sentence naming the file, one that does not
 * fit, the number of binaries remembered bounded (the least recently
 * used forgotten), and a table held staying while its home is asked for
 * others.  Each test makes its own home, as the agent's command does.
 *
 * The bounds of a build (agent/unwind/unwind_table.c), on shared objects
 * a hostile user could map, made by tests/lib/long-fde.py: one function
 * of 160,000 rows of equal rules, which libdw would read in 160,000^2 / 2
 * steps, is cut at VM_UNWIND_MAX_FUNCTION_ROWS (its rest one row of no
 * rule) and counted, the build's time a diagnostic; 64 functions at that
 * bound, read with a CPU time bound of 20 ms, end past it with -ETIME
 * and a sentence naming the file; and the cache says a cut binary once,
 * in its skipped list and to the ask that built it.
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/unwind/unwind_cache.h"

static char dir[] = "/tmp/test_unwind_cache.XXXXXX";
/* Made by setup: shared objects of long unwind rules. */
static char one_long[128], many_at_bound[128];
/* The file readers, as the agent's context holds them. */
static struct vm_iopool *pool;

static const struct vm_unwind_table *
ask(struct vm_binaries *h, const char *path, struct vm_binary **held)
{
	const struct vm_unwind_table *t;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	t = vm_unwind_cache_get(pool, h, fd, path, held, NULL);
	close(fd);
	assert_true((t != NULL) == (*held != NULL));
	return t;
}

static void copy(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

static void one_build_per_binary(void **state)
{
	struct vm_binaries *h = vm_binaries_new(NULL);
	struct vm_unwind_cache_stats a, b;
	const struct vm_unwind_table *t1, *t2, *t3;
	struct vm_binary *h1, *h2, *h3;
	char path[128];

	(void)state;
	vm_unwind_cache_stats(h, &a);
	t1 = ask(h, "/proc/self/exe", &h1);
	assert_non_null(t1);
	assert_true(t1->n > 0);
	t2 = ask(h, "/proc/self/exe", &h2);
	assert_ptr_equal(t1, t2);
	/*
	 * A copy under another name claims the same build id, but is
	 * another file: what one file holds is never taken on its claim.
	 */
	snprintf(path, sizeof(path), "%s/copy", dir);
	copy("/proc/self/exe", path);
	t3 = ask(h, path, &h3);
	assert_non_null(t3);
	assert_ptr_not_equal(t1, t3);
	assert_int_equal(t3->n, t1->n);
	vm_unwind_cache_stats(h, &b);
	assert_int_equal(b.builds, a.builds + 2);
	assert_int_equal(b.hits, a.hits + 1);
	assert_true(b.bytes >= vm_unwind_table_bytes(t1));
	vm_binaries_put(h, h1);
	vm_binaries_put(h, h2);
	vm_binaries_put(h, h3);
	unlink(path);
	vm_binaries_free(h);
}

static void not_elf_is_null_once(void **state)
{
	struct vm_binaries *h = vm_binaries_new(NULL);
	struct vm_unwind_cache_stats a, b;
	struct vm_binary *held;
	char path[128];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/text", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("not an ELF file\n", f);
	fclose(f);
	vm_unwind_cache_stats(h, &a);
	assert_null(ask(h, path, &held));
	assert_null(ask(h, path, &held));
	vm_unwind_cache_stats(h, &b);
	assert_int_equal(b.tables, a.tables);
	/* Read once: the second ask is answered from the cache. */
	assert_int_equal(b.builds, a.builds + 1);
	assert_int_equal(b.hits, a.hits + 1);
	unlink(path);
	vm_binaries_free(h);
}

/* Binaries without a table are remembered too, but not without bound. */
static void entries_bounded(void **state)
{
	struct vm_binaries_limits lim = { .max_entries = 64 };
	struct vm_binaries *h = vm_binaries_new(&lim);
	struct vm_unwind_cache_stats a, b;
	struct vm_binary *held;
	char path[128];

	(void)state;
	for (size_t i = 0; i <= lim.max_entries; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/t%zu", dir, i);
		f = fopen(path, "w");
		assert_non_null(f);
		fprintf(f, "not ELF %zu\n", i);
		fclose(f);
		assert_null(ask(h, path, &held));
	}
	/* The first was the least recently used: gone, read again. */
	vm_unwind_cache_stats(h, &a);
	snprintf(path, sizeof(path), "%s/t0", dir);
	assert_null(ask(h, path, &held));
	vm_unwind_cache_stats(h, &b);
	assert_int_equal(b.builds, a.builds + 1);
	assert_int_equal(b.hits, a.hits);
	for (size_t i = 0; i <= lim.max_entries; i++) {
		snprintf(path, sizeof(path), "%s/t%zu", dir, i);
		unlink(path);
	}
	vm_binaries_free(h);
}

static void bound_evicts_then_skips(void **state)
{
	const struct vm_unwind_table *self, *libc;
	struct vm_unwind_cache_stats st;
	struct vm_binaries_limits lim;
	struct vm_binaries *h = vm_binaries_new(NULL);
	struct vm_binary *held;
	size_t self_bytes;

	(void)state;
	self = ask(h, "/proc/self/exe", &held);
	assert_non_null(self);
	self_bytes = vm_unwind_table_bytes(self);
	vm_binaries_put(h, held);
	vm_binaries_free(h);
	/* Room for this executable's table only: libc's evicts it. */
	lim = (struct vm_binaries_limits){ .max_bytes = self_bytes + 1 };
	h = vm_binaries_new(&lim);
	self = ask(h, "/proc/self/exe", &held);
	assert_non_null(self);
	vm_binaries_put(h, held);
	libc = ask(h, "/lib/x86_64-linux-gnu/libc.so.6", &held);
	vm_unwind_cache_stats(h, &st);
	if (libc) {
		/* libc's table fit where the unheld one was. */
		assert_true(st.bytes <= self_bytes + 1);
		assert_int_equal(st.tables, 1);
		vm_binaries_put(h, held);
	} else {
		assert_int_equal(st.tables, 0);
		assert_true(st.skipped > 0);
		assert_non_null(strstr(st.last_skipped, "libc.so.6"));
	}
	vm_binaries_free(h);
	/* Held tables are never evicted: the next one is skipped. */
	lim.max_bytes = 1;
	h = vm_binaries_new(&lim);
	self = ask(h, "/proc/self/exe", &held);
	assert_null(self);
	vm_unwind_cache_stats(h, &st);
	assert_true(st.skipped > 0);
	assert_non_null(strstr(st.last_skipped, "would pass the bound"));
	vm_binaries_free(h);
}

static void held_stays(void **state)
{
	struct vm_binaries_limits lim = { .max_entries = 1 };
	struct vm_binaries *h = vm_binaries_new(&lim);
	const struct vm_unwind_table *t;
	struct vm_unwind_cache_stats st;
	struct vm_binary *held, *other;
	char path[128];
	FILE *f;

	(void)state;
	t = ask(h, "/proc/self/exe", &held);
	assert_non_null(t);
	/* No room for another entry beside the one held: it is skipped. */
	snprintf(path, sizeof(path), "%s/other", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("not ELF\n", f);
	fclose(f);
	assert_null(ask(h, path, &other));
	vm_unwind_cache_stats(h, &st);
	assert_int_equal(st.tables, 1);
	assert_true(t->n > 0); /* still there */
	assert_non_null(strstr(st.last_skipped, "in use"));
	vm_binaries_put(h, held);
	unlink(path);
	vm_binaries_free(h);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A shared object of functions functions of rows rows each, into path. */
static int make(char *path, size_t size, const char *name, unsigned rows,
		unsigned functions)
{
	const char *src = getenv("SRC");
	char cmd[1024];

	snprintf(path, size, "%s/%s", dir, name);
	snprintf(cmd, sizeof(cmd),
		 "python3 '%s/tests/lib/long-fde.py' '%s' --rows %u "
		 "--functions %u",
		 src ? src : ".", path, rows, functions);
	return system(cmd) == 0 ? 0 : -1;
}

static void long_function_cut(void **state)
{
	struct vm_unwind_table t = { 0 };
	struct vm_error err = { 0 };
	const struct vm_unwind_row *r;
	uint64_t start;
	double t0, took;
	int fd = open(one_long, O_RDONLY | O_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	t0 = now_ms();
	assert_int_equal(vm_unwind_table_build_fd(fd, &t, one_long, &err), 0);
	took = now_ms() - t0;
	close(fd);
	printf("# one function of 160,000 rows: built in %.1f ms, %zu rows\n",
	       took, t.n);
	assert_int_equal(t.truncated, 1);
	assert_int_equal(t.unsupported, 0);
	/* At its start the CIE's rule, then sp + 16 up to the bound. */
	start = t.rows[0].addr;
	r = vm_unwind_lookup(&t, start);
	assert_int_equal(r->cfa, VM_UNWIND_SP);
	assert_int_equal(r->cfa_off, 8);
	r = vm_unwind_lookup(&t, start + VM_UNWIND_MAX_FUNCTION_ROWS - 1);
	assert_int_equal(r->cfa, VM_UNWIND_SP);
	assert_int_equal(r->cfa_off, 16);
	/* Past it, to the function's end: no rule, the frame pointer walks. */
	r = vm_unwind_lookup(&t, start + VM_UNWIND_MAX_FUNCTION_ROWS);
	assert_int_equal(r->cfa, VM_UNWIND_NONE);
	r = vm_unwind_lookup(&t, start + 159999);
	assert_int_equal(r->cfa, VM_UNWIND_NONE);
	assert_true(t.n <= 4);
	vm_unwind_table_free(&t);
}

static void cpu_time_bounded(void **state)
{
	struct vm_unwind_table t = { .cpu_ms = 20 };
	struct vm_error err = { 0 };
	double t0, took;
	int fd = open(many_at_bound, O_RDONLY | O_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	t0 = now_ms();
	assert_int_equal(vm_unwind_table_build_fd(fd, &t, many_at_bound, &err),
			 -ETIME);
	took = now_ms() - t0;
	close(fd);
	printf("# 64 functions of %u rows, 20 ms of CPU time allowed: "
	       "ended after %.1f ms\n",
	       VM_UNWIND_MAX_FUNCTION_ROWS, took);
	assert_non_null(strstr(err.msg, many_at_bound));
	assert_non_null(strstr(err.msg, "more than 20 ms of CPU time"));
	vm_unwind_table_free(&t);
}

static void cache_says_cut(void **state)
{
	struct vm_binaries *h = vm_binaries_new(NULL);
	const struct vm_unwind_table *t;
	struct vm_unwind_cache_stats st;
	struct vm_error skip = { 0 }, again = { 0 };
	struct vm_binary *held, *held2;
	int fd = open(one_long, O_RDONLY | O_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	t = vm_unwind_cache_get(pool, h, fd, one_long, &held, &skip);
	assert_non_null(t);
	assert_int_equal(t->truncated, 1);
	assert_non_null(strstr(skip.msg, "1 of its functions have more than"));
	/* Said once: the next ask is answered from the cache. */
	assert_ptr_equal(
		vm_unwind_cache_get(pool, h, fd, one_long, &held2, &again), t);
	assert_int_equal(again.code, 0);
	close(fd);
	vm_unwind_cache_stats(h, &st);
	assert_int_equal(st.tables, 1);
	assert_int_equal(st.skipped, 1);
	assert_non_null(strstr(st.last_skipped, one_long));
	assert_non_null(strstr(st.last_skipped, "walked by frame pointer"));
	vm_binaries_put(h, held);
	vm_binaries_put(h, held2);
	vm_binaries_free(h);
}

static int setup(void **state)
{
	(void)state;
	pool = vm_iopool_new();
	if (!pool || !mkdtemp(dir))
		return -1;
	return make(one_long, sizeof(one_long), "one-long.so", 160000,
		    1) || make(many_at_bound, sizeof(many_at_bound), "many.so",
			       VM_UNWIND_MAX_FUNCTION_ROWS, 64) ?
		       -1 :
		       0;
}

static int teardown(void **state)
{
	(void)state;
	vm_iopool_free(pool);
	unlink(one_long);
	unlink(many_at_bound);
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_build_per_binary),
		cmocka_unit_test(not_elf_is_null_once),
		cmocka_unit_test(entries_bounded),
		cmocka_unit_test(bound_evicts_then_skips),
		cmocka_unit_test(held_stays),
		cmocka_unit_test(long_function_cut),
		cmocka_unit_test(cpu_time_bounded),
		cmocka_unit_test(cache_says_cut),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
