// SPDX-License-Identifier: Apache-2.0
/*
 * svg.c - a symbolized profile as one self-contained, interactive SVG
 * flame graph (docs/api.md, "Seeing a profile"): the layout of flame.c
 * drawn as one <g> per frame (its <title> the full name, count and share,
 * a <rect> coloured by what the frame is, a <text> with the name cut to
 * fit), with flame.js inline for zoom, reset and search.  Nothing is
 * loaded from elsewhere, so the file opens from disk or an attachment.
 *
 * Frame names are whatever bytes the binaries hold.  Every name goes out
 * as valid UTF-8 with XML's specials escaped: a byte that does not start a
 * well-formed character XML allows (controls, stray continuation bytes,
 * overlong forms, surrogates, U+FFFE/U+FFFF) is written "\xNN", so no
 * frame can break the document or the script.
 *
 * Deterministic: the same profile gives the same bytes (no time, no
 * random ids; numbers printed in the C locale the agent runs in).
 */
#include "agent/encode/encode.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/encode/flame.h"
#include "gen/flame_js.h"

#define WIDTH 1200 /* px */
#define PAD 10 /* left and right */
#define FRAME_HEIGHT 16
#define TOP 64 /* title, details, search */
#define BOTTOM 24 /* the line that names the frame under the pointer */
#define FONT_SIZE 12
#define CHAR_WIDTH 7.0 /* of FONT_SIZE px monospace, for cutting names */
#define MIN_WIDTH \
	0.1 /* px: narrower frames are left out, as flamegraph.pl does */

/*
 * Bytes of the character at s when it is well-formed UTF-8 that XML 1.0
 * allows, else 0.
 */
static size_t xml_char_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n;
	uint32_t cp;

	if (c < 0x80)
		return (c >= 0x20 && c != 0x7f) || c == '\t' ? 1 : 0;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe ||
	    cp == 0xffff)
		return 0;
	return n;
}

/* How many characters name reads as once made fit for XML. */
static size_t shown_len(const char *name)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t chars = 0, n;

	for (; *s; chars++) {
		n = xml_char_len(s);
		if (n) {
			s += n;
		} else {
			s++;
			chars += 3; /* "\xNN" */
		}
	}
	return chars;
}

/*
 * Write name as XML character data (also good inside a double-quoted
 * attribute), at most limit characters of it.
 */
static void put_xml(FILE *f, const char *name, size_t limit)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t chars = 0, n;

	while (*s) {
		n = xml_char_len(s);
		if (chars + (n ? 1 : 4) > limit)
			break;
		if (!n) {
			fprintf(f, "\\x%02x", *s++);
			chars += 4;
			continue;
		}
		chars++;
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			fwrite(s, 1, n, f);
		}
		s += n;
	}
}

/* The name cut to fit w px, as flame.js cuts it when it redraws. */
static void put_label(FILE *f, const char *name, double w)
{
	double room = (w - 6) / CHAR_WIDTH;
	size_t fit = room < 0 ? 0 : (size_t)room;

	if (fit < 3)
		return;
	if (shown_len(name) <= fit) {
		put_xml(f, name, fit);
		return;
	}
	put_xml(f, name, fit - 2);
	fputs("..", f);
}

/* "412 samples", or for a weight in nanoseconds "1.25 s", "310 ms". */
/* A scale's steps, largest first, and what is below the last. */
static const struct scale {
	double step[3];
	const char *unit[3], *base;
} time_scale = { { 1e9, 1e6, 1e3 }, { "s", "ms", "us" }, "ns" },
  byte_scale = { { 1 << 30, 1 << 20, 1 << 10 },
		 { "GiB", "MiB", "KiB" },
		 "bytes" };

static void put_weight(FILE *f, uint64_t w, const struct vm_samples *s)
{
	bool bytes = s->kind == VM_KIND_MEMORY || s->kind == VM_KIND_FAULTS;
	const struct scale *sc = bytes ? &byte_scale : &time_scale;

	if (!bytes && !vm_weight_is_time(s)) {
		fprintf(f, "%" PRIu64 " sample%s", w, w == 1 ? "" : "s");
		return;
	}
	for (size_t i = 0; i < 3; i++)
		if ((double)w >= sc->step[i]) {
			fprintf(f, "%.3g %s", (double)w / sc->step[i],
				sc->unit[i]);
			return;
		}
	fprintf(f, "%" PRIu64 " %s", w, sc->base);
}

static void put_share(FILE *f, uint64_t w, uint64_t total)
{
	double share = total ? 100.0 * (double)w / (double)total : 0;

	fprintf(f, share >= 0.1 || share == 0 ? "%.1f%%" : "%.2g%%", share);
}

/* A colour from the name, so that a function keeps its colour. */
static unsigned name_hash(const char *name)
{
	unsigned h = 2166136261u; /* FNV-1a */

	for (const unsigned char *s = (const unsigned char *)name; *s; s++)
		h = (h ^ *s) * 16777619u;
	return h;
}

static void put_fill(FILE *f, const struct vm_flame_frame *fr)
{
	unsigned h = name_hash(fr->name);
	unsigned a = h & 0xff, b = (h >> 8) & 0xff;

	switch (fr->kind) {
	case VM_FLAME_KERNEL: /* blues */
		fprintf(f, "rgb(%u,%u,%u)", 60 + a * 60 / 255,
			150 + b * 60 / 255, 220);
		break;
	case VM_FLAME_LOST: /* greys */
		fprintf(f, "rgb(%u,%u,%u)", 170 + a * 20 / 255,
			170 + a * 20 / 255, 170 + a * 20 / 255);
		break;
	case VM_FLAME_PROCESS:
	case VM_FLAME_ROOT: /* purples */
		fprintf(f, "rgb(%u,%u,%u)", 170 + a * 30 / 255,
			140 + b * 30 / 255, 210);
		break;
	default: /* user: the warm colours of flamegraph.pl */
		fprintf(f, "rgb(%u,%u,%u)", 205 + a * 50 / 255, b * 230 / 255,
			(h >> 16 & 0xff) * 55 / 255);
	}
}

static const char *const kind_class[] = {
	[VM_FLAME_ROOT] = "r", [VM_FLAME_PROCESS] = "p",
	[VM_FLAME_USER] = "u", [VM_FLAME_KERNEL] = "k",
	[VM_FLAME_LOST] = "l",
};

static void put_frame(FILE *f, const struct vm_flame *g,
		      const struct vm_flame_frame *fr, double scale, int height,
		      const struct vm_samples *s)
{
	double x = PAD + (double)fr->offset * scale;
	double w = (double)fr->weight * scale;
	int y = height - BOTTOM - (int)(fr->depth + 1) * FRAME_HEIGHT;

	fprintf(f, "<g class=\"f %s\" data-depth=\"%u\"><title>",
		kind_class[fr->kind], fr->depth);
	put_xml(f, fr->name, SIZE_MAX);
	fputs(" (", f);
	put_weight(f, fr->weight, s);
	fputs(", ", f);
	put_share(f, fr->weight, g->total);
	fprintf(f,
		")</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"",
		x, y, w, FRAME_HEIGHT - 1);
	put_fill(f, fr);
	fprintf(f, "\"/><text x=\"%.2f\" y=\"%.1f\">", x + 3,
		y + FRAME_HEIGHT - 4.5);
	put_label(f, fr->name, w);
	fputs("</text></g>\n", f);
}

static void put_head(FILE *f, const struct vm_symbolized *y,
		     const struct vm_flame *g, int height)
{
	const struct vm_samples *s = y->samples;

	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" data-width=\"%d\" data-pad=\"%d\" data-char-width=\"%.1f\">\n",
		WIDTH, height, WIDTH, height, WIDTH, PAD, CHAR_WIDTH);
	fprintf(f,
		"<style>\n"
		"text { font-family: monospace; font-size: %dpx; fill: #000; }\n"
		"#frames g { cursor: pointer; }\n"
		"#frames text { pointer-events: none; }\n"
		"#frames g:hover rect { stroke: #000; stroke-width: 0.5; }\n"
		"#frames g.caller rect { opacity: 0.6; }\n"
		"#reset { cursor: pointer; fill: #06c; }\n"
		"#title { font-size: 17px; }\n"
		"</style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f8\"/>\n",
		FONT_SIZE);
	fprintf(f,
		"<text id=\"title\" x=\"%d\" y=\"22\" text-anchor=\"middle\">Flame graph</text>\n"
		"<text id=\"reset\" x=\"%d\" y=\"22\">Reset zoom</text>\n",
		WIDTH / 2, PAD);
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"44\">", PAD);
	put_weight(f, g->total, s);
	if (s->kind == VM_KIND_MEMORY)
		fputs(" held now", f);
	else if (s->kind == VM_KIND_FAULTS)
		fputs(" faulted in", f);
	else if (!vm_weight_is_time(s))
		fprintf(f, " at %" PRIu32 " Hz", s->frequency);
	if (s->kind != VM_KIND_MEMORY)
		fprintf(f, " over %.1f s", (double)s->duration_nanos / 1e9);
	if (s->lost_stacks || s->lost_samples)
		fprintf(f,
			"; %" PRIu64 " stacks lost, %" PRIu64
			" samples not recorded",
			s->lost_stacks, s->lost_samples);
	fputs("</text>\n", f);
	/* The legend: what the colours say. */
	fprintf(f,
		"<g id=\"legend\"><rect x=\"%d\" y=\"34\" width=\"12\" height=\"12\" fill=\"rgb(230,110,20)\"/><text x=\"%d\" y=\"44\">user</text>"
		"<rect x=\"%d\" y=\"34\" width=\"12\" height=\"12\" fill=\"rgb(90,180,220)\"/><text x=\"%d\" y=\"44\">kernel</text>"
		"<rect x=\"%d\" y=\"34\" width=\"12\" height=\"12\" fill=\"rgb(180,180,180)\"/><text x=\"%d\" y=\"44\">lost</text>"
		"<rect x=\"%d\" y=\"34\" width=\"12\" height=\"12\" fill=\"rgb(185,155,210)\"/><text x=\"%d\" y=\"44\">process</text></g>\n",
		440, 456, 510, 526, 590, 606, 650, 666);
	fprintf(f,
		"<foreignObject x=\"%d\" y=\"6\" width=\"260\" height=\"26\"><input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\" type=\"search\" placeholder=\"Search (regular expression)\" style=\"width: 250px\"/></foreignObject>\n"
		"<text id=\"matched\" x=\"%d\" y=\"48\" text-anchor=\"end\"></text>\n",
		WIDTH - PAD - 260, WIDTH - PAD);
}

static int write_svg(FILE *f, const struct vm_symbolized *y,
		     const struct vm_flame *g)
{
	int height = TOP + (int)(g->max_depth + 1) * FRAME_HEIGHT + BOTTOM;
	double scale = g->total ? (WIDTH - 2.0 * PAD) / (double)g->total : 0;

	put_head(f, y, g, height);
	fputs("<g id=\"frames\">\n", f);
	for (size_t i = 0; i < g->n; i++) {
		const struct vm_flame_frame *fr = &g->frames[i];

		if (i > 0 && (double)fr->weight * scale < MIN_WIDTH)
			continue;
		put_frame(f, g, fr, scale, height, y->samples);
	}
	fputs("</g>\n", f);
	fprintf(f, "<text id=\"hover\" x=\"%d\" y=\"%d\"> </text>\n", PAD,
		height - 8);
	fputs("<script type=\"text/ecmascript\"><![CDATA[\n", f);
	fputs(vm_flame_js, f);
	fputs("]]></script>\n</svg>\n", f);
	return 0;
}

int vm_svg_encode(const struct vm_symbolized *y, void **out, size_t *len,
		  struct vm_error *err)
{
	struct vm_flame g;
	char *text = NULL;
	size_t tlen = 0;
	FILE *f;
	int r;

	r = vm_flame_build(y, &g);
	if (r < 0)
		return vm_error_set(
			err, ENOMEM,
			"out of memory while laying out the flame graph");
	f = open_memstream(&text, &tlen);
	if (!f) {
		vm_flame_free(&g);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	write_svg(f, y, &g);
	vm_flame_free(&g);
	if (fclose(f)) {
		free(text);
		return vm_error_set(err, ENOMEM,
				    "out of memory while writing the SVG");
	}
	*out = text;
	*len = tlen;
	return 0;
}
