// SPDX-License-Identifier: Apache-2.0
/*
 * prom.c - writing the Prometheus text exposition format into a memory
 * buffer (prom.h).  Names, help texts and label values are the agent's
 * own constants, never a request's: nothing here escapes.
 */
#include "agent/encode/prom.h"

#include <stdlib.h>

int vm_prom_open(struct vm_prom *p)
{
	p->buf = NULL;
	p->size = 0;
	p->f = open_memstream(&p->buf, &p->size);
	return p->f ? 0 : -1;
}

char *vm_prom_close(struct vm_prom *p, size_t *len)
{
	if (fclose(p->f) != 0) {
		free(p->buf);
		return NULL;
	}
	*len = p->size;
	return p->buf;
}

void vm_prom_family(struct vm_prom *p, const char *name, const char *type,
		    const char *help)
{
	fprintf(p->f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void vm_prom_u64(struct vm_prom *p, const char *name, const char *label,
		 const char *value, uint64_t v)
{
	if (label)
		fprintf(p->f, "%s{%s=\"%s\"} %llu\n", name, label, value,
			(unsigned long long)v);
	else
		fprintf(p->f, "%s %llu\n", name, (unsigned long long)v);
}

void vm_prom_one(struct vm_prom *p, const char *name, const char *type,
		 const char *help, uint64_t v)
{
	vm_prom_family(p, name, type, help);
	vm_prom_u64(p, name, NULL, NULL, v);
}
