// SPDX-License-Identifier: Apache-2.0
/*
 * test_bpf_unwind.c - unit tests of what the BPF programs' unwinding is
 * given: the kernel stack pointer found among a task_struct's words
 * (bpf_calibrate.c) exactly once or not at all, the calibration for real
 * on this kernel, once per backend state (bpf_kept.h), a row's rules packed and read back at the ends of their
 * ranges (bpf/unwind.h), and a session's store (bpf_unwind.c) fed with this
 * process's own mappings: its executable's entry turns the address of a
 * function of its own into the very row the table has for it (every row
 * with the table's rules, found by its index at its address and the one
 * before it just before), and its
 * [vdso] mapping, which no file holds, has the vDSO's table once, biased
 * to where it is mapped.  The store's free runs (bpf_unwind_rows.c); two
 * copies of sleep in a store that has room for them once; their rows
 * given back, once the processes are gone and forgotten, to this
 * process's binaries, which did not fit beside them; root past its
 * share while nobody's process has its rows.  The parts that make BPF
 * maps or processes of other users need root and are skipped without
 * it.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <cmocka.h>

#include "agent/profile/bpf/bpf_kept.h"
#include "agent/profile/context.h"
#include "agent/unwind/unwind_table.h"
#include "agent/unwind/vdso.h"

/*
 * What the group's setup made: a context, and the backend's state for the
 * agent's life (its store, its calibration), as the engine would make it.
 */
struct fixture {
	struct vm_agent_ctx *ctx;
	struct vm_bpf_kept *kept;
};

static struct vm_agent_ctx *ctx_of(void **state)
{
	return ((struct fixture *)*state)->ctx;
}

static struct vm_bpf_kept *kept_of(void **state)
{
	return ((struct fixture *)*state)->kept;
}
static void stack_pointer_found_once(void **state)
{
	uint64_t words[64] = { 0 }, regs = 0xffffc90000abfe98ULL;
	uint32_t off = 0, size = 0;

	(void)state;
	words[3] = regs + UNWIND_PT_REGS_SIZE - 16384;
	words[9] = 0xffff888000001000ULL; /* a pointer, not the stack */
	assert_int_equal(
		vm_bpf_find_stack_pointer(words, 64, regs, &off, &size), 0);
	assert_int_equal(off, 24);
	assert_int_equal(size, 16384);

	/* KASAN's 32 KiB stacks. */
	memset(words, 0, sizeof(words));
	words[5] = regs + UNWIND_PT_REGS_SIZE - 32768;
	assert_int_equal(
		vm_bpf_find_stack_pointer(words, 64, regs, &off, &size), 0);
	assert_int_equal(off, 40);
	assert_int_equal(size, 32768);
}

static void stack_pointer_never_guessed(void **state)
{
	uint64_t words[64] = { 0 }, regs = 0xffffc90000abfe98ULL;
	uint32_t off = 0, size = 0;

	(void)state;
	assert_int_equal(vm_bpf_find_stack_pointer(words, 64, regs, &off,
						   &size),
			 -ENOENT);
	/* Two candidates: no answer rather than a guess. */
	words[3] = regs + UNWIND_PT_REGS_SIZE - 16384;
	words[7] = regs + UNWIND_PT_REGS_SIZE - 16384;
	assert_int_equal(vm_bpf_find_stack_pointer(words, 64, regs, &off,
						   &size),
			 -EEXIST);
}

static void calibration_on_this_kernel(void **state)
{
	const struct vm_user_regs_where *w;

	if (geteuid() != 0)
		skip();
	w = vm_bpf_user_regs(&kept_of(state)->regs);
	if (!w->found)
		fail_msg("calibration: %s", w->why);
	assert_true(w->stack_off < CALIBRATE_TASK_BYTES);
	assert_true(w->thread_size == 16384 || w->thread_size == 32768 ||
		    w->thread_size == 65536);
	/* Measured once: the same answer again. */
	assert_ptr_equal(vm_bpf_user_regs(&kept_of(state)->regs), w);
}

/* A function of this executable whose row the store must give. */
__attribute__((noinline)) int bpf_unwind_probe(int x)
{
	return x * 3 + 1;
}

/*
 * The row the programs find for rel in m (bpf/unwind_walk.bpf.h), into *out:
 * the page's entry in the binary's index when rel lies before the page's
 * first row, else halvings among that page's rows.  false when none holds
 * rel.
 */
static bool find_as_program(int rows_fd, const struct unwind_map *m,
			    uint64_t rel, struct unwind_row *out)
{
	uint32_t k = (uint32_t)(rel >> m->shift), lo, hi, at;
	struct unwind_row e[2];

	if (k >= m->pages) {
		lo = hi = m->count;
	} else {
		for (int i = 0; i < 2; i++) {
			at = m->index + k + (uint32_t)i;
			assert_int_equal(
				bpf_map_lookup_elem(rows_fd, &at, &e[i]), 0);
		}
		lo = e[0].addr & UNWIND_COUNT_MASK;
		hi = e[1].addr & UNWIND_COUNT_MASK;
		assert_true(lo <= hi && hi <= m->count);
		if (lo &&
		    (lo == hi || (rel & ((1u << m->shift) - 1)) < e[0].addr >>
					 UNWIND_COUNT_BITS)) {
			*out = e[0];
			return true;
		}
	}
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2, idx = m->first + mid;
		struct unwind_row row;

		assert_int_equal(bpf_map_lookup_elem(rows_fd, &idx, &row), 0);
		if (row.addr <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo is the first row past rel: the one before it holds rel. */
	if (!lo)
		return false;
	at = m->first + lo - 1;
	assert_int_equal(bpf_map_lookup_elem(rows_fd, &at, out), 0);
	return true;
}

/* A row's rules come back as packed, at the ends of their ranges. */
static void rules_packed_whole(void **state)
{
	static const int32_t cfa_offs[] = { -UNWIND_CFA_OFF_MAX -
						    UNWIND_CFA_SCALE,
					    -8,
					    0,
					    8,
					    16,
					    11 * UNWIND_CFA_SCALE,
					    4104,
					    UNWIND_CFA_OFF_MAX };
	static const int32_t fp_offs[] = { -1024, -16, -8,
					   0,	  8,   UNWIND_FP_OFF_MAX };

	(void)state;
	for (uint32_t cfa = UNWIND_NONE; cfa <= UNWIND_SIGNAL; cfa++)
		for (size_t i = 0; i < sizeof(cfa_offs) / sizeof(*cfa_offs);
		     i++)
			for (size_t j = 0;
			     j < sizeof(fp_offs) / sizeof(*fp_offs); j++) {
				/* Where a row has bits for it, ra_off too. */
				int32_t ra = UNWIND_RA_BITS ? -fp_offs[j] - 8 :
							      UNWIND_RA_OFF;
				struct unwind_row r = {
					.addr = 1,
					.rule = unwind_rule(cfa, cfa_offs[i],
							    fp_offs[j], ra),
				};

				assert_int_equal(unwind_row_cfa(&r), cfa);
				assert_int_equal(unwind_row_cfa_off(&r),
						 cfa_offs[i]);
				assert_int_equal(unwind_row_fp_off(&r),
						 fp_offs[j]);
				assert_int_equal(unwind_row_ra_off(&r), ra);
			}
}

static void store_serves_own_executable(void **state)
{
	struct vm_unwind_table t = { 0 };
	const struct vm_unwind_row *want;
	struct vm_bpf_unwind u;
	struct unwind_proc p;
	uint32_t pid = (uint32_t)getpid();
	uint64_t pc = (uint64_t)(uintptr_t)bpf_unwind_probe + 1, link;
	int fd, found = 0;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(vm_bpf_unwind_open(&u, kept_of(state)->store,
					    ctx_of(state)->binaries,
					    ctx_of(state)->iopool, NULL),
			 0);
	vm_bpf_unwind_feed(&u, pid, 0);
	assert_int_equal(bpf_map_lookup_elem(u.procs_fd, &pid, &p), 0);
	assert_true(p.n > 1); /* this executable, libc, the loader */

	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(vm_unwind_table_build_fd(fd, &t, "self", NULL), 0);
	close(fd);
	for (uint32_t i = 0; i < p.n; i++) {
		const struct unwind_map *m = &p.m[i];
		uint64_t rel = pc - m->bias;
		const struct unwind_row *r = NULL;
		struct unwind_row rows[2], last, got;

		if (pc < m->start || pc >= m->end)
			continue;
		found = 1;
		assert_true(m->count > 0);
		assert_int_equal(m->count, t.n);
		/* The last row at or before rel, as the program finds it. */
		for (uint32_t k = 0; k < m->count; k++) {
			uint32_t idx = m->first + k;

			assert_int_equal(bpf_map_lookup_elem(u.rows_fd, &idx,
							     &rows[k & 1]),
					 0);
			if (rows[k & 1].addr <= rel) {
				last = rows[k & 1];
				r = &last;
			}
			/* Every row's rules as the table has them. */
			assert_int_equal(unwind_row_cfa_off(&rows[k & 1]),
					 t.rows[k].signal ? 0 :
							    t.rows[k].cfa_off);
			assert_int_equal(unwind_row_fp_off(&rows[k & 1]),
					 t.rows[k].signal ? 0 :
							    t.rows[k].fp_off);
			/*
			 * Its index finds its rule at its address, and the
			 * rule before it just before (from the page's entry
			 * when the row is its page's first).
			 */
			assert_true(find_as_program(u.rows_fd, m,
						    rows[k & 1].addr, &got));
			assert_int_equal(got.rule, rows[k & 1].rule);
			if (k && rows[k & 1].addr - 1 >= rows[!(k & 1)].addr) {
				assert_true(find_as_program(
					u.rows_fd, m, rows[k & 1].addr - 1,
					&got));
				assert_int_equal(got.rule, rows[!(k & 1)].rule);
			}
		}
		assert_non_null(r);
		assert_true(find_as_program(u.rows_fd, m, rel, &got));
		assert_int_equal(got.rule, r->rule);
		/* About 2 rows a page; the index after the rows. */
		assert_true(m->pages <= m->count / 2 + 1);
		assert_int_equal(m->index, m->first + m->count);
		/* The table's own answer, by link-time address. */
		link = rel + t.rows[0].addr;
		want = vm_unwind_lookup(&t, link);
		assert_non_null(want);
		assert_int_equal(r->addr + t.rows[0].addr, want->addr);
		assert_int_equal(unwind_row_cfa_off(r), want->cfa_off);
		assert_int_equal(unwind_row_fp_off(r), want->fp_off);
	}
	assert_true(found);
	/* A second feed finds its binaries in the store: no new rows. */
	{
		struct vm_bpf_unwind_stats a, b;

		vm_bpf_unwind_stats(&u, &a);
		vm_bpf_unwind_feed(&u, pid, 0);
		vm_bpf_unwind_stats(&u, &b);
		assert_int_equal(a.rows, b.rows);
		assert_true(a.bins >= 2);
	}
	/* A process gone: its entry goes. */
	vm_bpf_unwind_forget(&u, pid);
	assert_int_not_equal(bpf_map_lookup_elem(u.procs_fd, &pid, &p), 0);
	vm_unwind_table_free(&t);
	/* The next profile finds the rows where this one left them. */
	{
		struct vm_bpf_unwind_stats a, b;
		struct unwind_proc again;

		vm_bpf_unwind_stats(&u, &a);
		vm_bpf_unwind_close(&u);
		assert_int_equal(vm_bpf_unwind_open(&u, kept_of(state)->store,
						    ctx_of(state)->binaries,
						    ctx_of(state)->iopool,
						    NULL),
				 0);
		vm_bpf_unwind_feed(&u, pid, 0);
		vm_bpf_unwind_stats(&u, &b);
		assert_int_equal(a.rows, b.rows);
		assert_int_equal(bpf_map_lookup_elem(u.procs_fd, &pid, &again),
				 0);
		assert_int_equal(again.n, p.n);
		for (uint32_t i = 0; i < p.n; i++) {
			assert_int_equal(again.m[i].first, p.m[i].first);
			assert_int_equal(again.m[i].index, p.m[i].index);
		}
		vm_bpf_unwind_close(&u);
	}
}

static void store_serves_vdso(void **state)
{
	struct vm_bpf_unwind_store *s;
	const struct vm_unwind_table *t;
	struct vm_bpf_unwind_stats a, b;
	struct vm_bpf_unwind u;
	struct unwind_proc p;
	uint32_t pid = (uint32_t)getpid();
	const void *image;
	size_t size;
	int found = 0;

	(void)state;
	if (geteuid() != 0 || !vm_vdso_image(&image, &size))
		skip();
	t = vm_vdso_unwind_table((uintptr_t)image, (uintptr_t)image + size);
	assert_non_null(t);
	/*
	 * A store this process may fill whole: built with ASan, its own
	 * executable takes about half the store, root's share, and the vDSO
	 * would be past it.
	 */
	s = vm_bpf_unwind_store_new(0, UINT32_MAX);
	assert_non_null(s);
	assert_int_equal(vm_bpf_unwind_open(&u, s, ctx_of(state)->binaries,
					    ctx_of(state)->iopool, NULL),
			 0);
	vm_bpf_unwind_feed(&u, pid, 0);
	assert_int_equal(bpf_map_lookup_elem(u.procs_fd, &pid, &p), 0);
	for (uint32_t i = 0; i < p.n; i++) {
		const struct unwind_map *m = &p.m[i];
		struct unwind_row row;

		if (m->start != (uintptr_t)image)
			continue;
		found = 1;
		assert_int_equal(m->count, t->n);
		/* Its text is linked at 0: a pc less the start is a row's. */
		assert_int_equal(m->bias, m->start + t->rows[0].addr);
		for (uint32_t k = 0; k < m->count; k++) {
			uint32_t idx = m->first + k;

			assert_int_equal(
				bpf_map_lookup_elem(u.rows_fd, &idx, &row), 0);
			assert_int_equal(row.addr + t->rows[0].addr,
					 t->rows[k].addr);
			assert_int_equal(
				unwind_row_cfa_off(&row),
				t->rows[k].signal ? 0 : t->rows[k].cfa_off);
		}
	}
	assert_true(found);
	/* Its rows are in the store once, however often it is fed. */
	vm_bpf_unwind_stats(&u, &a);
	vm_bpf_unwind_forget(&u, pid);
	vm_bpf_unwind_feed(&u, pid, 0);
	vm_bpf_unwind_stats(&u, &b);
	assert_int_equal(a.rows, b.rows);
	vm_bpf_unwind_close(&u);
	vm_bpf_unwind_store_free(s);
}

/* The store's free runs: taken first fit, given back joined. */
static void rows_taken_and_given(void **state)
{
	struct vm_bpf_rows r;
	uint32_t a, b, c, d;

	(void)state;
	assert_int_equal(vm_bpf_rows_init(&r, 100), 0);
	assert_int_equal(vm_bpf_rows_take(&r, 30, &a), 0);
	assert_int_equal(vm_bpf_rows_take(&r, 30, &b), 0);
	assert_int_equal(vm_bpf_rows_take(&r, 30, &c), 0);
	assert_int_equal(a, 0);
	assert_int_equal(b, 30);
	assert_int_equal(c, 60);
	assert_int_equal(vm_bpf_rows_take(&r, 20, &d), -ENOSPC);
	assert_int_equal(vm_bpf_rows_give(&r, b, 30), 0);
	assert_int_equal(vm_bpf_rows_take(&r, 20, &d), 0);
	assert_int_equal(d, 30); /* the first run it fits in */
	assert_int_equal(vm_bpf_rows_give(&r, a, 30), 0);
	assert_int_equal(vm_bpf_rows_give(&r, d, 20), 0);
	/* 0-60 joined (and 50-60 with them): 60 rows at 0. */
	assert_int_equal(vm_bpf_rows_take(&r, 60, &d), 0);
	assert_int_equal(d, 0);
	assert_int_equal(r.used, 90);
	assert_int_equal(vm_bpf_rows_give(&r, c, 30), 0);
	assert_int_equal(vm_bpf_rows_give(&r, d, 60), 0);
	assert_int_equal(r.used, 0);
	assert_int_equal(r.n_free, 1);
	vm_bpf_rows_destroy(&r);
}

/* A copy of /bin/sleep at path, executable by anyone. */
static void copy_sleep(const char *path)
{
	char buf[65536];
	ssize_t n;
	int in = open("/bin/sleep", O_RDONLY | O_CLOEXEC),
	    out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);

	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
	assert_int_equal(chmod(path, 0755), 0);
}

/* path run as uid (0: as we are), sleeping, once it has been exec'd. */
static pid_t spawn(const char *path, uid_t uid)
{
	char exe[64], link[256];
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		if (uid && (setgid(uid) || setuid(uid)))
			_exit(127);
		execl(path, path, "30", (char *)NULL);
		_exit(127);
	}
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	for (int i = 0; i < 500; i++) {
		ssize_t n = readlink(exe, link, sizeof(link) - 1);

		if (n > 0 && (link[n] = 0, !strcmp(link, path)))
			return pid;
		usleep(10000);
	}
	fail_msg("%s did not start", path);
	return -1;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The rows this process's mappings take in a store of their own. */
static uint64_t rows_of_self(void **state)
{
	struct vm_bpf_unwind_store *s = vm_bpf_unwind_store_new(0, 0);
	struct vm_bpf_unwind u;
	struct vm_bpf_unwind_stats st;

	assert_non_null(s);
	assert_int_equal(vm_bpf_unwind_open(&u, s, ctx_of(state)->binaries,
					    ctx_of(state)->iopool, NULL),
			 0);
	vm_bpf_unwind_feed(&u, (uint32_t)getpid(), 0);
	vm_bpf_unwind_stats(&u, &st);
	vm_bpf_unwind_close(&u);
	vm_bpf_unwind_store_free(s);
	assert_int_equal(st.bins_skipped, 0);
	return st.rows;
}

/*
 * Two copies of one binary (two files, one table) take its rows once;
 * once the processes that mapped them are gone, their rows go back to
 * the store within its grace, for a binary first seen after, while the
 * session that stored them goes on (a continuous profile's).
 */
static void store_shares_copies_and_reclaims(void **state)
{
	char dir[] = "/tmp/test_bpf_unwind.XXXXXX", a[64], b[64];
	struct vm_bpf_unwind_store *s;
	struct vm_bpf_unwind_stats one, two, after;
	struct vm_bpf_unwind u;
	struct unwind_proc p;
	uint64_t self;
	pid_t pa, pb;
	uint32_t ua, ub;

	if (geteuid() != 0)
		skip();
	self = rows_of_self(state);
	assert_non_null(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	copy_sleep(a);
	copy_sleep(b);
	/* Room for this process's binaries, not for those and sleep's. */
	s = vm_bpf_unwind_store_new((uint32_t)self, (uint32_t)self);
	assert_non_null(s);
	assert_int_equal(vm_bpf_unwind_open(&u, s, ctx_of(state)->binaries,
					    ctx_of(state)->iopool, NULL),
			 0);
	pa = spawn(a, 0);
	pb = spawn(b, 0);
	ua = (uint32_t)pa;
	ub = (uint32_t)pb;
	vm_bpf_unwind_feed(&u, ua, 0);
	vm_bpf_unwind_stats(&u, &one);
	vm_bpf_unwind_feed(&u, ub, 0);
	vm_bpf_unwind_stats(&u, &two);
	print_message("# one copy of sleep: %llu rows in %llu runs; two: "
		      "%llu rows in %llu runs\n",
		      (unsigned long long)one.rows,
		      (unsigned long long)one.bins,
		      (unsigned long long)two.rows,
		      (unsigned long long)two.bins);
	assert_true(one.rows > 0);
	assert_int_equal(two.rows, one.rows);
	assert_int_equal(two.bins, one.bins);
	assert_int_equal(bpf_map_lookup_elem(u.procs_fd, &ub, &p), 0);
	/* Gone, forgotten, and past the grace: this process's fit whole. */
	reap(pa);
	reap(pb);
	vm_bpf_unwind_forget(&u, ua);
	vm_bpf_unwind_forget(&u, ub);
	usleep((VM_BPF_UNWIND_GRACE_MS + 100) * 1000);
	vm_bpf_unwind_feed(&u, (uint32_t)getpid(), 0);
	vm_bpf_unwind_stats(&u, &after);
	print_message("# this process's binaries after: %llu rows (%llu in a "
		      "store of their own), %llu skipped\n",
		      (unsigned long long)after.rows, (unsigned long long)self,
		      (unsigned long long)after.bins_skipped);
	assert_int_equal(after.bins_skipped, 0);
	assert_int_equal(after.rows, self);
	vm_bpf_unwind_close(&u);
	vm_bpf_unwind_store_free(s);
	unlink(a);
	unlink(b);
	rmdir(dir);
}

/*
 * One uid's processes take at most its share: past it, the process is
 * walked by frame pointer there and counted, with why; another uid's
 * process has its rows still.
 */
static void store_bounds_an_owner(void **state)
{
	char dir[] = "/tmp/test_bpf_unwind.XXXXXX", a[64], why[256];
	struct vm_bpf_unwind_store *s;
	struct vm_bpf_unwind_stats st;
	struct vm_bpf_unwind u;
	struct unwind_proc p;
	uint64_t self, n;
	uint32_t pid = (uint32_t)getpid(), un;
	pid_t pn;
	bool stored = false;

	if (geteuid() != 0)
		skip();
	self = rows_of_self(state);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(a, sizeof(a), "%s/a", dir);
	copy_sleep(a);
	s = vm_bpf_unwind_store_new(0, (uint32_t)self - 1);
	assert_non_null(s);
	assert_int_equal(vm_bpf_unwind_open(&u, s, ctx_of(state)->binaries,
					    ctx_of(state)->iopool, NULL),
			 0);
	vm_bpf_unwind_feed(&u, pid, 0);
	vm_bpf_unwind_stats(&u, &st);
	vm_bpf_unwind_procs_skipped(s, &n, why, sizeof(why));
	print_message("# root past a share of %llu rows: %llu stored; %s\n",
		      (unsigned long long)self - 1, (unsigned long long)st.rows,
		      why);
	assert_true(st.rows < self);
	assert_int_equal(st.procs_skipped, 1);
	assert_non_null(strstr(why, "the binaries of uid 0 past its share"));
	/* nobody's has a share of its own. */
	pn = spawn(a, 65534);
	un = (uint32_t)pn;
	vm_bpf_unwind_feed(&u, un, 0);
	assert_int_equal(bpf_map_lookup_elem(u.procs_fd, &un, &p), 0);
	for (uint32_t i = 0; i < p.n; i++)
		stored |= p.m[i].count > 0 && p.m[i].start < 0x600000000000ull;
	assert_true(stored); /* sleep's own rows, at a PIE's address */
	vm_bpf_unwind_stats(&u, &st);
	assert_int_equal(st.procs_skipped, 1);
	reap(pn);
	vm_bpf_unwind_close(&u);
	vm_bpf_unwind_store_free(s);
	unlink(a);
	rmdir(dir);
}

/*
 * The tables' home and the file readers: a context of the test's own;
 * the store and calibration: a backend state of its own.
 */
static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	*state = f;
	if (!f || vm_agent_ctx_new(NULL, &f->ctx, NULL) < 0)
		return -1;
	f->kept = vm_bpf_kept_new();
	return f->kept ? 0 : -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	vm_bpf_kept_free(f->kept); /* the store puts back what it holds */
	vm_agent_ctx_free(f->ctx);
	free(f);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stack_pointer_found_once),
		cmocka_unit_test(stack_pointer_never_guessed),
		cmocka_unit_test(calibration_on_this_kernel),
		cmocka_unit_test(rules_packed_whole),
		cmocka_unit_test(store_serves_own_executable),
		cmocka_unit_test(store_serves_vdso),
		cmocka_unit_test(rows_taken_and_given),
		cmocka_unit_test(store_shares_copies_and_reclaims),
		cmocka_unit_test(store_bounds_an_owner),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
