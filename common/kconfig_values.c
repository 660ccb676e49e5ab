// SPDX-License-Identifier: Apache-2.0
/*
 * kconfig_values.c - reading a kernel's configuration (.config, plain or
 * gzip like /proc/config.gz) into a sorted table of CONFIG_ settings, and
 * the line-level parsing the fragment parser shares.  Pure except for
 * vm_kconfig_values_load().
 */
#include "common/array.h"
#include "common/kconfig_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/cleanup.h"

/* A kernel .config is about 300 KiB; anything near this is not one. */
#define KCONFIG_MAX_BYTES (16u << 20)

void vm_kconfig_setting_clear(struct vm_kconfig_setting *s)
{
	free(s->name);
	free(s->value);
}

char *vm_kconfig_line_dup(const char *p, const char *end)
{
	size_t len = end > p ? (size_t)(end - p) : 0;

	while (len > 0 && isspace((unsigned char)p[len - 1]))
		len--;
	return strndup(p, len);
}

static bool is_option_name(const char *p, size_t len)
{
	if (len <= 7 || strncmp(p, "CONFIG_", 7))
		return false;
	for (size_t i = 7; i < len; i++)
		if (!isalnum((unsigned char)p[i]) && p[i] != '_')
			return false;
	return true;
}

int vm_kconfig_parse_setting(const char *line, struct vm_kconfig_setting *s)
{
	const char *eq, *name = line, *rest;
	size_t len;

	if (!strncmp(line, "# CONFIG_", 9)) {
		name = line + 2;
		rest = strchr(name, ' ');
		if (!rest || strcmp(rest, " is not set"))
			return 0;
		len = rest - name;
		if (!is_option_name(name, len))
			return 0;
		s->name = strndup(name, len);
		s->value = strdup("n");
	} else {
		eq = strchr(line, '=');
		if (!eq || !is_option_name(line, eq - line) || !eq[1])
			return 0;
		s->name = strndup(line, eq - line);
		s->value = strdup(eq + 1);
	}
	if (!s->name || !s->value) {
		vm_kconfig_setting_clear(s);
		return -ENOMEM;
	}
	return 1;
}

static int cmp_setting_name(const void *a, const void *b)
{
	return strcmp(((const struct vm_kconfig_setting *)a)->name,
		      ((const struct vm_kconfig_setting *)b)->name);
}

void vm_kconfig_values_free(struct vm_kconfig_values *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n_settings; i++)
		vm_kconfig_setting_clear(&v->settings[i]);
	free(v->settings);
	free(v);
}

static void values_freep(struct vm_kconfig_values **v)
{
	vm_kconfig_values_free(*v);
}

/* A setting with its line order, to sort stably. */
struct ordered {
	struct vm_kconfig_setting s;
	size_t order;
};

static int cmp_ordered(const void *a, const void *b)
{
	const struct ordered *x = a, *y = b;
	int c = strcmp(x->s.name, y->s.name);

	if (c)
		return c;
	return (x->order > y->order) - (x->order < y->order);
}

/*
 * Sort by name for bsearch; when a name appears twice the later line wins,
 * as in kconfig itself.
 */
static int sort_and_dedupe(struct vm_kconfig_values *v)
{
	size_t n = v->n_settings, kept = 0;
	_cleanup_free_ struct ordered *o = malloc(n * sizeof(*o));

	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		o[i] = (struct ordered){ v->settings[i], i };
	qsort(o, n, sizeof(*o), cmp_ordered);
	for (size_t i = 0; i < n; i++) {
		if (kept > 0 &&
		    !strcmp(v->settings[kept - 1].name, o[i].s.name)) {
			vm_kconfig_setting_clear(&v->settings[kept - 1]);
			v->settings[kept - 1] = o[i].s;
			continue;
		}
		v->settings[kept++] = o[i].s;
	}
	v->n_settings = kept;
	return 0;
}

int vm_kconfig_values_parse(const char *data, size_t len,
			    struct vm_kconfig_values **out,
			    struct vm_error *err)
{
	struct vm_kconfig_values *v
		__attribute__((cleanup(values_freep))) = calloc(1, sizeof(*v));
	const char *p = data, *end = data + len;
	size_t cap = 0;
	int r;

	if (!v)
		return vm_error_errno(err, ENOMEM,
				      "cannot parse kernel config");
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		const char *eol = nl ? nl : end;
		_cleanup_free_ char *line = vm_kconfig_line_dup(p, eol);
		struct vm_kconfig_setting s = { 0 };

		p = nl ? nl + 1 : end;
		if (!line)
			return vm_error_errno(err, ENOMEM,
					      "cannot parse kernel config");
		r = vm_kconfig_parse_setting(line, &s);
		if (r < 0)
			return vm_error_errno(err, -r,
					      "cannot parse kernel config");
		if (r == 0)
			continue;
		if (vm_grow(v->settings, &cap, v->n_settings + 1) < 0) {
			vm_kconfig_setting_clear(&s);
			return vm_error_errno(err, ENOMEM,
					      "cannot parse kernel config");
		}
		v->settings[v->n_settings++] = s;
	}
	if (v->n_settings == 0)
		return vm_error_set(
			err, EINVAL,
			"no CONFIG_ lines: this is not a kernel configuration");
	r = sort_and_dedupe(v);
	if (r < 0)
		return vm_error_errno(err, -r, "cannot parse kernel config");
	*out = TAKE_PTR(v);
	return 0;
}

int vm_kconfig_values_load(const char *path, struct vm_kconfig_values **out,
			   struct vm_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;
	gzFile gz;
	int n, errnum;

	gz = gzopen(path, "rb");
	if (!gz)
		return vm_error_errno(err, errno ? errno : ENOMEM,
				      "cannot open kernel config %s", path);
	for (;;) {
		if (cap - len < 65536) {
			char *nb;

			cap = cap ? 2 * cap : 262144;
			if (cap > KCONFIG_MAX_BYTES) {
				gzclose(gz);
				return vm_error_set(
					err, EFBIG,
					"%s is larger than %u MiB: not a kernel config",
					path, KCONFIG_MAX_BYTES >> 20);
			}
			nb = realloc(buf, cap);
			if (!nb) {
				gzclose(gz);
				return vm_error_errno(err, ENOMEM,
						      "cannot read %s", path);
			}
			buf = nb;
		}
		n = gzread(gz, buf + len, cap - len);
		if (n < 0) {
			const char *msg = gzerror(gz, &errnum);

			gzclose(gz);
			if (errnum == Z_ERRNO)
				return vm_error_errno(err, errno ? errno : EIO,
						      "cannot read %s", path);
			return vm_error_set(err, EINVAL,
					    "cannot decompress %s: %s", path,
					    msg);
		}
		if (n == 0)
			break;
		len += n;
	}
	gzclose(gz);
	n = vm_kconfig_values_parse(buf, len, out, err);
	if (n < 0 && err && err->code == EINVAL &&
	    !strncmp(err->msg, "no CONFIG_", 10)) {
		vm_error_clear(err);
		return vm_error_set(
			err, EINVAL,
			"%s has no CONFIG_ lines: it is not a kernel configuration",
			path);
	}
	return n;
}

const char *vm_kconfig_get(const struct vm_kconfig_values *v, const char *name)
{
	struct vm_kconfig_setting key = { .name = (char *)name };
	const struct vm_kconfig_setting *s;

	s = bsearch(&key, v->settings, v->n_settings, sizeof(key),
		    cmp_setting_name);
	return s ? s->value : NULL;
}
