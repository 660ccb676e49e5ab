// SPDX-License-Identifier: Apache-2.0
/*
 * kconfig.c - the kernel-config checker: parses the fragment
 * (kernel-config/vmtools.config, embedded at build time) and a kernel's
 * .config, judges each wanted option and prints what is missing and what
 * that costs.  Parsing is pure (memory in, structs out) so it is unit-tested;
 * only vm_kconfig_values_load() and vm_kconfig_check() touch files.
 */
#include "common/kconfig.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/cleanup.h"
#include "gen/kconfig_fragment.h"

/* A kernel .config is about 300 KiB; anything near this is not one. */
#define KCONFIG_MAX_BYTES (16u << 20)

static const char *const level_names[] = {
	[VM_KCONFIG_REQUIRED] = "required",
	[VM_KCONFIG_RECOMMENDED] = "recommended",
	[VM_KCONFIG_OPTIONAL] = "optional",
};

const char *vm_kconfig_level_name(enum vm_kconfig_level level)
{
	return level_names[level];
}

const char *vm_kconfig_builtin_fragment(void)
{
	return vm_kconfig_fragment_text;
}

static void setting_clear(struct vm_kconfig_setting *s)
{
	free(s->name);
	free(s->value);
}

/* A NUL-terminated copy of the line [p, end) without trailing blanks. */
static char *line_dup(const char *p, const char *end)
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

/*
 * Recognise "CONFIG_X=value" and "# CONFIG_X is not set" (value "n").
 * Returns 1 and fills *s, 0 when the line is something else, -ENOMEM.
 */
static int parse_setting(const char *line, struct vm_kconfig_setting *s)
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
		setting_clear(s);
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
		setting_clear(&v->settings[i]);
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
			setting_clear(&v->settings[kept - 1]);
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
		_cleanup_free_ char *line = line_dup(p, eol);
		struct vm_kconfig_setting s = { 0 };

		p = nl ? nl + 1 : end;
		if (!line)
			return vm_error_errno(err, ENOMEM,
					      "cannot parse kernel config");
		r = parse_setting(line, &s);
		if (r < 0)
			return vm_error_errno(err, -r,
					      "cannot parse kernel config");
		if (r == 0)
			continue;
		if (v->n_settings == cap) {
			size_t ncap = cap ? 2 * cap : 1024;
			void *n = realloc(v->settings, ncap * sizeof(s));

			if (!n) {
				setting_clear(&s);
				return vm_error_errno(
					err, ENOMEM,
					"cannot parse kernel config");
			}
			v->settings = n;
			cap = ncap;
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

/* 2: satisfied, 1: satisfied as a module, 0: not. */
static int satisfies(const struct vm_kconfig_setting *want, const char *have)
{
	if (!strcmp(want->value, "n"))
		return !have || !strcmp(have, "n") ? 2 : 0;
	if (!have)
		return 0;
	if (!strcmp(want->value, "m"))
		return !strcmp(have, "y") || !strcmp(have, "m") ? 2 : 0;
	if (!strcmp(want->value, "y") && !strcmp(have, "m"))
		return 1;
	return !strcmp(want->value, have) ? 2 : 0;
}

enum vm_kconfig_verdict
vm_kconfig_judge(const struct vm_kconfig_want *w,
		 const struct vm_kconfig_values *v,
		 const struct vm_kconfig_setting **which)
{
	int s = satisfies(&w->want, vm_kconfig_get(v, w->want.name));

	if (which)
		*which = NULL;
	if (s == 2)
		return VM_KCONFIG_OK;
	for (size_t i = 0; i < w->n_alternatives; i++) {
		const struct vm_kconfig_setting *alt = &w->alternatives[i];

		if (satisfies(alt, vm_kconfig_get(v, alt->name)) == 2) {
			if (which)
				*which = alt;
			return VM_KCONFIG_OK_ALTERNATIVE;
		}
	}
	return s == 1 ? VM_KCONFIG_OK_MODULE : VM_KCONFIG_MISSING;
}

void vm_kconfig_fragment_free(struct vm_kconfig_fragment *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n_wants; i++) {
		struct vm_kconfig_want *w = &f->wants[i];

		setting_clear(&w->want);
		for (size_t j = 0; j < w->n_alternatives; j++)
			setting_clear(&w->alternatives[j]);
		free(w->alternatives);
		free(w->cost);
	}
	free(f->wants);
	free(f);
}

static void fragment_freep(struct vm_kconfig_fragment **f)
{
	vm_kconfig_fragment_free(*f);
}

/* The comment block above the next option, being collected. */
struct pending {
	bool active;
	enum vm_kconfig_level level;
	struct vm_kconfig_setting *alts;
	size_t n_alts;
	char *cost;
};

static void pending_clear(struct pending *p)
{
	for (size_t i = 0; i < p->n_alts; i++)
		setting_clear(&p->alts[i]);
	free(p->alts);
	free(p->cost);
	memset(p, 0, sizeof(*p));
}

static int append_text(char **dst, const char *text)
{
	char *n;

	while (isspace((unsigned char)*text))
		text++;
	if (!*dst || !**dst) {
		free(*dst);
		*dst = strdup(text);
		return *dst ? 0 : -ENOMEM;
	}
	if (asprintf(&n, "%s %s", *dst, text) < 0)
		return -ENOMEM;
	free(*dst);
	*dst = n;
	return 0;
}

/*
 * "(or CONFIG_A=v, CONFIG_B=v)" starting at s; on success *rest points past
 * the closing parenthesis.
 */
static int parse_alternatives(const char *s, struct pending *p,
			      const char **rest)
{
	const char *close = strchr(s, ')');
	_cleanup_free_ char *list = NULL;
	char *save = NULL, *tok;

	if (!close)
		return -EINVAL;
	list = strndup(s, close - s);
	if (!list)
		return -ENOMEM;
	for (tok = strtok_r(list, ", ", &save); tok;
	     tok = strtok_r(NULL, ", ", &save)) {
		struct vm_kconfig_setting alt = { 0 };
		void *n;
		int r = parse_setting(tok, &alt);

		if (r <= 0)
			return r < 0 ? r : -EINVAL;
		n = realloc(p->alts, (p->n_alts + 1) * sizeof(alt));
		if (!n) {
			setting_clear(&alt);
			return -ENOMEM;
		}
		p->alts = n;
		p->alts[p->n_alts++] = alt;
	}
	if (p->n_alts == 0)
		return -EINVAL;
	*rest = close + 1;
	return 0;
}

/*
 * "# LEVEL: text" or "# LEVEL (or ...): text" starts a block: 1.
 * Anything else: 0.  Malformed alternatives: -EINVAL.
 */
static int parse_level_line(const char *line, struct pending *p)
{
	const char *s;
	size_t i;

	if (strncmp(line, "# ", 2))
		return 0;
	for (i = 0; i < ARRAY_SIZE(level_names); i++) {
		size_t n = strlen(level_names[i]);

		if (!strncmp(line + 2, level_names[i], n) &&
		    (line[2 + n] == ':' || !strncmp(line + 2 + n, " (or ", 5)))
			break;
	}
	if (i == ARRAY_SIZE(level_names))
		return 0;
	pending_clear(p);
	p->active = true;
	p->level = i;
	s = line + 2 + strlen(level_names[i]);
	if (*s == ' ') {
		int r = parse_alternatives(s + 5, p, &s);

		if (r < 0)
			return r;
	}
	if (*s != ':')
		return -EINVAL;
	return append_text(&p->cost, s + 1) < 0 ? -ENOMEM : 1;
}

int vm_kconfig_fragment_parse(const char *text, const char *name,
			      struct vm_kconfig_fragment **out,
			      struct vm_error *err)
{
	struct vm_kconfig_fragment *f __attribute__((cleanup(fragment_freep))) =
		calloc(1, sizeof(*f));
	struct pending p __attribute__((cleanup(pending_clear))) = { 0 };
	const char *pos = text;
	unsigned lineno = 0;

	if (!f)
		return vm_error_errno(err, ENOMEM, "cannot parse %s", name);
	while (*pos) {
		const char *nl = strchrnul(pos, '\n');
		_cleanup_free_ char *line = line_dup(pos, nl);
		struct vm_kconfig_setting s = { 0 };
		int r;

		lineno++;
		pos = *nl ? nl + 1 : nl;
		if (!line)
			return vm_error_errno(err, ENOMEM, "cannot parse %s",
					      name);
		r = parse_setting(line, &s);
		if (r < 0)
			return vm_error_errno(err, -r, "cannot parse %s", name);
		if (r > 0) {
			struct vm_kconfig_want *w;
			void *n;

			if (!p.active) {
				vm_error_set(
					err, EINVAL,
					"%s:%u: %s has no '# LEVEL: what is lost without it' comment right above it",
					name, lineno, s.name);
				setting_clear(&s);
				return -EINVAL;
			}
			n = realloc(f->wants, (f->n_wants + 1) * sizeof(*w));
			if (!n) {
				setting_clear(&s);
				return vm_error_errno(err, ENOMEM,
						      "cannot parse %s", name);
			}
			f->wants = n;
			w = &f->wants[f->n_wants++];
			w->want = s;
			w->level = p.level;
			w->alternatives = TAKE_PTR(p.alts);
			w->n_alternatives = p.n_alts;
			w->cost = TAKE_PTR(p.cost);
			p.n_alts = 0;
			p.active = false;
			continue;
		}
		if (line[0] == '\0') {
			pending_clear(&p);
			continue;
		}
		if (line[0] != '#')
			return vm_error_set(
				err, EINVAL,
				"%s:%u: expected a comment or a CONFIG_ option, found '%s'",
				name, lineno, line);
		r = parse_level_line(line, &p);
		if (r < 0)
			return vm_error_set(
				err, -r,
				"%s:%u: cannot read the level line '%s'; write '# LEVEL (or CONFIG_A=v, ...): text'",
				name, lineno, line);
		if (r == 0 && p.active && append_text(&p.cost, line + 1) < 0)
			return vm_error_errno(err, ENOMEM, "cannot parse %s",
					      name);
	}
	if (f->n_wants == 0)
		return vm_error_set(err, EINVAL, "%s lists no CONFIG_ option",
				    name);
	*out = TAKE_PTR(f);
	return 0;
}

static void describe_have(const char *have, char *buf, size_t len)
{
	if (!have)
		snprintf(buf, len, "absent from this config");
	else if (!strcmp(have, "n"))
		snprintf(buf, len, "not set");
	else
		snprintf(buf, len, "=%s", have);
}

void vm_kconfig_check_values(const struct vm_kconfig_fragment *f,
			     const struct vm_kconfig_values *v,
			     const char *config_name, FILE *report,
			     struct vm_kconfig_summary *summary)
{
	memset(summary, 0, sizeof(*summary));
	if (report)
		fprintf(report,
			"Checking %s against vmtools.config (%zu options)\n",
			config_name, f->n_wants);
	for (size_t i = 0; i < f->n_wants; i++) {
		const struct vm_kconfig_want *w = &f->wants[i];
		const struct vm_kconfig_setting *alt;
		enum vm_kconfig_verdict verdict = vm_kconfig_judge(w, v, &alt);
		char have[64];

		if (verdict == VM_KCONFIG_MISSING)
			summary->missing[w->level]++;
		else
			summary->ok++;
		if (!report)
			continue;
		switch (verdict) {
		case VM_KCONFIG_OK:
			fprintf(report, "ok       %s=%s\n", w->want.name,
				w->want.value);
			break;
		case VM_KCONFIG_OK_MODULE:
			fprintf(report,
				"ok       %s=%s, built as a module (=m): works once the module is loaded\n",
				w->want.name, w->want.value);
			break;
		case VM_KCONFIG_OK_ALTERNATIVE:
			fprintf(report, "ok       %s=%s, via %s=%s instead\n",
				w->want.name, w->want.value, alt->name,
				alt->value);
			break;
		case VM_KCONFIG_MISSING:
			describe_have(vm_kconfig_get(v, w->want.name), have,
				      sizeof(have));
			fprintf(report, "MISSING  %s=%s [%s], here %s\n",
				w->want.name, w->want.value,
				vm_kconfig_level_name(w->level), have);
			fprintf(report, "         %s\n", w->cost);
			break;
		}
	}
	if (!report)
		return;
	fprintf(report,
		"Summary: %u of %zu present; missing %u required, %u recommended, %u optional.\n",
		summary->ok, f->n_wants, summary->missing[VM_KCONFIG_REQUIRED],
		summary->missing[VM_KCONFIG_RECOMMENDED],
		summary->missing[VM_KCONFIG_OPTIONAL]);
	if (summary->missing[VM_KCONFIG_REQUIRED])
		fprintf(report,
			"Verdict: vmtools cannot work on this kernel; rebuild it with kernel-config/vmtools.config merged in.\n");
	else if (summary->missing[VM_KCONFIG_RECOMMENDED])
		fprintf(report,
			"Verdict: vmtools works on this kernel, with the losses listed above.\n");
	else
		fprintf(report,
			"Verdict: vmtools works fully on this kernel.\n");
}

int vm_kconfig_check(const char *config_path, FILE *report, unsigned *n_missing,
		     struct vm_error *err)
{
	struct vm_kconfig_fragment *f
		__attribute__((cleanup(fragment_freep))) = NULL;
	struct vm_kconfig_values *v
		__attribute__((cleanup(values_freep))) = NULL;
	struct vm_kconfig_summary summary;
	int r;

	r = vm_kconfig_fragment_parse(vm_kconfig_builtin_fragment(),
				      "kernel-config/vmtools.config", &f, err);
	if (r < 0)
		return r;
	r = vm_kconfig_values_load(config_path, &v, err);
	if (r < 0)
		return r;
	vm_kconfig_check_values(f, v, config_path, report, &summary);
	if (n_missing)
		*n_missing = summary.missing[VM_KCONFIG_REQUIRED];
	return 0;
}
