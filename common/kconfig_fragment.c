// SPDX-License-Identifier: Apache-2.0
/*
 * kconfig_fragment.c - parsing kernel-config/vmtools.config: each option
 * with the comment block right above it ("# LEVEL[ (or ...)]: what is lost
 * without it" and continuation lines).  The text is compiled into the
 * binaries by the Makefile ($(BUILD)/gen/kconfig_fragment.h), so the file
 * stays the one source of what is checked and why.
 */
#include "common/array.h"
#include "common/kconfig_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "gen/kconfig_fragment.h"

const char *const vm_kconfig_level_names[3] = {
	[VM_KCONFIG_REQUIRED] = "required",
	[VM_KCONFIG_RECOMMENDED] = "recommended",
	[VM_KCONFIG_OPTIONAL] = "optional",
};

const char *vm_kconfig_builtin_fragment(void)
{
	return vm_kconfig_fragment_text;
}

void vm_kconfig_fragment_free(struct vm_kconfig_fragment *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n_wants; i++) {
		struct vm_kconfig_want *w = &f->wants[i];

		vm_kconfig_setting_clear(&w->want);
		for (size_t j = 0; j < w->n_alternatives; j++)
			vm_kconfig_setting_clear(&w->alternatives[j]);
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
	size_t n_alts, cap_alts;
	char *cost;
};

static void pending_clear(struct pending *p)
{
	for (size_t i = 0; i < p->n_alts; i++)
		vm_kconfig_setting_clear(&p->alts[i]);
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
		int r = vm_kconfig_parse_setting(tok, &alt);

		if (r <= 0)
			return r < 0 ? r : -EINVAL;
		if (vm_grow(p->alts, &p->cap_alts, p->n_alts + 1) < 0) {
			vm_kconfig_setting_clear(&alt);
			return -ENOMEM;
		}
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
	for (i = 0; i < ARRAY_SIZE(vm_kconfig_level_names); i++) {
		size_t n = strlen(vm_kconfig_level_names[i]);

		if (!strncmp(line + 2, vm_kconfig_level_names[i], n) &&
		    (line[2 + n] == ':' || !strncmp(line + 2 + n, " (or ", 5)))
			break;
	}
	if (i == ARRAY_SIZE(vm_kconfig_level_names))
		return 0;
	pending_clear(p);
	p->active = true;
	p->level = i;
	s = line + 2 + strlen(vm_kconfig_level_names[i]);
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
		_cleanup_free_ char *line = vm_kconfig_line_dup(pos, nl);
		struct vm_kconfig_setting s = { 0 };
		int r;

		lineno++;
		pos = *nl ? nl + 1 : nl;
		if (!line)
			return vm_error_errno(err, ENOMEM, "cannot parse %s",
					      name);
		r = vm_kconfig_parse_setting(line, &s);
		if (r < 0)
			return vm_error_errno(err, -r, "cannot parse %s", name);
		if (r > 0) {
			struct vm_kconfig_want *w;

			if (!p.active) {
				vm_error_set(
					err, EINVAL,
					"%s:%u: %s has no '# LEVEL: what is lost without it' comment right above it",
					name, lineno, s.name);
				vm_kconfig_setting_clear(&s);
				return -EINVAL;
			}
			if (vm_grow(f->wants, &f->cap_wants, f->n_wants + 1) <
			    0) {
				vm_kconfig_setting_clear(&s);
				return vm_error_errno(err, ENOMEM,
						      "cannot parse %s", name);
			}
			w = &f->wants[f->n_wants++];
			w->want = s;
			w->level = p.level;
			w->alternatives = TAKE_PTR(p.alts);
			w->n_alternatives = p.n_alts;
			w->cost = TAKE_PTR(p.cost);
			p.n_alts = p.cap_alts = 0; /* the want's now */
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
