// SPDX-License-Identifier: Apache-2.0
/*
 * flame.c - lays out a flame graph (flame.h) the way flamegraph.pl does:
 * every stack becomes a path from the root, the paths are sorted, and one
 * pass over them opens a frame where a path leaves the previous one and
 * adds the stack's weight to every frame on its path.  Sorting makes
 * siblings ordered by name and the output the same for the same profile;
 * it costs O(stacks log stacks x depth), with no search among children.
 */
#include "agent/encode/flame.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "agent/encode/encode.h"
#include "common/array.h"

struct step {
	const char *name;
	enum vm_flame_kind kind;
};

struct path {
	struct step *steps; /* below the root: command name, then frames */
	size_t n;
	uint64_t weight;
};

static int cmp_path(const void *a, const void *b)
{
	const struct path *x = a, *y = b;

	for (size_t i = 0; i < x->n && i < y->n; i++) {
		int c = strcmp(x->steps[i].name, y->steps[i].name);

		if (c)
			return c;
		if (x->steps[i].kind != y->steps[i].kind)
			return x->steps[i].kind < y->steps[i].kind ? -1 : 1;
	}
	return x->n < y->n ? -1 : x->n > y->n ? 1 : 0;
}

static bool same_step(const struct step *a, const struct step *b)
{
	return a->kind == b->kind && !strcmp(a->name, b->name);
}

static enum vm_flame_kind kind_of(const struct vm_symbolized *y,
				  const struct vm_sym_frame *fr)
{
	if (fr->function && !strncmp(fr->function, "[lost ", 6))
		return VM_FLAME_LOST;
	if (fr->mapping && fr->mapping <= y->n_mappings &&
	    y->mappings[fr->mapping - 1].kernel)
		return VM_FLAME_KERNEL;
	return VM_FLAME_USER;
}

/* A name made here (an address, "[no stack]"), kept with the graph. */
static const char *own_name(struct vm_flame *f, const char *text)
{
	if (vm_grow(f->names, &f->cap_names, f->n_names + 1))
		return NULL;
	f->names[f->n_names] = strdup(text);
	return f->names[f->n_names] ? f->names[f->n_names++] : NULL;
}

/* The path of stack st: its command name, then its frames outermost first. */
static int make_path(const struct vm_symbolized *y, struct vm_flame *f,
		     const struct vm_sym_stack *st, struct path *p)
{
	char buf[512];

	p->steps = calloc(st->n_frames + 2, sizeof(*p->steps));
	if (!p->steps)
		return -ENOMEM;
	p->weight = vm_sample_weight(y->samples, st->sample);
	p->steps[p->n].name = st->sample->comm[0] ? st->sample->comm :
						    "[unknown]";
	p->steps[p->n++].kind = VM_FLAME_PROCESS;
	if (st->n_frames == 0) {
		p->steps[p->n].name = "[no stack]";
		p->steps[p->n++].kind = VM_FLAME_LOST;
	}
	for (size_t i = st->n_frames; i-- > 0;) {
		const struct vm_sym_frame *fr = &st->frames[i];
		struct step *s = &p->steps[p->n++];

		s->kind = kind_of(y, fr);
		s->name = fr->function;
		if (!s->name) {
			vm_frame_fallback_name(y, fr, buf, sizeof(buf));
			s->name = own_name(f, buf);
			if (!s->name)
				return -ENOMEM;
		}
	}
	return 0;
}

static int add_frame(struct vm_flame *f, size_t *cap, const struct step *s,
		     uint32_t depth, size_t parent, uint64_t offset)
{
	struct vm_flame_frame *fr;

	if (vm_grow(f->frames, cap, f->n + 1))
		return -ENOMEM;
	fr = &f->frames[f->n++];
	*fr = (struct vm_flame_frame){ .name = s->name,
				       .kind = s->kind,
				       .depth = depth,
				       .parent = parent,
				       .offset = offset };
	if (depth > f->max_depth)
		f->max_depth = depth;
	return 0;
}

/*
 * One pass over the sorted paths.  open[d] is the frame at depth d of the
 * previous path; a path shares the frames of the prefix it has in common
 * with it and opens new ones, at the weight laid out so far, for the rest.
 */
static int lay_out(struct vm_flame *f, size_t *cap, const struct path *paths,
		   size_t n_paths, size_t *open)
{
	static const struct step root = { "all", VM_FLAME_ROOT };
	const struct path *prev = NULL;
	uint64_t x = 0;
	int r;

	r = add_frame(f, cap, &root, 0, 0, 0);
	open[0] = 0;
	for (size_t i = 0; i < n_paths && r == 0; i++) {
		const struct path *p = &paths[i];
		size_t common = 0;

		while (prev && common < p->n && common < prev->n &&
		       same_step(&p->steps[common], &prev->steps[common]))
			common++;
		for (size_t d = common; d < p->n && r == 0; d++) {
			r = add_frame(f, cap, &p->steps[d], d + 1, open[d], x);
			open[d + 1] = f->n - 1;
		}
		for (size_t d = 0; d <= p->n; d++)
			f->frames[open[d]].weight += p->weight;
		x += p->weight;
		prev = p;
	}
	f->total = f->frames ? f->frames[0].weight : 0;
	return r;
}

int vm_flame_build(const struct vm_symbolized *y, struct vm_flame *f)
{
	struct path *paths;
	size_t *open = NULL, cap = 0, deepest = 0, n = 0;
	int r = 0;

	memset(f, 0, sizeof(*f));
	paths = calloc(y->n_stacks + 1, sizeof(*paths));
	if (!paths)
		return -ENOMEM;
	for (; n < y->n_stacks && r == 0; n++) {
		r = make_path(y, f, &y->stacks[n], &paths[n]);
		if (paths[n].n > deepest)
			deepest = paths[n].n;
	}
	if (r == 0) {
		qsort(paths, n, sizeof(*paths), cmp_path);
		open = calloc(deepest + 1, sizeof(*open));
		r = open ? lay_out(f, &cap, paths, n, open) : -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		free(paths[i].steps);
	free(paths);
	free(open);
	if (r < 0)
		vm_flame_free(f);
	return r;
}

void vm_flame_free(struct vm_flame *f)
{
	for (size_t i = 0; i < f->n_names; i++)
		free(f->names[i]);
	free(f->names);
	free(f->frames);
	memset(f, 0, sizeof(*f));
}
