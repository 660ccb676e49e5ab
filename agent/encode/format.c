// SPDX-License-Identifier: Apache-2.0
/*
 * format.c - the output formats by name, and the one dispatch that encodes
 * a symbolized profile in one of them, gzipped when asked (encode.h): an
 * on-demand profile (engine.c), a history merge (http_history.c) and a
 * continuous window (continuous.c) all go through it.
 */
#include "agent/encode/encode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Each output format: its encoder, what it is sent as, and its names. */
static const struct format {
	const char *name;
	int (*encode)(const struct vm_symbolized *y, void **out, size_t *len,
		      struct vm_error *err);
	const char *content_type;
	const char *filename, *gz_filename;
} formats[] = {
	[VM_FORMAT_PPROF] = { "pprof", vm_pprof_encode,
			      "application/octet-stream", "profile.pb",
			      "profile.pb.gz" },
	[VM_FORMAT_FOLDED] = { "folded", vm_folded_encode, "text/plain",
			       "profile.folded", "profile.folded.gz" },
	[VM_FORMAT_SVG] = { "svg", vm_svg_encode, "image/svg+xml",
			    "profile.svg", "profile.svg.gz" },
};

int vm_format_from_name(const char *name, enum vm_format *out)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (name && !strcmp(name, formats[i].name)) {
			*out = (enum vm_format)i;
			return 0;
		}
	return -EINVAL;
}

int vm_encode_profile(const struct vm_symbolized *y, enum vm_format format,
		      bool gzip, struct vm_encoded *out, struct vm_error *err)
{
	const struct format *fmt = &formats[format];
	void *data = NULL, *gz = NULL;
	size_t len = 0, gz_len = 0;
	int r;

	r = fmt->encode(y, &data, &len, err);
	if (r < 0)
		return r;
	out->content_type = fmt->content_type;
	out->filename = fmt->filename;
	if (gzip) {
		r = vm_gzip(data, len, &gz, &gz_len, err);
		free(data);
		if (r < 0)
			return r;
		data = gz;
		len = gz_len;
		out->content_type = "application/gzip";
		out->filename = fmt->gz_filename;
	}
	out->data = data;
	out->len = len;
	return 0;
}
