/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prom.h - writing the Prometheus text exposition format (version 0.0.4)
 * into a memory buffer: a metric family's HELP and TYPE lines, then its
 * samples, with at most one label each.  What GET /metrics answers is
 * written with it (metrics.c, continuous_metrics.c).
 */
#ifndef VMTOOLS_AGENT_PROM_H
#define VMTOOLS_AGENT_PROM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct vm_prom {
	FILE *f;
	char *buf;
	size_t size;
};

/* 0, or -1 when out of memory. */
int vm_prom_open(struct vm_prom *p);
/* The text written (malloc'd, NUL-terminated, length in *len), or NULL. */
char *vm_prom_close(struct vm_prom *p, size_t *len);

/* TYPE is "counter" or "gauge". */
void vm_prom_family(struct vm_prom *p, const char *name, const char *type,
		    const char *help);
/* One sample, NAME{LABEL="VALUE"} V, or NAME V when LABEL is NULL. */
void vm_prom_u64(struct vm_prom *p, const char *name, const char *label,
		 const char *value, uint64_t v);
/* A family of one unlabelled sample. */
void vm_prom_one(struct vm_prom *p, const char *name, const char *type,
		 const char *help, uint64_t v);

#endif
