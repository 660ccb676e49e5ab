// SPDX-License-Identifier: Apache-2.0
/*
 * kconfig.c - the kernel-config checker's verdicts: each option of the
 * fragment (parsed by kconfig_fragment.c) against a kernel's settings
 * (read by kconfig_values.c), printed with what a missing one costs.
 * Only vm_kconfig_check() touches files.
 */
#include "common/kconfig_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

static const char *vm_kconfig_level_name(enum vm_kconfig_level level)
{
	return vm_kconfig_level_names[level];
}

static void values_freep(struct vm_kconfig_values **v)
{
	vm_kconfig_values_free(*v);
}

static void fragment_freep(struct vm_kconfig_fragment **f)
{
	vm_kconfig_fragment_free(*f);
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
