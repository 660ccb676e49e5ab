/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kallsyms.h - kernel frames by name, from /proc/kallsyms (kallsyms.c).
 *
 * The table is parsed once and kept; it is parsed again only when
 * /proc/modules changes (a module loaded or unloaded moves symbols).
 */
#ifndef VMTOOLS_AGENT_KALLSYMS_H
#define VMTOOLS_AGENT_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

struct vm_ksym {
	uint64_t addr;
	const char *name; /* points into the table's text */
	const char *module; /* NULL for the kernel proper */
};

struct vm_kallsyms {
	struct vm_ksym *v; /* sorted by addr */
	size_t n;
	char *text; /* the file's bytes, names point into it */
};

/* Parse kallsyms text (taken over: freed with the table).  Text only. */
int vm_kallsyms_parse(char *text, struct vm_kallsyms *k, struct vm_error *err);

/* The function containing addr, or NULL. */
const struct vm_ksym *vm_kallsyms_lookup(const struct vm_kallsyms *k,
					 uint64_t addr);

/*
 * The address of each of names[n] (sorted by strcmp) into addrs[n]: the
 * lowest of that name's symbols in k, 0 for a name k does not have.
 */
void vm_kallsyms_addrs(const struct vm_kallsyms *k, const char *const *names,
		       size_t n, uint64_t *addrs);

void vm_kallsyms_free(struct vm_kallsyms *k);

/*
 * The running kernel's table, cached in c (see above): the symbol cache
 * keeps one (symcache.h).  The result stays valid until the next call;
 * callers serialize (the symbol cache's lock).
 */
struct vm_kallsyms_cache {
	struct vm_kallsyms table;
	char *modules; /* /proc/modules when it was read */
	uint64_t reads; /* of /proc/kallsyms so far */
};

int vm_kallsyms_get(struct vm_kallsyms_cache *c, const struct vm_kallsyms **out,
		    struct vm_error *err);
void vm_kallsyms_cache_free(struct vm_kallsyms_cache *c);

#endif
