// SPDX-License-Identifier: Apache-2.0
/*
 * folded.c - the folded-stack text format flame graph tools read
 * (flamegraph.pl, speedscope, inferno): one line per distinct stack,
 * "comm;outermost;...;innermost count", user frames then kernel frames.
 * Samples that differ only by thread are merged.  A CPU profile counts
 * samples; off-CPU and wall-clock profiles count nanoseconds, so that
 * blocks and samples weigh what they lasted.
 */
#include "agent/encode/encode.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/satmath.h"

void vm_frame_fallback_name(const struct vm_symbolized *y,
			    const struct vm_sym_frame *f, char *buf,
			    size_t size)
{
	const struct vm_sym_mapping *m;
	const char *base;

	if (!f->mapping || f->mapping > y->n_mappings) {
		snprintf(buf, size, "[unknown]");
		return;
	}
	m = &y->mappings[f->mapping - 1];
	if (m->kernel) {
		snprintf(buf, size, "[unknown]");
		return;
	}
	base = strrchr(m->file, '/');
	base = base ? base + 1 : m->file;
	snprintf(buf, size, "%s+0x%" PRIx64, base,
		 f->addr - m->start + m->pgoff);
}

uint64_t vm_sample_weight(const struct vm_samples *s, const struct vm_sample *x)
{
	if (s->kind == VM_KIND_MEMORY || s->kind == VM_KIND_FAULTS)
		return x->value; /* bytes */
	if (!vm_weight_is_time(s))
		return x->count;
	if (x->state == VM_STATE_BLOCKED)
		return x->value;
	return x->count * (1000000000ULL / (s->frequency ? s->frequency : 1));
}

bool vm_weight_is_time(const struct vm_samples *s)
{
	return s->kind == VM_KIND_OFFCPU || s->kind == VM_KIND_WALL;
}

struct line {
	char *text; /* without the count */
	uint64_t count;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text,
		      ((const struct line *)b)->text);
}

/* Frame names must not contain the separators of the format. */
static void put_name(FILE *f, const char *name)
{
	for (; *name; name++)
		fputc(*name == ';' || *name == '\n' ? ':' :
		      *name == ' '		    ? '_' :
						      *name,
		      f);
}

static char *stack_text(const struct vm_symbolized *y,
			const struct vm_sym_stack *st)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	const char *comm;

	if (!f)
		return NULL;
	comm = st->sample->comm[0] ? st->sample->comm : "[unknown]";
	put_name(f, comm);
	if (st->n_frames == 0)
		fputs(";[no_stack]", f);
	for (size_t i = st->n_frames; i-- > 0;) {
		const struct vm_sym_frame *fr = &st->frames[i];

		fputc(';', f);
		/* The symbolizer names every frame (symbolize.h). */
		put_name(f, fr->function ? fr->function : "[unknown]");
	}
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}

int vm_folded_encode(const struct vm_symbolized *y, void **out, size_t *len,
		     struct vm_error *err)
{
	_cleanup_free_ struct line *lines = NULL;
	char *text = NULL;
	size_t n = 0, tlen = 0;
	FILE *f;
	int r = 0;

	lines = calloc(y->n_stacks ? y->n_stacks : 1, sizeof(*lines));
	if (!lines)
		return vm_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < y->n_stacks; i++) {
		lines[n].text = stack_text(y, &y->stacks[i]);
		if (!lines[n].text) {
			r = -ENOMEM;
			goto out;
		}
		lines[n++].count =
			vm_sample_weight(y->samples, y->stacks[i].sample);
	}
	qsort(lines, n, sizeof(*lines), cmp_line);

	f = open_memstream(&text, &tlen);
	if (!f) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n;) {
		uint64_t count = 0;
		size_t j = i;

		for (; j < n && !strcmp(lines[j].text, lines[i].text); j++)
			count = vm_sat_add_u64(count, lines[j].count);
		fprintf(f, "%s %" PRIu64 "\n", lines[i].text, count);
		i = j;
	}
	if (fclose(f)) {
		free(text);
		r = -ENOMEM;
		goto out;
	}
	*out = text;
	*len = tlen;
out:
	for (size_t i = 0; i < n; i++)
		free(lines[i].text);
	if (r)
		return vm_error_set(err, -r, "out of memory");
	return 0;
}
