// SPDX-License-Identifier: Apache-2.0
/*
 * test_unwind_steps.c - the two walks of a user stack held equal, frame
 * by frame: the BPF programs' (bpf/unwind_walk.bpf.h, compiled here with
 * a shim of the two helpers it calls) and the agent's
 * (agent/unwind/unwind.c, perf's).  They take the same step
 * (bpf/unwind_step.h) but find each pc's row their own way: the BPF one
 * among the packed rows and the index of their pages that the feeder
 * writes into its map (agent/unwind/unwind_pack.c; here the shim's
 * array), through mappings biased as the feeder biases them; the agent's
 * by link-time address in the table itself.
 *
 * The stacks are this program's own, built -O2 -fomit-frame-pointer (the
 * Makefile says so for this file), copied from the stack pointer up as
 * perf copies a sample's: the shim's bpf_probe_read_user and the agent's
 * read callback both read that copy.  A table of cases, each a real
 * stack: a recursion 100 calls deep (two functions calling each other,
 * with frames of two sizes), libc's qsort calling back, a signal
 * handler below the kernel's signal frame, each walked to the outermost
 * frame (_start).  Then every row of every table the program maps (its
 * own, libc's, the loader's) starts a walk over the recursion's stack,
 * at the row's first address and at the byte before it: most are cut at
 * once, all alike.  At every frame the pc and the stack pointer (its
 * callee's CFA) must be equal, and so must how each walk ended: at the
 * outermost frame, at its last frame, or cut, never quietly elsewhere.
 * Last, the recursion walked with this program's rules made false (a
 * table its file's owner wrote): cut, by both.
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
#include <linux/types.h>

/* The shim: the BPF walk's two helpers, on the copied stack and rows. */
static long shim_read_user(void *dst, __u32 size, const void *addr);
static void *shim_lookup(const void *map, const void *key);
#define bpf_probe_read_user(dst, size, addr) shim_read_user(dst, size, addr)
#define bpf_map_lookup_elem(map, key) shim_lookup(map, key)

#include "bpf/unwind_walk.bpf.h"

#include "agent/samples/proc.h"
#include "agent/unwind/unwind.h"
#include "agent/unwind/unwind_pack.h"

/* This process's executable mappings, each with its table. */
static struct mapped {
	struct vm_mapping m;
	char path[256];
	struct vm_unwind_table t;
} maps[UNWIND_MAX_MAPS];
static size_t n_maps;

/* What the feeder would give the programs: the store and the entry. */
static struct unwind_row *store;
static size_t n_store;
static struct unwind_proc proc;

/* The stack copied, from copy_sp up, and the registers there. */
static uint8_t *copy;
static uint64_t copy_sp, copy_len, stack_end;
static struct vm_unwind_regs captured;

static long shim_read_user(void *dst, __u32 size, const void *addr)
{
	uint64_t a = (uint64_t)(uintptr_t)addr;

	if (a < copy_sp || a - copy_sp > copy_len ||
	    copy_len - (a - copy_sp) < size) {
		memset(dst, 0, size); /* as the helper leaves it */
		return -EFAULT;
	}
	memcpy(dst, copy + (a - copy_sp), size);
	return 0;
}

static void *shim_lookup(const void *map, const void *key)
{
	uint32_t k = *(const uint32_t *)key;

	assert_ptr_equal(map, &unwind_rows); /* the walk reads no other */
	return k < n_store ? &store[k] : NULL;
}

static bool read_copy(void *arg, uint64_t addr, uint64_t *value)
{
	(void)arg;
	return shim_read_user(value, 8, (void *)(uintptr_t)addr) == 0;
}

/* The agent's find, as perf's walk has it (perfdata_unwind.c). */
static const struct vm_unwind_table *find(void *arg, uint64_t pc,
					  uint64_t *link, bool *outside)
{
	(void)arg;
	*outside = true;
	for (size_t i = 0; i < n_maps; i++) {
		const struct mapped *f = &maps[i];

		if (pc < f->m.start || pc >= f->m.end)
			continue;
		*outside = false;
		if (!f->t.n ||
		    !vm_unwind_link_addr(&f->t, pc - f->m.start + f->m.pgoff,
					 link))
			return NULL;
		return &f->t;
	}
	return NULL;
}

/* The entry of mapping f, its rows packed into the store as the feeder. */
static void feed(struct mapped *f, struct unwind_map *e)
{
	uint32_t shift, pages;
	size_t size;
	uint64_t bias;

	*e = (struct unwind_map){ .start = f->m.start, .end = f->m.end };
	if (!f->t.n || !vm_unwind_bias(&f->t, &f->m, &bias))
		return;
	size = vm_unwind_pack_size(&f->t, &shift, &pages);
	store = realloc(store, (n_store + size) * sizeof(*store));
	assert_non_null(store);
	assert_true(vm_unwind_pack(&f->t, shift, pages, &store[n_store]));
	e->bias = bias;
	e->first = (uint32_t)n_store;
	e->count = (uint32_t)f->t.n;
	e->index = (uint32_t)(n_store + f->t.n);
	e->pages = pages;
	e->shift = shift;
	n_store += size;
}

static int setup(void **state)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];

	(void)state;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct mapped *p = &maps[n_maps];
		unsigned long long s, e;
		uint64_t dev, ino;
		int fd;

		if (strstr(line, "[stack]") &&
		    sscanf(line, "%llx-%llx", &s, &e) == 2)
			stack_end = e;
		if (n_maps == UNWIND_MAX_MAPS ||
		    vm_proc_parse_maps_line(line, &p->m, &dev, &ino) != 1)
			continue;
		n_maps++;
		if (!p->m.path || p->m.path[0] != '/')
			continue; /* walked by the frame pointer, by both */
		snprintf(p->path, sizeof(p->path), "%s", p->m.path);
		p->m.path = p->path;
		fd = open(p->path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			vm_unwind_table_build_fd(fd, &p->t, p->path, NULL);
			close(fd);
		}
	}
	fclose(f);
	if (!stack_end || !n_maps)
		return -1;
	proc.n = (uint32_t)n_maps;
	for (size_t i = 0; i < n_maps; i++)
		feed(&maps[i], &proc.m[i]);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < n_maps; i++)
		vm_unwind_table_free(&maps[i].t);
	free(store);
	free(copy);
	return 0;
}

/* The stack from sp up, as perf copies a sample's; not ASan's to check. */
__attribute__((noinline, no_sanitize_address)) static void
copy_stack(uint64_t sp)
{
	const volatile uint64_t *from = (const uint64_t *)(uintptr_t)sp;
	uint64_t *to;

	free(copy);
	copy_sp = sp;
	copy_len = stack_end - sp;
	copy = malloc(copy_len);
	assert_non_null(copy);
	to = (uint64_t *)copy;
	for (uint64_t i = 0; i < copy_len / 8; i++)
		to[i] = from[i];
}

/* The registers of this very frame, and the stack it is on. */
__attribute__((noinline)) static void capture(void)
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
	captured = r;
	copy_stack(r.sp);
}

static volatile int sink;

/* Two functions calling each other, with frames of two sizes. */
__attribute__((noinline)) static void pong(int depth);

__attribute__((noinline)) static void ping(int depth)
{
	if (!depth)
		capture();
	else
		pong(depth);
	sink++; /* not a tail call */
}

__attribute__((noinline)) static void pong(int depth)
{
	volatile uint64_t pad[5] = { 0 };

	pad[depth % 5] = (uint64_t)depth;
	ping(depth - 1);
	sink += pad[depth % 5] == (uint64_t)depth; /* not a tail call */
}

static void in_recursion(void)
{
	ping(50);
}

static int compare_capturing(const void *a, const void *b)
{
	if (!copy)
		capture();
	return *(const int *)a - *(const int *)b;
}

static void in_qsort(void)
{
	int v[64];

	for (int i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	free(copy);
	copy = NULL;
	qsort(v, 64, sizeof(v[0]), compare_capturing);
	sink++;
}

static void on_signal(int sig)
{
	(void)sig;
	capture();
	sink++;
}

static void in_signal_handler(void)
{
	signal(SIGUSR1, on_signal);
	raise(SIGUSR1);
	signal(SIGUSR1, SIG_DFL);
	sink++;
}

/* A walk's frames and how it ended. */
struct walked {
	uint64_t ips[STACK_MAX_DEPTH], sps[STACK_MAX_DEPTH];
	size_t n;
	struct vm_unwind_counts counts;
};

static void walk_bpf(const struct vm_unwind_regs *from, struct walked *out)
{
	static struct stack_record rec;
	struct unwind_state w;

	unwind_begin(&w, from->pc, from->sp, from->fp, from->lr);
	for (int i = 0; i < STACK_MAX_DEPTH; i++) {
		out->sps[w.n] = w.walk.r.sp;
		if (unwind_frame(&w, &rec, &proc))
			break;
	}
	out->n = w.n;
	memcpy(out->ips, rec.ips, w.n * sizeof(out->ips[0]));
	out->counts = (struct vm_unwind_counts){
		.by_table = w.walk.by_table,
		.by_frame_pointer = w.walk.by_fp,
		.outermost = w.walk.outermost,
		.cut = w.walk.cut,
	};
}

static void walk_agent(const struct vm_unwind_regs *from, struct walked *out)
{
	memset(&out->counts, 0, sizeof(out->counts));
	out->n = vm_unwind_stack(from, find, read_copy, NULL, out->ips,
				 out->sps, STACK_MAX_DEPTH, &out->counts);
}

/* Both walks from `from` over the copy: equal at every frame. */
static void walk_both(const struct vm_unwind_regs *from, struct walked *b)
{
	struct walked a;

	walk_agent(from, &a);
	walk_bpf(from, b);
	assert_int_equal(a.n, b->n);
	for (size_t i = 0; i < a.n; i++) {
		if (a.ips[i] != b->ips[i] || a.sps[i] != b->sps[i])
			fail_msg("frame %zu from pc %#llx: pc %#llx, sp %#llx "
				 "(agent) against %#llx, %#llx (BPF)",
				 i, (unsigned long long)from->pc,
				 (unsigned long long)a.ips[i],
				 (unsigned long long)a.sps[i],
				 (unsigned long long)b->ips[i],
				 (unsigned long long)b->sps[i]);
	}
	assert_int_equal(a.counts.by_table, b->counts.by_table);
	assert_int_equal(a.counts.by_frame_pointer, b->counts.by_frame_pointer);
	assert_int_equal(a.counts.outermost, b->counts.outermost);
	assert_int_equal(a.counts.cut, b->counts.cut);
	/* Each walk ends at the outermost frame, its last frame, or cut. */
	if (a.n < STACK_MAX_DEPTH && a.counts.outermost + a.counts.cut != 1)
		fail_msg("the walk from pc %#llx ended after %zu frames at pc "
			 "%#llx, neither outermost nor cut",
			 (unsigned long long)from->pc, a.n,
			 (unsigned long long)a.ips[a.n - 1]);
}

static const struct {
	const char *name;
	void (*run)(void); /* captures a stack */
	size_t at_least; /* frames */
} cases[] = {
	{ "a recursion 100 calls deep", in_recursion, 101 },
	{ "libc's qsort calling back", in_qsort, 5 },
	{ "a signal handler", in_signal_handler, 5 },
};

static void real_stacks_equal(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct walked w;

		/*
		 * arm64's signal trampoline is the vDSO's (with its unwind
		 * table); under qemu-user there is none.
		 */
		if (cases[i].run == in_signal_handler && UNWIND_RA_BITS &&
		    !getauxval(AT_SYSINFO_EHDR)) {
			print_message("%s: no vDSO, passed over\n",
				      cases[i].name);
			continue;
		}
		cases[i].run();
		walk_both(&captured, &w);
		print_message("%s: %zu frames, %llu by table, %llu by frame "
			      "pointer\n",
			      cases[i].name, w.n,
			      (unsigned long long)w.counts.by_table,
			      (unsigned long long)w.counts.by_frame_pointer);
		/* A real walk: to _start, whose caller is undefined. */
		assert_true(w.n >= cases[i].at_least);
		assert_int_equal(w.counts.outermost, 1);
		assert_int_equal(w.counts.cut, 0);
	}
}

static void every_row_equal(void **state)
{
	size_t walks = 0, deep = 0;

	(void)state;
	in_recursion();
	for (size_t i = 0; i < n_maps; i++) {
		const struct mapped *f = &maps[i];
		const struct unwind_map *e = &proc.m[i];

		for (size_t k = 0; k < e->count; k++) {
			uint64_t pc =
				f->t.rows[k].addr - f->t.rows[0].addr + e->bias;

			for (int back = 0; back <= 1; back++) {
				struct vm_unwind_regs from = captured;
				struct walked w;

				from.pc = pc - (uint64_t)back;
				if (from.pc < f->m.start || from.pc >= f->m.end)
					continue;
				walk_both(&from, &w);
				walks++;
				deep += w.n > 2;
			}
		}
	}
	print_message("%zu walks from the rows of %zu mappings (%zu rows "
		      "packed), %zu past two frames\n",
		      walks, n_maps, n_store, deep);
	assert_true(walks > 10000); /* libc's rows among them */
}

/*
 * This program's rules made false, each CFA 8 bytes off, as a table
 * its owner wrote to look like another file's would be: the walk of the
 * recursion leaves it, and both walks say it was cut.
 */
static void false_table_cut(void **state)
{
	uint64_t here = (uint64_t)(uintptr_t)in_recursion;
	struct unwind_map kept;
	struct walked w;
	size_t i = 0;

	(void)state;
	while (i < n_maps && (here < maps[i].m.start || here >= maps[i].m.end))
		i++;
	assert_true(i < n_maps && maps[i].t.n > 0);
	kept = proc.m[i];
	for (size_t k = 0; k < maps[i].t.n; k++)
		maps[i].t.rows[k].cfa_off += 8;
	feed(&maps[i], &proc.m[i]);
	in_recursion();
	walk_both(&captured, &w);
	for (size_t k = 0; k < maps[i].t.n; k++)
		maps[i].t.rows[k].cfa_off -= 8;
	proc.m[i] = kept;
	print_message("a false table: %zu frames, %llu by table, %llu by "
		      "frame pointer, cut %llu\n",
		      w.n, (unsigned long long)w.counts.by_table,
		      (unsigned long long)w.counts.by_frame_pointer,
		      (unsigned long long)w.counts.cut);
	assert_int_equal(w.counts.outermost, 0);
	assert_int_equal(w.counts.cut, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(real_stacks_equal),
		cmocka_unit_test(every_row_equal),
		cmocka_unit_test(false_table_cut),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
