/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kconfig.h - checks a kernel's .config against kernel-config/vmtools.config,
 * the fragment of options vmtools needs or benefits from.
 *
 * The fragment is the one source of truth: the Makefile embeds its text in
 * the binaries ($(BUILD)/gen/kconfig_fragment.h) and this code parses it at
 * run time, so the reasons printed are the comments written in the fragment.
 * Each option in it is preceded by a comment block whose first line reads
 *
 *   # LEVEL[ (or CONFIG_A=v[, CONFIG_B=v]...)]: what is lost without it
 *
 * LEVEL is required, recommended or optional; the "or" list names options
 * that do the same job (e.g. frame pointers instead of ORC).  Further
 * comment lines continue the text.
 *
 * Used by `vmtools-agent check-kernel` on the running kernel and by
 * `vmtools-image build` on the staged kernel's config.
 */
#ifndef VMTOOLS_COMMON_KCONFIG_H
#define VMTOOLS_COMMON_KCONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "common/error.h"

enum vm_kconfig_level {
	VM_KCONFIG_REQUIRED,
	VM_KCONFIG_RECOMMENDED,
	VM_KCONFIG_OPTIONAL,
};

/* name=value; value "n" stands for "# CONFIG_X is not set". */
struct vm_kconfig_setting {
	char *name;
	char *value;
};

/* One option the fragment asks for. */
struct vm_kconfig_want {
	struct vm_kconfig_setting want;
	enum vm_kconfig_level level;
	struct vm_kconfig_setting *alternatives;
	size_t n_alternatives;
	char *cost; /* what is lost without it, from the fragment's comment */
};

struct vm_kconfig_fragment {
	struct vm_kconfig_want *wants;
	size_t n_wants, cap_wants;
};

/* A kernel's configuration: every CONFIG_ line, sorted by name. */
struct vm_kconfig_values {
	struct vm_kconfig_setting *settings;
	size_t n_settings;
};

enum vm_kconfig_verdict {
	VM_KCONFIG_OK,
	VM_KCONFIG_OK_MODULE, /* wanted y, built as m: works once loaded */
	VM_KCONFIG_OK_ALTERNATIVE, /* an "or" option is set instead */
	VM_KCONFIG_MISSING,
};

/* Counts by outcome, filled by vm_kconfig_check_values(). */
struct vm_kconfig_summary {
	unsigned ok; /* including module and alternative */
	unsigned missing[3]; /* indexed by enum vm_kconfig_level */
};

/*
 * The whole check: read config_path (plain or gzip, e.g. /proc/config.gz),
 * compare with the embedded fragment, print one line per option to report
 * (may be NULL) and set *n_missing (may be NULL) to the number of REQUIRED
 * options missing.  Returns 0 when the check ran (whatever its verdicts),
 * or -errno when the config cannot be read, with err naming the file.
 */
int vm_kconfig_check(const char *config_path, FILE *report, unsigned *n_missing,
		     struct vm_error *err);

/* The fragment text compiled into the binary. */
const char *vm_kconfig_builtin_fragment(void);

/* Parse a fragment (text, NUL-terminated).  Errors name the line. */
int vm_kconfig_fragment_parse(const char *text, const char *name,
			      struct vm_kconfig_fragment **out,
			      struct vm_error *err);
void vm_kconfig_fragment_free(struct vm_kconfig_fragment *f);

/* Parse a .config held in memory (len bytes, need not be NUL-terminated). */
int vm_kconfig_values_parse(const char *data, size_t len,
			    struct vm_kconfig_values **out,
			    struct vm_error *err);
/* Read a .config file, plain or gzip-compressed. */
int vm_kconfig_values_load(const char *path, struct vm_kconfig_values **out,
			   struct vm_error *err);
void vm_kconfig_values_free(struct vm_kconfig_values *v);

/* The value of name ("n" when "is not set"), or NULL when absent. */
const char *vm_kconfig_get(const struct vm_kconfig_values *v, const char *name);

/*
 * Verdict for one option.  When an alternative satisfies it, *which (may be
 * NULL) points at that alternative.
 */
enum vm_kconfig_verdict
vm_kconfig_judge(const struct vm_kconfig_want *w,
		 const struct vm_kconfig_values *v,
		 const struct vm_kconfig_setting **which);

/*
 * Print one line per option of f against v to report (NULL: print nothing)
 * and fill *summary.  config_name appears in the heading.
 */
void vm_kconfig_check_values(const struct vm_kconfig_fragment *f,
			     const struct vm_kconfig_values *v,
			     const char *config_name, FILE *report,
			     struct vm_kconfig_summary *summary);

#endif
