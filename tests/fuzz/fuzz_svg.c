// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_svg.c - libFuzzer target for the SVG flame graph (agent/encode/
 * flame.c, svg.c), whose frame names are whatever bytes the profiled
 * binaries hold.  The input is split at newlines into frame names (the
 * first byte of each line picks the stack it joins and its depth), the
 * profile is encoded, and beyond not crashing the SVG must be a document
 * no name can break: valid UTF-8 (iconv decodes all of it), no control
 * character but tab and newline, one CDATA section (the script's), and no
 * '<', '>' or '"' inside a <title>.
 */
#include <errno.h>
#include <iconv.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/encode/encode.h"

#define MAX_STACKS 8
#define MAX_FRAMES 8

static void check_utf8(const char *s, size_t len)
{
	iconv_t cd = iconv_open("UTF-32LE", "UTF-8");
	char *in = (char *)s, buf[4096], *out;
	size_t left = len, room;

	if (cd == (iconv_t)-1)
		abort();
	while (left > 0) {
		out = buf;
		room = sizeof(buf);
		if (iconv(cd, &in, &left, &out, &room) == (size_t)-1 &&
		    errno != E2BIG)
			abort();
	}
	iconv_close(cd);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 && s[i] != '\n' && s[i] != '\t')
			abort();
}

static void check_titles(const char *svg)
{
	const char *p = svg, *end;

	while ((p = strstr(p, "<title>"))) {
		p += 7;
		end = strstr(p, "</title>");
		if (!end)
			abort();
		for (; p < end; p++)
			if (*p == '<' || *p == '>' || *p == '"')
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct vm_sym_mapping maps[2] = {
		{ .start = 0x1000, .end = 0x9000, .file = "/bin/prog" },
		{ .file = VM_KERNEL_MAPPING, .kernel = true },
	};
	struct vm_samples samples = { .frequency = 99 };
	struct vm_sample v[MAX_STACKS] = { 0 };
	struct vm_sym_stack stacks[MAX_STACKS] = { 0 };
	struct vm_sym_frame frames[MAX_STACKS][MAX_FRAMES];
	struct vm_symbolized y = { .samples = &samples,
				   .mappings = (struct vm_sym_mapping *)maps,
				   .n_mappings = 2,
				   .stacks = stacks,
				   .n_stacks = MAX_STACKS };
	char *copy = malloc(size + 1), *line, *next;
	void *svg = NULL;
	size_t len = 0, n = 0;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	for (size_t i = 0; i < MAX_STACKS; i++) {
		v[i].count = i + 1;
		memcpy(v[i].comm, "prog", 5);
		stacks[i].sample = &v[i];
		stacks[i].frames = frames[i];
	}
	/* "Sname": S's low bits pick the stack; the frame is its next. */
	for (line = copy; line && n < MAX_STACKS * MAX_FRAMES; line = next) {
		struct vm_sym_stack *st;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!line[0])
			continue;
		st = &stacks[(unsigned char)line[0] % MAX_STACKS];
		if (st->n_frames == MAX_FRAMES)
			continue;
		frames[st - stacks][st->n_frames] = (struct vm_sym_frame){
			.addr = 0x1000 + (unsigned char)line[0],
			.mapping = ((unsigned char)line[0] & 0x80) ? 2 :
				   (line[0] & 0x40)		   ? 0 :
								     1,
			.function = line[1] || (line[0] & 0x20) ? line + 1 :
								  NULL,
		};
		st->n_frames++;
		n++;
	}
	if (vm_svg_encode(&y, &svg, &len, NULL) == 0) {
		const char *s = svg;

		check_utf8(s, len);
		check_titles(s);
		if (!strstr(s, "]]>") ||
		    strstr(s, "]]>") != strrchr(s, ']') - 1)
			abort();
		free(svg);
	}
	free(copy);
	return 0;
}
