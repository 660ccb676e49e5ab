// SPDX-License-Identifier: Apache-2.0
/*
 * kallsyms.c - parsing /proc/kallsyms into a sorted table of kernel text
 * symbols, looking addresses up in it, and caching the running kernel's
 * table across profiles (see kallsyms.h).
 */
#include "agent/symbolize/kallsyms.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/array.h"
#include "common/cleanup.h"
#include "common/search.h"

static int cmp_ksym(const void *a, const void *b)
{
	const struct vm_ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return 0;
}

int vm_kallsyms_parse(char *text, struct vm_kallsyms *k, struct vm_error *err)
{
	size_t cap = 0;
	bool any_address = false;
	char *line = text, *next;

	memset(k, 0, sizeof(*k));
	k->text = text;
	for (; line && *line; line = next) {
		char *addr_end, *type, *name, *module;
		unsigned long long addr;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		/* "ffffffff81000000 T _stext" or "... t name\t[module]" */
		addr = strtoull(line, &addr_end, 16);
		if (addr_end == line || *addr_end != ' ')
			continue;
		type = addr_end + 1;
		if (!*type || type[1] != ' ')
			continue;
		if (*type != 't' && *type != 'T' && *type != 'w' &&
		    *type != 'W')
			continue;
		name = type + 2;
		module = strchr(name, '\t');
		if (module) {
			*module++ = '\0';
			if (*module == '[') {
				module++;
				module[strcspn(module, "]")] = '\0';
			}
		}
		if (!*name)
			continue;
		if (addr)
			any_address = true;
		if (vm_grow(k->v, &cap, k->n + 1) < 0) {
			vm_kallsyms_free(k);
			return vm_error_set(err, ENOMEM, "out of memory");
		}
		k->v[k->n++] = (struct vm_ksym){ addr, name, module };
	}
	if (k->n && !any_address) {
		vm_kallsyms_free(k);
		return vm_error_set(
			err, EPERM,
			"kernel symbol addresses are hidden (kernel.kptr_restrict); run the agent as root");
	}
	/* The kernel lists its own symbols sorted; modules may not be. */
	for (size_t i = 1; i < k->n; i++)
		if (k->v[i - 1].addr > k->v[i].addr) {
			qsort(k->v, k->n, sizeof(*k->v), cmp_ksym);
			break;
		}
	return 0;
}

const struct vm_ksym *vm_kallsyms_lookup(const struct vm_kallsyms *k,
					 uint64_t addr)
{
	return VM_BSEARCH_FLOOR(addr, k->v, k->n, addr);
}

static int name_cmp(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

void vm_kallsyms_addrs(const struct vm_kallsyms *k, const char *const *names,
		       size_t n, uint64_t *addrs)
{
	memset(addrs, 0, n * sizeof(*addrs));
	if (!n)
		return;
	/* In address order: the first found of a name is its lowest. */
	for (size_t i = 0; i < k->n; i++) {
		const char *const *found = bsearch(k->v[i].name, names, n,
						   sizeof(*names), name_cmp);

		if (found && !addrs[found - names])
			addrs[found - names] = k->v[i].addr;
	}
}

void vm_kallsyms_free(struct vm_kallsyms *k)
{
	free(k->v);
	free(k->text);
	memset(k, 0, sizeof(*k));
}

/* A whole /proc file: they report size 0, so read until EOF. */
static int slurp(const char *path, char **out, struct vm_error *err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	size_t n = 0, cap = 0;
	ssize_t r;

	if (fd < 0)
		return vm_error_errno(err, errno, "cannot open %s", path);
	for (;;) {
		/* Room for a large read at a time. */
		if (vm_grow(buf, &cap, n + 65536) < 0)
			return vm_error_set(err, ENOMEM, "out of memory");
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return vm_error_errno(err, errno, "cannot read %s",
					      path);
		if (r == 0)
			break;
		n += r;
	}
	buf[n] = '\0';
	*out = TAKE_PTR(buf);
	return 0;
}

void vm_kallsyms_cache_free(struct vm_kallsyms_cache *c)
{
	vm_kallsyms_free(&c->table);
	free(c->modules);
	c->modules = NULL;
}

int vm_kallsyms_get(struct vm_kallsyms_cache *c, const struct vm_kallsyms **out,
		    struct vm_error *err)
{
	_cleanup_free_ char *modules = NULL;
	char *text = NULL;
	int r;

	/* No /proc/modules (CONFIG_MODULES=n): compare as empty. */
	if (slurp("/proc/modules", &modules, NULL) < 0)
		modules = strdup("");
	if (c->table.n && modules && c->modules &&
	    !strcmp(modules, c->modules)) {
		*out = &c->table;
		return 0;
	}
	vm_kallsyms_cache_free(c);
	__atomic_add_fetch(&c->reads, 1, __ATOMIC_RELAXED);
	r = slurp("/proc/kallsyms", &text, err);
	if (r < 0)
		return r;
	r = vm_kallsyms_parse(text, &c->table, err);
	if (r < 0)
		return r;
	c->modules = TAKE_PTR(modules);
	*out = &c->table;
	return 0;
}
