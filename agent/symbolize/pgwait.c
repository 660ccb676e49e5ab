// SPDX-License-Identifier: Apache-2.0
/*
 * pgwait.c - finding the table of a PostgreSQL major version and naming
 * a wait_event_info with it (pgwait.h).  The tables are pgwait_NN.c's.
 */
#include "agent/symbolize/pgwait.h"

#include <stdio.h>
#include <string.h>

static const struct vm_pg_layout *const layouts[] = {
	&vm_pg_layout_15,
	&vm_pg_layout_16,
	&vm_pg_layout_17,
	&vm_pg_layout_18,
};

const struct vm_pg_layout *vm_pg_layout(unsigned major)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i]->major == major)
			return layouts[i];
	return NULL;
}

const struct vm_pg_layout *vm_pg_layout_at(size_t i)
{
	return i < sizeof(layouts) / sizeof(layouts[0]) ? layouts[i] : NULL;
}

uint32_t vm_pg_query_id_offset(const struct vm_pg_layout *l)
{
#if defined(__aarch64__)
	if (!l->query_id_arm64)
		return 0;
#endif
	return l->query_id_offset;
}

const char *vm_pg_known_versions(void)
{
	return "15, 16, 17 and 18";
}

/* What release minor names (cls, id), which the table names name. */
static const char *as_released(const struct vm_pg_layout *l, unsigned minor,
			       unsigned cls, unsigned id, const char *name)
{
	for (size_t i = 0; i < l->n_renames; i++) {
		const struct vm_pg_rename *r = &l->renames[i];

		if (r->cls != cls || r->id != id)
			continue;
		if (minor == VM_PG_MINOR_UNKNOWN)
			return NULL;
		if (minor <= r->last_old)
			return r->name;
		if (minor < r->first_new)
			return NULL;
	}
	return name;
}

size_t vm_pg_wait_event_name(const struct vm_pg_layout *l, unsigned minor,
			     uint32_t info, char *buf, size_t size)
{
	unsigned cls = info >> 24, id = info & 0xffff;
	const char *type = NULL, *name = NULL;
	char tbuf[24], nbuf[24];
	int n;

	if (!l || info == 0)
		return 0;
	if (cls < VM_PG_CLASSES)
		type = l->classes[cls];
	if (!type) {
		snprintf(tbuf, sizeof(tbuf), "<unknown %u>", cls);
		type = tbuf;
	} else if (l->single[cls]) {
		name = l->single[cls];
	} else if (id < l->events[cls].n) {
		name = l->events[cls].names[id];
		if (name)
			name = as_released(l, minor, cls, id, name);
	} else if (!strcmp(type, "LWLock") && id >= l->lwlock_first_extension) {
		name = "extension";
	}
	if (!name) {
		snprintf(nbuf, sizeof(nbuf), "<unknown %u>", id);
		name = nbuf;
	}
	n = snprintf(buf, size, "%s:%s", type, name);
	return n > 0 && (size_t)n < size ? (size_t)n : 0;
}
