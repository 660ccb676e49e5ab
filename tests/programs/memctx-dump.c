// SPDX-License-Identifier: Apache-2.0
/*
 * memctx-dump.c - prints the memory-context tree the agent's walk reads
 * from a live PostgreSQL process (agent/samples/pg_memctx_read.h), for
 * the tests that compare it with what PostgreSQL says of itself
 * (tests/integration/38-pg-memctx.sh): TopMemoryContext's address from
 * the executable's .dynsym moved by the load bias in /proc/PID/maps, then
 * one line for the walk and one per context:
 *
 *	walk total BYTES contexts N tries T partial 0|1 cut NODES DEPTH NAMES bad B why TEXT
 *	ctx DEPTH TYPE BYTES PATH
 *
 * PATH is the context names from TopMemoryContext down, joined by ';'.
 *
 * usage: memctx-dump PID MAJOR
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/iopool/iopool.h"
#include "agent/samples/pg_memctx_read.h"
#include "agent/symbolize/elf_objects.h"

/* TopMemoryContext's run-time address in pid, 0 when not found. */
static uint64_t top_address(const char *pid)
{
	static const char *const names[] = { "TopMemoryContext" };
	char path[64], exe[PATH_MAX], line[PATH_MAX + 128];
	struct vm_elf_objects o;
	uint64_t vaddr = 0, addr = 0;
	ssize_t n;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (n <= 0 || fd < 0)
		return 0;
	exe[n] = '\0';
	if (vm_elf_objects_fd(fd, names, 1, &vaddr, &o) < 0 || !vaddr) {
		close(fd);
		return 0;
	}
	close(fd);
	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!addr && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff;
		char *p = strchr(line, '/');

		if (!p || sscanf(line, "%llx-%llx %*s %llx", &start, &end,
				 &pgoff) != 3)
			continue;
		p[strcspn(p, "\n")] = '\0';
		if (!strcmp(p, exe))
			vm_elf_objects_runtime(&o, start, pgoff, vaddr, &addr);
	}
	fclose(f);
	return addr;
}

static void print_path(const struct vm_memctx_tree *t, uint32_t i)
{
	if (t->v[i].parent != VM_MEMCTX_NONE) {
		print_path(t, t->v[i].parent);
		putchar(';');
	}
	fputs(vm_memctx_str(t, t->v[i].name), stdout);
}

int main(int argc, char **argv)
{
	const struct vm_memctx_tags *tags;
	struct vm_memctx_tree t;
	struct vm_iopool *pool;
	uint64_t top;
	int err;

	if (argc != 3) {
		fprintf(stderr, "usage: memctx-dump PID MAJOR\n");
		return 2;
	}
	tags = vm_memctx_tags((unsigned)atoi(argv[2]));
	top = top_address(argv[1]);
	pool = vm_iopool_new();
	if (!tags || !top || !pool) {
		fprintf(stderr,
			"memctx-dump: no tags for %s, or no TopMemoryContext in process %s\n",
			argv[2], argv[1]);
		return 1;
	}
	err = vm_pg_memctx_read(pool, (uint32_t)atoi(argv[1]), tags, top, NULL,
				VM_MEMCTX_WALK_MS, &t);
	if (err < 0) {
		fprintf(stderr, "memctx-dump: %s (%s)\n", strerror(-err),
			t.why);
		return 1;
	}
	printf("walk total %" PRIu64
	       " contexts %zu tries %u partial %d cut %" PRIu64 " %" PRIu64
	       " %" PRIu64 " bad %" PRIu64 " why %s\n",
	       t.total, t.n, t.tries, t.partial, t.cut_nodes, t.cut_depth,
	       t.cut_names, t.bad, t.why);
	for (size_t i = 0; i < t.n; i++) {
		printf("ctx %u %s %" PRIu64 " ", t.v[i].depth,
		       vm_memctx_type_name(t.v[i].type), t.v[i].mem_allocated);
		print_path(&t, (uint32_t)i);
		putchar('\n');
	}
	vm_memctx_tree_free(&t);
	vm_iopool_free(pool);
	return 0;
}
