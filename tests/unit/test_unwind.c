// SPDX-License-Identifier: Apache-2.0
/*
 * test_unwind.c - unit tests of agent/unwind/unwind_table.c and
 * unwind.c on this very program, built with -O2 -fomit-frame-pointer (the
 * Makefile says so for this file): a chain of functions with no frame
 * pointer, 100 calls of recursion deep, walks from its innermost frame to
 * main and past it to the outermost frame, every caller found by its
 * table, exactly the known chain; a comparison function called by libc's
 * qsort walks through libc's frames (Debian's libc keeps few frame
 * pointers) back to its caller; a signal handler walks through the
 * kernel's signal frame to the interrupted function.  The tables of libc
 * and of this program are checked for rows (PLT stubs included), and a
 * file that is not ELF is refused with its name.  The vDSO's table
 * (agent/unwind/vdso.c), built from this process's own, is built once
 * and covers each function the vDSO exports from its first instruction
 * (CFA = rsp + 8, where its frame pointer is not set up yet); a mapping
 * of another size is not given it.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <sys/auxv.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/symbolize/elf.h"
#include "agent/unwind/unwind.h"
#include "agent/unwind/vdso.h"
#include "bpf/unwind.h"

#define MAX_FILES 16

/* The files this process maps, each with its table and segments. */
static struct mapped {
	uint64_t start, end, pgoff;
	char path[256];
	struct vm_unwind_table table;
	struct vm_elf_info info;
	bool built;
} files[64];
static size_t n_files;

static void free_files(void)
{
	for (size_t i = 0; i < n_files; i++) {
		vm_unwind_table_free(&files[i].table);
		vm_elf_info_free(&files[i].info);
	}
	n_files = 0;
}

static void read_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];

	assert_non_null(f);
	free_files();
	while (fgets(line, sizeof(line), f) && n_files < 64) {
		unsigned long long s, e, off;
		char perms[8], path[256] = "";

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %255s", &s, &e,
			   perms, &off, path) < 4 ||
		    perms[2] != 'x' || path[0] != '/')
			continue;
		files[n_files] =
			(struct mapped){ .start = s, .end = e, .pgoff = off };
		snprintf(files[n_files].path, sizeof(files[0].path), "%s",
			 path);
		n_files++;
	}
	fclose(f);
}

static const struct vm_unwind_table *find(void *arg, uint64_t pc,
					  uint64_t *link, bool *outside)
{
	(void)arg;
	*outside = true;
	for (size_t i = 0; i < n_files; i++) {
		struct mapped *m = &files[i];

		if (pc < m->start || pc >= m->end)
			continue;
		*outside = false;
		if (!m->built) {
			int fd = open(m->path, O_RDONLY | O_CLOEXEC);

			m->built = true;
			if (fd < 0)
				return NULL;
			vm_unwind_table_build_fd(fd, &m->table, m->path, NULL);
			vm_elf_read_fd(fd, &m->info, m->path, NULL);
			close(fd);
		}
		if (!vm_elf_offset_to_addr(&m->info, pc - m->start + m->pgoff,
					   link))
			return NULL;
		return m->table.n ? &m->table : NULL;
	}
	return NULL;
}

/* Our own stack: readable where the walk asks (it never leaves it). */
static bool read_self(void *arg, uint64_t addr, uint64_t *value)
{
	(void)arg;
	if (addr < 4096 || addr & 7)
		return false;
	*value = *(const uint64_t *)(uintptr_t)addr;
	return true;
}

/* The name of pc's function, from its file's symbols. */
static const char *name_of(uint64_t pc)
{
	uint64_t link;
	const struct vm_elf_symbol *s;
	bool outside;

	for (size_t i = 0; i < n_files; i++)
		if (pc >= files[i].start && pc < files[i].end &&
		    find(NULL, pc, &link, &outside) != (void *)1 &&
		    vm_elf_offset_to_addr(&files[i].info,
					  pc - files[i].start + files[i].pgoff,
					  &link) &&
		    (s = vm_elf_lookup(&files[i].info, link)))
			return s->name;
	return "?";
}

static uint64_t ips[512];
static size_t n_ips;
static struct vm_unwind_counts counts;

/* Walk from here; the registers are this function's own. */
__attribute__((noinline)) static void walk_here(void)
{
	struct vm_unwind_regs r;

#if defined(__aarch64__)
	__asm__ volatile("adr %0, .\n\tmov %1, sp\n\tmov %2, x29\n\tmov %3, x30"
			 : "=r"(r.pc), "=r"(r.sp), "=r"(r.fp), "=r"(r.lr));
#else
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(r.pc), "=r"(r.sp), "=r"(r.fp));
	r.lr = 0;
#endif
	memset(&counts, 0, sizeof(counts));
	n_ips = vm_unwind_stack(&r, find, read_self, NULL, ips, NULL, 512,
				&counts);
}

static volatile int sink;

__attribute__((noinline)) static void chain_c(int depth)
{
	if (depth > 0)
		chain_c(depth - 1);
	else
		walk_here();
	sink++; /* not a tail call */
}

__attribute__((noinline)) static void chain_b(void)
{
	chain_c(99);
	sink++;
}

__attribute__((noinline)) static void chain_a(void)
{
	chain_b();
	sink++;
}

/* The names of the walk, innermost first, as one string. */
static char *names(void)
{
	static char buf[16384];
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n_ips && used < sizeof(buf) - 64; i++)
		used += snprintf(buf + used, sizeof(buf) - used, "%s%s",
				 i ? ";" : "", name_of(ips[i]));
	return buf;
}

static void test_chain(void **state)
{
	const char *s;
	size_t c = 0;

	(void)state;
	read_maps();
	chain_a();
	s = names();
	print_message("%zu frames, %llu by table, %llu by frame pointer\n",
		      n_ips, (unsigned long long)counts.by_table,
		      (unsigned long long)counts.by_frame_pointer);
	assert_non_null(strstr(s, "walk_here;chain_c;chain_c"));
	for (const char *p = s; (p = strstr(p, ";chain_c")); p++)
		c++;
	assert_int_equal(c, 100);
	assert_non_null(strstr(s, ";chain_c;chain_b;chain_a;test_chain;"));
	assert_non_null(strstr(s, ";main;"));
	/* On to the outermost frame, _start, whose caller is undefined. */
	assert_string_equal(name_of(ips[n_ips - 1]), "_start");
	assert_int_equal(counts.outermost, 1);
	assert_int_equal(counts.cut, 0);
	assert_true(counts.by_table >= 105);
}

static int cmp_walk(const void *a, const void *b)
{
	if (!n_ips)
		walk_here();
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) static void sort_something(void)
{
	int v[64];

	for (int i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	qsort(v, 64, sizeof(v[0]), cmp_walk);
	sink++;
}

static void test_through_libc(void **state)
{
	const char *s, *ours;

	(void)state;
	read_maps();
	n_ips = 0;
	sort_something();
	s = names();
	print_message("%s\n", s);
	/* cmp_walk, then libc's frames (qsort's), then its caller. */
	assert_non_null(strstr(s, "walk_here;cmp_walk;"));
	ours = strstr(s, ";sort_something;test_through_libc;");
	assert_non_null(ours);
	assert_non_null(strstr(s, "qsort"));
	assert_true(strstr(s, "qsort") < ours);
	assert_int_equal(counts.cut, 0);
}

static void on_signal(int sig)
{
	(void)sig;
	walk_here();
	sink++; /* not a tail call */
}

__attribute__((noinline)) static void interrupted(void)
{
	raise(SIGUSR1);
	sink++;
}

static void test_signal_frame(void **state)
{
	const char *s;

	(void)state;
	/*
	 * arm64's signal trampoline is the vDSO's, the one whose unwind
	 * table says "signal frame": qemu-user gives none, and its own
	 * trampoline has no table.
	 */
	if (UNWIND_RA_BITS && !getauxval(AT_SYSINFO_EHDR)) {
		skip();
		return;
	}
	read_maps();
	signal(SIGUSR1, on_signal);
	interrupted();
	signal(SIGUSR1, SIG_DFL);
	s = names();
	print_message("%s\n", s);
	/* The handler, the kernel's frame (__restore_rt), then raise's. */
	assert_non_null(strstr(s, "walk_here;on_signal;?;"));
	assert_non_null(strstr(s, ";interrupted;test_signal_frame;"));
	assert_int_equal(counts.cut, 0);
}

static void test_tables(void **state)
{
	struct vm_unwind_table t = { 0 };
	struct vm_error err = { 0 };
	static const char junk[] = "\177ELF not really";
	const struct vm_unwind_row *row;
	bool plt = false;
	int fd;

	(void)state;
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(vm_unwind_table_build_fd(fd, &t, "self", &err), 0);
	close(fd);
	print_message("this program: %zu rows, %zu unsupported, %zu bytes\n",
		      t.n, t.unsupported, vm_unwind_table_bytes(&t));
	assert_true(t.n > 100);
	for (size_t i = 1; i < t.n; i++)
		assert_true(t.rows[i - 1].addr < t.rows[i].addr);
	for (size_t i = 0; i < t.n; i++)
		plt |= t.rows[i].cfa == VM_UNWIND_PLT;
	/* x86-64's PLT stubs have their CFA rule; arm64's have no CFI. */
	assert_true(plt || UNWIND_RA_BITS);
	assert_null(vm_unwind_lookup(&t, 0));
	row = vm_unwind_lookup(&t, t.rows[1].addr);
	assert_ptr_equal(row, &t.rows[1]);
	vm_unwind_table_free(&t);

	assert_int_equal(vm_unwind_table_build_mem(junk, sizeof(junk), &t,
						   "junk", &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "junk"));
	vm_unwind_table_free(&t);
}

static void test_vdso(void **state)
{
	struct vm_elf_info info = { 0 };
	const struct vm_unwind_table *t;
	const void *image;
	uint64_t start;
	size_t size, functions = 0;

	(void)state;
	if (!vm_vdso_image(&image, &size))
		skip(); /* a kernel without a vDSO */
	start = (uint64_t)(uintptr_t)image;
	t = vm_vdso_unwind_table(start, start + size);
	assert_non_null(t);
	assert_ptr_equal(vm_vdso_unwind_table(start, start + size), t);
	assert_null(vm_vdso_unwind_table(start, start + size + 4096));
	assert_true(vm_vdso_path("[vdso]"));
	assert_false(vm_vdso_path("[vsyscall]"));
	assert_false(vm_vdso_path(NULL));
	print_message("the vDSO: %zu bytes, %zu rows\n", size, t->n);
	for (size_t i = 1; i < t->n; i++)
		assert_true(t->rows[i - 1].addr < t->rows[i].addr);
	assert_int_equal(vm_elf_read_mem(image, size, &info, "[vdso]", NULL),
			 0);
	for (size_t i = 0; i < info.n_syms; i++) {
		const struct vm_unwind_row *row;

		if (!info.syms[i].size)
			continue;
		row = vm_unwind_lookup(t, info.syms[i].addr);
		assert_non_null(row);
		assert_int_equal(row->cfa, VM_UNWIND_SP);
		assert_int_equal(row->cfa_off, 8);
		functions++;
	}
	assert_true(functions > 0);
	vm_elf_info_free(&info);
}

/*
 * An epilogue past `pop %rbp`: the row (CFA = rsp + 8) still says rbp was
 * saved at CFA - 24, now below the stack pointer, where a stack copied
 * from the stack pointer up (perf's) has nothing.  The walk keeps rbp as
 * it is (the pop restored it) and goes on to the caller.
 */
static struct vm_unwind_table epilogue_table;
static uint64_t copy[4];
static const uint64_t copy_sp = 0x7ffd0000;

static const struct vm_unwind_table *
find_epilogue(void *arg, uint64_t pc, uint64_t *link, bool *outside)
{
	(void)arg;
	*link = pc;
	*outside = pc < 0x1000 || pc >= 0x6000;
	return pc >= 0x1000 && pc < 0x2000 ? &epilogue_table : NULL;
}

static bool read_copy(void *arg, uint64_t addr, uint64_t *value)
{
	(void)arg;
	if (addr < copy_sp || addr >= copy_sp + sizeof(copy))
		return false;
	*value = copy[(addr - copy_sp) / 8];
	return true;
}

static void test_epilogue(void **state)
{
	struct vm_unwind_row rows[] = {
		{ .addr = 0x1000,
		  .cfa = VM_UNWIND_SP,
		  .cfa_off = 8,
		  .fp_off = -24,
		  .ra_off = -8 },
		{ .addr = 0x2000, .cfa = VM_UNWIND_NONE },
	};
	struct vm_unwind_regs r = { 0x1050, copy_sp, 0x7ffd0100, 0 };
	struct vm_unwind_counts c = { 0 };
	uint64_t out[4];
	size_t n;

	(void)state;
	epilogue_table.rows = rows;
	epilogue_table.n = 2;
	copy[0] = 0x5000; /* the return address at CFA - 8 */
	n = vm_unwind_stack(&r, find_epilogue, read_copy, NULL, out, NULL, 2,
			    &c);
	assert_int_equal(n, 2);
	assert_int_equal(out[0], 0x1050);
	assert_int_equal(out[1], 0x5000);
	assert_int_equal(c.by_table, 1);
}

static int teardown(void **state)
{
	(void)state;
	free_files();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_through_libc),
		cmocka_unit_test(test_signal_frame),
		cmocka_unit_test(test_epilogue),
		cmocka_unit_test(test_vdso),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
