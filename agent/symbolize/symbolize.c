// SPDX-License-Identifier: Apache-2.0
/*
 * symbolize.c - naming the frames of every sample (see symbolize.h).
 *
 * For a user address, the process's mapping holding it gives the file and
 * the file offset (addr - start + pgoff); the file's PT_LOAD segments turn
 * that offset into the link-time address its symbol tables use.  Return
 * addresses (every frame but the innermost) are looked up one byte back,
 * so a call that is the last instruction of a function is not charged to
 * the next one.  Per-process work (the symbol file of each mapping) is
 * memoized for the run, and so is each frame named (struct named);
 * per-binary work is cached across runs.
 */
#include "agent/symbolize/symbolize.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/samples/pg_memctx.h"
#include "agent/symbolize/debuginfod.h"
#include "agent/symbolize/kallsyms.h"
#include "agent/symbolize/pgtitle.h"
#include "agent/symbolize/pgwait.h"
#include "agent/symbolize/symcache.h"
#include "agent/unwind/vdso.h"
#include "common/array.h"
#include "common/memo.h"
#include "common/search.h"

const char *vm_symbolized_intern(struct vm_symbolized *y, const char *str)
{
	/* A profile's names: many, each looked up once a window, by hash. */
	if (!y->strings.count)
		y->strings.hashed = true;
	return vm_strpool_intern(&y->strings, str);
}

/*
 * The frames named so far in this call, by (process, address, leaf): a
 * window's stacks share most of their frames, and naming one (its
 * mapping, its symbol, interning the name) costs far more than looking it
 * up again.  The memo holds index + 1 in v.  Processes that map the same
 * file at the same place (the backends a postmaster forked) share what
 * was named there, by (output mapping, address, leaf): `files` has the
 * file (device, inode) of each output mapping and its symbols, the first
 * process's.  `views` are the distinct views of the files debug files are
 * looked for in (view_of).
 */
struct named {
	struct vm_memo memo;
	struct vm_sym_frame *v;
	size_t n, cap;
	struct named_file {
		uint64_t dev, ino; /* ino 0: no file, nothing shared */
		const struct vm_symfile *sf;
	} * files;
	size_t cap_files;
	struct named_view {
		uint64_t mnt_ns; /* its mount namespace's inode */
		char *root; /* where its root is, as /proc/PID/root reads */
	} * views;
	size_t n_views, cap_views;
};

/* What open_path is for a file the profile holds open (proc.c). */
#define HELD_PREFIX "/proc/self/fd/"

/* Slots of the memo: 4,096 frames (128 KiB) recalled at once. */
#define NAMED_MEMO_BITS 12
/*
 * Who a kernel frame belongs to in the memo; a process is its index + 1.
 * NAMED_SYMBOL keys a symbol's interned name by the symbol's address,
 * NAMED_VIEW a view (view_of) by its mount namespace and a key of its
 * root, NAMED_FILE + V the symbol file of a file the profile holds open,
 * as processes of view V see it, by its device and inode.
 */
#define NAMED_KERNEL UINT64_MAX
#define NAMED_SYMBOL (UINT64_MAX - 1)
#define NAMED_VIEW (UINT64_MAX - 2)
#define NAMED_FILE (1ULL << 61)
/* A frame of an output mapping, whatever process: this + its number. */
#define NAMED_MAPPED (1ULL << 62)

static bool recall(const struct named *nd, uint64_t who, uint64_t addr,
		   bool leaf, struct vm_sym_frame *f)
{
	uint64_t i;

	if (!nd || !vm_memo_get(&nd->memo, who, addr, leaf, &i))
		return false;
	*f = nd->v[i - 1];
	return true;
}

/* Remember f; with no memory for it, it is named again next time. */
static void remember(struct named *nd, uint64_t who, uint64_t addr, bool leaf,
		     const struct vm_sym_frame *f)
{
	if (!nd || vm_grow(nd->v, &nd->cap, nd->n + 1) < 0)
		return;
	nd->v[nd->n++] = *f;
	vm_memo_put(&nd->memo, who, addr, leaf, nd->n);
}

/* Per process: what each of its mappings resolves to, filled lazily. */
struct proc_memo {
	const struct vm_process *proc;
	struct vm_symcache *sc; /* where its files' symbols are */
	struct named *named; /* NULL: name every frame afresh */
	uint64_t who; /* its key in named */
	uint64_t view; /* view_of's, 0 until asked */
	const struct vm_symfile **files; /* per mapping; NULL: not loaded */
	bool *tried;
	uint32_t *mapping_ids; /* per mapping: index + 1 in the output */
	/*
	 * The mappings' indexes by start address, for a binary search (a
	 * process may have tens of thousands); NULL when some overlap (a
	 * child's inherited mappings and its own), where the first one in
	 * order that holds an address is the one, found by a scan.
	 */
	uint32_t *by_start;
	const char *backend_type; /* PostgreSQL's, once typed */
	bool typed;
};

static void hex_build_id(char *out, const uint8_t *id, size_t len)
{
	out[0] = '\0';
	for (size_t i = 0; i < len && i < VM_BUILD_ID_MAX; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
}

static uint32_t add_mapping(struct vm_symbolized *y,
			    const struct vm_sym_mapping *m)
{
	for (size_t i = 0; i < y->n_mappings; i++) {
		const struct vm_sym_mapping *x = &y->mappings[i];

		if (x->start == m->start && x->end == m->end &&
		    x->pgoff == m->pgoff && x->file == m->file &&
		    x->kernel == m->kernel && !strcmp(x->build_id, m->build_id))
			return i + 1;
	}
	if (vm_grow(y->mappings, &y->cap_mappings, y->n_mappings + 1) < 0)
		return 0;
	y->mappings[y->n_mappings++] = *m;
	return y->n_mappings;
}

/* The start of the mapping by_start's entry names; arg is the process. */
static uint64_t start_by_index(const void *i, const void *arg)
{
	const struct vm_process *p = arg;

	return p->maps[*(const uint32_t *)i].start;
}

static const struct vm_mapping *find_mapping(const struct proc_memo *pm,
					     uint64_t addr, size_t *idx)
{
	const struct vm_process *p = pm->proc;
	const uint32_t *i;

	if (!pm->by_start) {
		for (size_t i = 0; i < p->n_maps; i++)
			if (addr >= p->maps[i].start && addr < p->maps[i].end) {
				*idx = i;
				return &p->maps[i];
			}
		return NULL;
	}
	/* The last mapping that starts at or below addr holds it, or none. */
	i = vm_bsearch_floor(addr, pm->by_start, p->n_maps,
			     sizeof(*pm->by_start), start_by_index, p);
	if (!i || addr >= p->maps[*i].end)
		return NULL;
	*idx = *i;
	return &p->maps[*idx];
}

/* By start address; qsort_r's arg is the process. */
static int cmp_start(const void *a, const void *b, void *arg)
{
	const struct vm_process *p = arg;
	const struct vm_mapping *x = &p->maps[*(const uint32_t *)a];
	const struct vm_mapping *y = &p->maps[*(const uint32_t *)b];

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * pm->by_start for its process; left NULL when the mappings overlap, or
 * there is no memory for it (the scan then).
 */
static void index_mappings(struct proc_memo *pm)
{
	const struct vm_process *p = pm->proc;
	uint32_t *v;

	if (p->n_maps < 2 || p->n_maps > UINT32_MAX)
		return;
	v = malloc(p->n_maps * sizeof(*v));
	if (!v)
		return;
	for (size_t i = 0; i < p->n_maps; i++)
		v[i] = (uint32_t)i;
	qsort_r(v, p->n_maps, sizeof(*v), cmp_start, (void *)p);
	for (size_t i = 1; i < p->n_maps; i++)
		if (p->maps[v[i - 1]].end > p->maps[v[i]].start) {
			free(v);
			return;
		}
	pm->by_start = v;
}

/* FILE+0xADDR, FILE the base name of path: what names a frame no symbol does. */
static int name_by_address(struct vm_symbolized *y, struct vm_sym_frame *f,
			   const char *path, uint64_t addr,
			   enum vm_name_source source)
{
	const char *base = strrchr(path, '/');
	char buf[300];

	snprintf(buf, sizeof(buf), "%.256s+0x%" PRIx64, base ? base + 1 : path,
		 addr);
	f->function = vm_symbolized_intern(y, buf);
	f->source = source;
	return f->function ? 0 : -ENOMEM;
}

/*
 * A caller's address is looked up one byte back (a call that ends its
 * function must not be charged to the next one), but the frame a signal
 * handler returns to is __restore_rt's first byte, not a return address:
 * glibc puts a nop before it that no symbol covers (and .eh_frame does,
 * for unwinders that look back).  So when the byte before is in no
 * function and the address itself starts one, that function is the
 * frame.  The symbol of the frame at vaddr, or NULL.
 */
static const struct vm_elf_symbol *frame_symbol(const struct vm_symfile *sf,
						uint64_t *vaddr, bool leaf)
{
	const struct vm_elf_symbol *sym = vm_elf_lookup(&sf->info, *vaddr), *at;

	if (sym || leaf)
		return sym;
	at = vm_elf_lookup(&sf->info, *vaddr + 1);
	if (at && at->addr == *vaddr + 1) {
		(*vaddr)++;
		return at;
	}
	return NULL;
}

/*
 * A symbol's name str, interned: once a window per symbol sym (a file's
 * or kallsyms', which stay put while the symbol cache is locked), not
 * once per frame.
 */
static const char *symbol_name(struct vm_symbolized *y, struct named *nd,
			       const void *sym, const char *str)
{
	const char *name;
	uint64_t v;

	if (nd && vm_memo_get(&nd->memo, NAMED_SYMBOL, (uintptr_t)sym, 0, &v))
		return (const char *)(uintptr_t)v;
	name = vm_symbolized_intern(y, str);
	if (nd && name)
		vm_memo_put(&nd->memo, NAMED_SYMBOL, (uintptr_t)sym, 0,
			    (uintptr_t)name);
	return name;
}

/*
 * The name of the user frame f at link-time address vaddr of sf: its
 * symbol, else the start of the function holding it, else vaddr itself.
 */
static int name_user_frame(struct vm_symbolized *y, struct named *nd,
			   struct vm_sym_frame *f, const struct vm_symfile *sf,
			   const char *path, uint64_t vaddr, bool leaf)
{
	const struct vm_elf_symbol *sym = frame_symbol(sf, &vaddr, leaf);
	uint64_t start;

	if (!sym && vm_elf_function_start(&sf->info, vaddr, &start))
		return name_by_address(y, f, path, start,
				       VM_NAME_FUNCTION_START);
	if (!sym)
		return name_by_address(y, f, path, vaddr, VM_NAME_ADDRESS);
	f->function = symbol_name(y, nd, sym, sym->name);
	f->source = sym->from_debug_file ? VM_NAME_DEBUG_FILE : VM_NAME_SYMBOL;
	return f->function ? 0 : -ENOMEM;
}

/* The symbol file of m's file, or NULL. */
static const struct vm_symfile *lookup_file(const struct proc_memo *pm,
					    const struct vm_mapping *m)
{
	const struct vm_process *p = pm->proc;
	const struct vm_symfile *sf;
	char root[64];

	snprintf(root, sizeof(root), "/proc/%u/root", p->pid);
	if (m->path && m->path[0] == '/' &&
	    vm_symcache_get(pm->sc, m->open_path ? m->open_path : m->path,
			    m->path, p->exited ? "" : root, m->dev, &sf,
			    NULL) == 0)
		return sf;
	if (vm_vdso_path(m->path) && vm_symcache_get_vdso(pm->sc, &sf) == 0)
		return sf;
	return NULL;
}

/*
 * A number for what pm's process sees where debug files are looked for:
 * the same for the processes of one mount namespace with one root (those
 * see the same files there), and for those whose root is not known any
 * more (exited, or gone since: looked up under ours).  1 + its index in
 * nd->views; 0 when there is no memory to tell.
 */
static uint64_t view_of(struct named *nd, struct proc_memo *pm)
{
	const struct vm_process *p = pm->proc;
	struct named_view *v;
	char path[64], root[4096] = "";
	struct stat st;
	uint64_t ns = 0, i;
	ssize_t len;

	if (pm->view)
		return pm->view;
	snprintf(path, sizeof(path), "/proc/%u/ns/mnt", p->pid);
	if (!p->exited && !stat(path, &st)) {
		snprintf(path, sizeof(path), "/proc/%u/root", p->pid);
		len = readlink(path, root, sizeof(root) - 1);
		if (len > 0) {
			root[len] = '\0';
			ns = st.st_ino;
		} else {
			root[0] = '\0';
		}
	}
	if (vm_memo_get(&nd->memo, NAMED_VIEW, ns,
			vm_memo_bytes_key(root, strlen(root)), &i) &&
	    nd->views[i - 1].mnt_ns == ns &&
	    !strcmp(nd->views[i - 1].root, root))
		return pm->view = i;
	if (vm_grow(nd->views, &nd->cap_views, nd->n_views + 1) < 0)
		return 0;
	v = &nd->views[nd->n_views];
	v->mnt_ns = ns;
	v->root = strdup(root);
	if (!v->root)
		return 0;
	pm->view = ++nd->n_views;
	vm_memo_put(&nd->memo, NAMED_VIEW, ns,
		    vm_memo_bytes_key(root, strlen(root)), pm->view);
	return pm->view;
}

/*
 * The same, found once a window per file the profile holds open and
 * view of it (each lookup opens the file again): the binary is the same
 * whatever process maps it, its debug file the same for each view.
 */
static const struct vm_symfile *symbol_file(struct proc_memo *pm,
					    const struct vm_mapping *m)
{
	struct named *nd = pm->named;
	const struct vm_symfile *sf;
	uint64_t v, view = 0;
	bool held = nd && m->ino && m->open_path && m->path &&
		    m->path[0] == '/' &&
		    !strncmp(m->open_path, HELD_PREFIX, strlen(HELD_PREFIX));

	if (held)
		view = view_of(nd, pm);
	held = held && view;
	if (held &&
	    vm_memo_get(&nd->memo, NAMED_FILE + view, m->dev, m->ino, &v))
		return (const struct vm_symfile *)(uintptr_t)v;
	sf = lookup_file(pm, m);
	if (held && sf)
		vm_memo_put(&nd->memo, NAMED_FILE + view, m->dev, m->ino,
			    (uintptr_t)sf);
	return sf;
}

/*
 * Whether what was named in output mapping id (whose file m maps, named
 * by sf) holds for m too: the same file, with the same symbols, as the
 * first process that used id had there.
 */
static bool same_file_there(struct named *nd, uint32_t id,
			    const struct vm_mapping *m,
			    const struct vm_symfile *sf)
{
	size_t cap = nd->cap_files;

	if (!m->ino)
		return false;
	if (id > cap) {
		if (vm_grow(nd->files, &nd->cap_files, id) < 0)
			return false;
		memset(&nd->files[cap], 0,
		       (nd->cap_files - cap) * sizeof(*nd->files));
	}
	if (!nd->files[id - 1].ino) {
		nd->files[id - 1].dev = m->dev;
		nd->files[id - 1].ino = m->ino;
		nd->files[id - 1].sf = sf;
	}
	return nd->files[id - 1].dev == m->dev &&
	       nd->files[id - 1].ino == m->ino && nd->files[id - 1].sf == sf;
}

static int name_user_address(struct vm_symbolized *y, struct proc_memo *pm,
			     uint64_t addr, bool leaf, struct vm_sym_frame *f)
{
	const struct vm_process *p = pm->proc;
	const struct vm_mapping *m;
	const struct vm_symfile *sf;
	const char *file;
	int r;
	uint64_t lookup = leaf ? addr : addr - 1, vaddr;
	size_t i;
	bool shared;

	f->addr = addr;
	f->mapping = 0;
	f->function = NULL;
	if (!p || !(m = find_mapping(pm, lookup, &i))) {
		/* No file to say what it is, so no address to keep. */
		f->function = vm_symbolized_intern(y, "[unknown]");
		f->source = VM_NAME_ADDRESS;
		return f->function ? 0 : -ENOMEM;
	}

	if (!pm->tried[i]) {
		pm->tried[i] = true;
		pm->files[i] = symbol_file(pm, m);
	}
	sf = pm->files[i];

	if (!pm->mapping_ids[i]) {
		struct vm_sym_mapping sm = {
			.start = m->start,
			.end = m->end,
			.pgoff = m->pgoff,
		};

		sm.file = vm_symbolized_intern(y, m->path ? m->path : "[anon]");
		if (!sm.file)
			return -ENOMEM;
		if (m->build_id_len)
			hex_build_id(sm.build_id, m->build_id, m->build_id_len);
		else if (sf)
			hex_build_id(sm.build_id, sf->info.build_id,
				     sf->info.build_id_len);
		pm->mapping_ids[i] = add_mapping(y, &sm);
		if (!pm->mapping_ids[i])
			return -ENOMEM;
	}
	f->mapping = pm->mapping_ids[i];
	file = y->mappings[f->mapping - 1].file;
	shared = pm->named && same_file_there(pm->named, f->mapping, m, sf);
	if (shared &&
	    recall(pm->named, NAMED_MAPPED + f->mapping, addr, leaf, f))
		return 0;

	/* Without the file's segments, the file offset is the address. */
	if (!sf || !vm_elf_offset_to_addr(&sf->info,
					  lookup - m->start + m->pgoff, &vaddr))
		r = name_by_address(y, f, file, lookup - m->start + m->pgoff,
				    VM_NAME_ADDRESS);
	else
		r = name_user_frame(y, pm->named, f, sf, file, vaddr, leaf);
	if (r)
		return r;
	y->mappings[f->mapping - 1].has_functions = true;
	if (shared)
		remember(pm->named, NAMED_MAPPED + f->mapping, addr, leaf, f);
	return 0;
}

static int user_frame(struct vm_symbolized *y, struct proc_memo *pm,
		      uint64_t addr, bool leaf, struct vm_sym_frame *f)
{
	int r;

	if (pm->proc && recall(pm->named, pm->who, addr, leaf, f))
		return 0;
	r = name_user_address(y, pm, addr, leaf, f);
	if (!r && pm->proc)
		remember(pm->named, pm->who, addr, leaf, f);
	return r;
}

/* Kernel frames get their mapping number once all user ones are known. */
#define KERNEL_MAPPING_PENDING UINT32_MAX

static int name_kernel_address(struct vm_symbolized *y,
			       const struct vm_kallsyms *k, struct named *nd,
			       uint64_t addr, bool leaf, struct vm_sym_frame *f)
{
	const struct vm_ksym *sym;

	f->addr = addr;
	f->mapping = KERNEL_MAPPING_PENDING;
	f->function = NULL;
	sym = k ? vm_kallsyms_lookup(k, leaf ? addr : addr - 1) : NULL;
	if (!sym)
		return name_by_address(y, f, VM_KERNEL_MAPPING, addr,
				       VM_NAME_ADDRESS);
	f->function = symbol_name(y, nd, sym, sym->name);
	f->source = VM_NAME_SYMBOL;
	return f->function ? 0 : -ENOMEM;
}

static int kernel_frame(struct vm_symbolized *y, const struct vm_kallsyms *k,
			struct named *nd, uint64_t addr, bool leaf,
			struct vm_sym_frame *f)
{
	int r;

	if (recall(nd, NAMED_KERNEL, addr, leaf, f))
		return 0;
	r = name_kernel_address(y, k, nd, addr, leaf, f);
	if (!r)
		remember(nd, NAMED_KERNEL, addr, leaf, f);
	return r;
}

static void free_memos(struct proc_memo *memos, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(memos[i].files);
		free(memos[i].tried);
		free(memos[i].mapping_ids);
		free(memos[i].by_start);
	}
	free(memos);
}

/*
 * The kernel mapping spans the kernel addresses sampled.  It comes last:
 * pprof takes the first mapping for the main binary.
 */
static int kernel_mapping(struct vm_symbolized *y, const struct vm_samples *s,
			  uint32_t *kmap)
{
	struct vm_sym_mapping km = { .start = UINT64_MAX, .kernel = true };

	*kmap = 0;
	for (size_t i = 0; i < s->n; i++)
		for (size_t j = 0; j < s->v[i].n_kernel; j++) {
			uint64_t a = s->v[i].kernel_ips[j];

			if (a < km.start)
				km.start = a;
			if (a >= km.end)
				km.end = a + 1;
		}
	if (km.start == UINT64_MAX)
		return 0;
	km.file = vm_symbolized_intern(y, VM_KERNEL_MAPPING);
	if (!km.file || !(*kmap = add_mapping(y, &km)))
		return -ENOMEM;
	return 0;
}

/* Per process, one slot per mapping (one for a process without any). */
static int alloc_memos(struct vm_symcache *sc, const struct vm_samples *s,
		       struct proc_memo *memos, struct named *nd)
{
	for (size_t i = 0; i < s->n_procs; i++) {
		size_t n = s->procs[i].n_maps ? s->procs[i].n_maps : 1;

		memos[i].proc = &s->procs[i];
		memos[i].sc = sc;
		memos[i].named = nd;
		memos[i].who = i + 1;
		memos[i].files = calloc(n, sizeof(*memos[i].files));
		memos[i].tried = calloc(n, sizeof(*memos[i].tried));
		memos[i].mapping_ids = calloc(n, sizeof(uint32_t));
		if (!memos[i].files || !memos[i].tried || !memos[i].mapping_ids)
			return -ENOMEM;
		index_mappings(&memos[i]);
	}
	return 0;
}

/*
 * pprof takes the first mapping for the main binary: register the
 * executable (the first file mapping /proc/PID/maps lists) of the
 * sampled processes before anything else.
 */
static int register_executables(struct vm_symbolized *y,
				const struct vm_samples *s,
				struct proc_memo *memos)
{
	int r;

	for (size_t i = 0; i < s->n; i++)
		for (size_t j = 0; j < s->n_procs; j++)
			if (s->procs[j].pid == s->v[i].pid &&
			    s->procs[j].n_maps && !memos[j].mapping_ids[0]) {
				const struct vm_mapping *m =
					&s->procs[j].maps[0];
				struct vm_sym_frame f;

				if (!m->path || m->path[0] != '/')
					break;
				r = user_frame(y, &memos[j], m->start, true,
					       &f);
				if (r)
					return r;
				break;
			}
	return 0;
}

/*
 * The memo of the process that took sample x, NULL when it was never
 * captured; st gets the process and its PostgreSQL backend type.
 */
static struct proc_memo *stack_process(const struct vm_samples *s,
				       struct proc_memo *memos,
				       const struct vm_sample *x,
				       struct vm_sym_stack *st)
{
	struct proc_memo *pm = NULL;

	for (size_t j = 0; j < s->n_procs; j++)
		if (s->procs[j].pid == x->pid) {
			pm = &memos[j];
			st->proc = &s->procs[j];
			break;
		}
	/*
	 * A process's type is its command's and title's, read once a window
	 * (a sample's own command only when the process has none).
	 */
	if (pm && pm->typed) {
		st->backend_type = pm->backend_type;
		return pm;
	}
	st->backend_type = vm_pg_backend_type(
		st->proc && st->proc->comm[0] ? st->proc->comm : x->comm,
		st->proc ? st->proc->title : NULL);
	if (pm && st->proc->comm[0]) {
		pm->backend_type = st->backend_type;
		pm->typed = true;
	}
	return pm;
}

/* PostgreSQL's name of the sample's wait event, in its version's words. */
static int wait_event_label(struct vm_symbolized *y, const struct vm_sample *x,
			    struct vm_sym_stack *st)
{
	char name[128];

	st->wait_event = NULL;
	if (!x->wait_event || !st->proc ||
	    !vm_pg_wait_event_name(vm_pg_layout(st->proc->pg_major),
				   st->proc->pg_minor, x->wait_event, name,
				   sizeof(name)))
		return 0;
	st->wait_event = vm_symbolized_intern(y, name);
	return st->wait_event ? 0 : -ENOMEM;
}

/* A lost stack keeps its place, named, never dropped. */
static int lost_frame(struct vm_symbolized *y, const char *name,
		      struct vm_sym_frame *f)
{
	f->function = vm_symbolized_intern(y, name);
	return f->function ? 0 : -ENOMEM;
}

/*
 * A stack taken by a program on a tracepoint (the off-CPU profiler's
 * blocks) starts in the program and the kernel's glue that ran it: leave
 * those out, so that the stack starts where the traced thread was.  The
 * glue (bpf_trace_runN, __bpf_trace_*) is named by kallsyms; the program
 * itself may not be, or be misnamed, when kallsyms was read before it was
 * loaded, so everything up to the last glue frame among the first few
 * goes.  frames [first, n) are the kernel frames; returns the new n.
 */
static size_t drop_profiler_frames(struct vm_sym_frame *frames, size_t first,
				   size_t n)
{
	static const char *const glue[] = { "bpf_trace_run", "__bpf_trace_" };
	size_t drop = 0;

	for (size_t i = first; i < n && i < first + 4; i++)
		for (size_t g = 0; g < sizeof(glue) / sizeof(glue[0]); g++)
			if (frames[i].function &&
			    !strncmp(frames[i].function, glue[g],
				     strlen(glue[g])))
				drop = i - first + 1;
	if (drop)
		memmove(&frames[first], &frames[first + drop],
			(n - first - drop) * sizeof(*frames));
	return n - drop;
}

/*
 * The frames of sample x, innermost first: kernel, then user, a lost
 * stack named where its frames would have been.
 */
static int name_frames(struct vm_symbolized *y, const struct vm_kallsyms *k,
		       struct named *nd, struct proc_memo *pm,
		       const struct vm_sample *x, struct vm_sym_stack *st)
{
	size_t n = 0, first;
	int r;

	st->frames = calloc(x->n_kernel + x->n_user + 2, sizeof(*st->frames));
	if (!st->frames)
		return -ENOMEM;
	if (x->lost & VM_SAMPLE_LOST_KERNEL) {
		r = lost_frame(y, "[lost kernel stack]", &st->frames[n++]);
		if (r)
			return r;
	}
	first = n; /* the innermost real frame is the leaf */
	/* A 0 is no frame: a frame-pointer walk can store one as it ends. */
	for (size_t j = 0; j < x->n_kernel; j++) {
		if (!x->kernel_ips[j])
			continue;
		r = kernel_frame(y, k, nd, x->kernel_ips[j], n == first,
				 &st->frames[n]);
		if (r)
			return r;
		n++;
	}
	if (x->state == VM_STATE_BLOCKED)
		n = drop_profiler_frames(st->frames, first, n);
	for (size_t j = 0; j < x->n_user; j++) {
		if (!x->user_ips[j])
			continue;
		r = user_frame(y, pm, x->user_ips[j], n == first,
			       &st->frames[n]);
		if (r)
			return r;
		n++;
	}
	if (x->lost & VM_SAMPLE_LOST_USER) {
		r = lost_frame(y, "[lost user stack]", &st->frames[n++]);
		if (r)
			return r;
	}
	st->n_frames = n;
	return 0;
}

/* Stack i of y: its process, its frames, and how many of them have names. */
static int symbolize_stack(struct vm_symbolized *y, const struct vm_samples *s,
			   const struct vm_kallsyms *k, struct named *nd,
			   struct proc_memo *memos, size_t i)
{
	const struct vm_sample *x = &s->v[i];
	struct vm_sym_stack *st = &y->stacks[i];
	struct proc_memo none = { 0 }, *pm;
	int r;

	st->sample = x;
	pm = stack_process(s, memos, x, st);
	r = wait_event_label(y, x, st);
	if (r)
		return r;
	r = name_frames(y, k, nd, pm ? pm : &none, x, st);
	if (r)
		return r;
	for (size_t j = 0; j < st->n_frames; j++)
		y->frames_by[st->frames[j].source]++;
	y->frames_total += st->n_frames;
	return 0;
}

/* Kernel frames, pending so far, get the kernel mapping, which comes last. */
static int assign_kernel_mapping(struct vm_symbolized *y,
				 const struct vm_samples *s)
{
	uint32_t kmap;
	int r;

	r = kernel_mapping(y, s, &kmap);
	if (r)
		return r;
	for (size_t i = 0; i < s->n; i++)
		for (size_t j = 0; j < y->stacks[i].n_frames; j++) {
			struct vm_sym_frame *f = &y->stacks[i].frames[j];

			if (f->mapping != KERNEL_MAPPING_PENDING)
				continue;
			f->mapping = kmap;
			if (f->function)
				y->mappings[kmap - 1].has_functions = true;
		}
	return 0;
}

static int symbolize_locked(struct vm_symcache *sc, const struct vm_samples *s,
			    struct vm_symbolized *y, struct proc_memo *memos,
			    struct named *nd)
{
	const struct vm_kallsyms *k = NULL;
	int r;

	if (vm_symcache_kernel(sc, &k) < 0)
		k = NULL; /* kernel frames stay addresses */

	r = alloc_memos(sc, s, memos, nd);
	if (r)
		return r;
	r = register_executables(y, s, memos);
	if (r)
		return r;
	for (size_t i = 0; i < s->n; i++) {
		r = symbolize_stack(y, s, k, nd, memos, i);
		if (r)
			return r;
	}
	return assign_kernel_mapping(y, s);
}

/*
 * A memory profile's stacks: their frames are names (s->names), the
 * context path or a pseudo-frame, with no mapping and no symbols to read.
 */
static int symbolize_names(struct vm_symbolized *y, const struct vm_samples *s,
			   struct proc_memo *memos)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct vm_sample *x = &s->v[i];
		struct vm_sym_stack *st = &y->stacks[i];
		int r;

		st->sample = x;
		stack_process(s, memos, x, st);
		r = wait_event_label(y, x, st);
		if (r)
			return r;
		st->frames =
			calloc(x->n_user ? x->n_user : 1, sizeof(*st->frames));
		if (!st->frames)
			return -ENOMEM;
		for (uint32_t j = 0; j < x->n_user; j++) {
			const char *name = x->user_ips[j] < s->n_names ?
						   s->names[x->user_ips[j]] :
						   "[unknown]";

			st->frames[j].function = vm_symbolized_intern(y, name);
			if (!st->frames[j].function)
				return -ENOMEM;
			st->frames[j].source = VM_NAME_SYMBOL;
		}
		st->n_frames = x->n_user;
		y->frames_by[VM_NAME_SYMBOL] += x->n_user;
		y->frames_total += x->n_user;
		if (x->memctx_ident && x->memctx_ident <= s->n_names &&
		    !(st->context_ident = vm_symbolized_intern(
			      y, s->names[x->memctx_ident - 1])))
			return -ENOMEM;
		if (x->memctx_type)
			st->context_type =
				vm_memctx_type_name(x->memctx_type - 1);
	}
	return 0;
}

/* A cache for one call only, when the caller keeps none. */
static struct vm_symcache *cache_for_call(struct vm_binaries **home)
{
	struct vm_symcache *sc;

	*home = vm_binaries_new(NULL);
	sc = *home ? vm_symcache_new(*home, NULL) : NULL;
	if (!sc) {
		vm_binaries_free(*home);
		*home = NULL;
	}
	return sc;
}

int vm_symbolize(struct vm_symcache *sc, const struct vm_samples *s,
		 struct vm_symbolized *out, struct vm_error *err)
{
	struct vm_binaries *own_home = NULL;
	struct named named = { 0 };
	struct proc_memo *memos;
	int r;

	memset(out, 0, sizeof(*out));
	out->samples = s;
	out->stacks = calloc(s->n ? s->n : 1, sizeof(*out->stacks));
	memos = calloc(s->n_procs ? s->n_procs : 1, sizeof(*memos));
	if (!out->stacks || !memos) {
		free(memos);
		vm_symbolized_free(out);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	out->n_stacks = s->n;
	if (s->kind == VM_KIND_MEMORY) {
		r = symbolize_names(out, s, memos);
		free_memos(memos, s->n_procs);
		if (r) {
			vm_symbolized_free(out);
			return vm_error_set(err, -r,
					    "out of memory while symbolizing");
		}
		return 0;
	}
	/* Debug files still on their way: a little while, no more. */
	if (sc)
		vm_symcache_wait_lookups(sc, VM_DEBUGINFOD_WAIT_MS);
	/* Without memory for the memo, every frame is named afresh. */
	vm_memo_init(&named.memo, NAMED_MEMO_BITS);
	if (!sc)
		sc = cache_for_call(&own_home);
	if (!sc) {
		r = -ENOMEM;
	} else {
		vm_symcache_lock(sc);
		r = symbolize_locked(sc, s, out, memos, &named);
		vm_symcache_unlock(sc);
	}
	if (own_home) {
		vm_symcache_free(sc);
		vm_binaries_free(own_home);
	}
	free_memos(memos, s->n_procs);
	vm_memo_free(&named.memo);
	free(named.v);
	free(named.files);
	for (size_t i = 0; i < named.n_views; i++)
		free(named.views[i].root);
	free(named.views);
	if (r) {
		vm_symbolized_free(out);
		return vm_error_set(err, -r, "out of memory while symbolizing");
	}
	return 0;
}

void vm_symbolized_free(struct vm_symbolized *y)
{
	for (size_t i = 0; i < y->n_stacks; i++)
		free(y->stacks[i].frames);
	free(y->stacks);
	free(y->mappings);
	vm_strpool_free(&y->strings);
	memset(y, 0, sizeof(*y));
}

void vm_symbolize_prefetch_kernel(struct vm_symcache *sc)
{
	const struct vm_kallsyms *k;

	if (!sc)
		return;
	vm_symcache_lock(sc);
	vm_symcache_kernel(sc, &k);
	vm_symcache_unlock(sc);
}

int vm_symbolize_kernel_addrs(struct vm_symcache *sc, const char *const *names,
			      size_t n, uint64_t *addrs)
{
	const struct vm_kallsyms *k;
	int r;

	memset(addrs, 0, n * sizeof(*addrs));
	if (!sc)
		return -ENOENT;
	vm_symcache_lock(sc);
	r = vm_symcache_kernel(sc, &k);
	if (r == 0)
		vm_kallsyms_addrs(k, names, n, addrs);
	vm_symcache_unlock(sc);
	return r < 0 ? r : 0;
}

static bool same_file(const struct vm_mapping *a, const struct vm_mapping *b)
{
	const char *x = a->open_path ? a->open_path : a->path;
	const char *y = b->open_path ? b->open_path : b->path;

	return a->dev == b->dev && x && y && !strcmp(x, y);
}

void vm_symbolize_prefetch_process(struct vm_symcache *sc,
				   const struct vm_process *p)
{
	const struct vm_symfile *sf;
	char root[64];

	if (!sc)
		return;
	snprintf(root, sizeof(root), "/proc/%u/root", p->pid);
	for (size_t i = 0; i < p->n_maps; i++) {
		const struct vm_mapping *m = &p->maps[i];

		if (!m->path || m->path[0] != '/')
			continue;
		/*
		 * A file's mappings (text, data, ...) follow each other:
		 * looking it up once is enough, each lookup opens the file.
		 */
		if (i && same_file(m, &p->maps[i - 1]))
			continue;
		vm_symcache_lock(sc);
		/*
		 * A file the cache holds (every new backend maps the same
		 * ones) is left for symbolizing to check, as it does each
		 * file it uses: opening it here costs as much as there.
		 */
		if (!m->dev || !m->ino ||
		    !vm_symcache_holds(sc, m->dev, m->ino))
			vm_symcache_get(sc,
					m->open_path ? m->open_path : m->path,
					m->path, root, m->dev, &sf, NULL);
		vm_symcache_unlock(sc);
	}
}
