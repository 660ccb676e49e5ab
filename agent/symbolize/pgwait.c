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

const char *vm_pg_known_versions(void)
{
	return "15, 16, 17 and 18";
}

size_t vm_pg_wait_event_name(const struct vm_pg_layout *l, uint32_t info,
			     char *buf, size_t size)
{
	unsigned cls = info >> 24, id = info & 0xffff;
	const char *type, *name = NULL;
	int n;

	if (!l || info == 0 || cls >= VM_PG_CLASSES || !l->classes[cls])
		return 0;
	type = l->classes[cls];
	if (l->single[cls])
		name = l->single[cls];
	else if (id < l->events[cls].n)
		name = l->events[cls].names[id];
	else if (!strcmp(type, "LWLock") && id >= l->lwlock_first_extension)
		name = "extension";
	if (!name)
		return 0;
	n = snprintf(buf, size, "%s:%s", type, name);
	return n > 0 && (size_t)n < size ? (size_t)n : 0;
}
