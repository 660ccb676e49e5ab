// SPDX-License-Identifier: Apache-2.0
/*
 * memctx-hostile.c - a process that passes for a PostgreSQL 17 backend to
 * the agent's memory snapshot (tests/integration/39-memctx-hostile.sh):
 * linked with --export-dynamic, it exports TopMemoryContext and
 * my_wait_event_info in .dynsym, and runs from a directory holding a
 * PG_VERSION of 17 (the test's), named postgres.  Its "memory-context
 * tree" is made to hurt a walker that trusts it:
 *
 *   - a fan-out of FANOUT (10 million) siblings under the root, fifty
 *     times the walk's bound of contexts, laid out in one array (880 MB,
 *     what the test machine can spare; a walker that followed them all
 *     would take minutes and gigabytes);
 *   - a chain DEPTH levels deep (past the bound of depth);
 *   - names of a MiB without an end, and names pointing into the kernel;
 *   - a child that points into the kernel, one into a page unmapped, one
 *     misaligned, one whose tag is no context's;
 *   - cycles: a context that is its own child and says so, and two
 *     siblings each the other's next;
 *   - a subtree a thread relinks without end while it is walked.
 *
 * usage: memctx-hostile SECONDS   (then exits)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TAG_ASET 0x1d5 /* PostgreSQL 17's T_AllocSetContext */
#define FANOUT 10000000
#define DEPTH 10000
#define ENDLESS ((size_t)1 << 20)

/* MemoryContextData as PostgreSQL 15 to 18 lay it out on LP64. */
struct node {
	uint32_t type;
	uint8_t is_reset, allow_in_crit_section;
	uint64_t mem_allocated;
	void *methods;
	struct node *parent, *firstchild, *prevchild, *nextchild;
	const char *name, *ident;
	void *reset_cbs;
};

struct node *TopMemoryContext;
uint32_t *my_wait_event_info;
static uint32_t wait_event;

/* n, zeroed, made a child of parent named name. */
static struct node *link_node(struct node *n, struct node *parent,
			      const char *name)
{
	n->type = TAG_ASET;
	n->mem_allocated = 8192;
	n->name = name;
	n->parent = parent;
	if (parent) {
		n->nextchild = parent->firstchild;
		if (parent->firstchild)
			parent->firstchild->prevchild = n;
		parent->firstchild = n;
	}
	return n;
}

static struct node *node(struct node *parent, const char *name)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n)
		exit(1);
	return link_node(n, parent, name);
}

static struct node *volatile moving;

/* Relinks moving's children back and forth, never a consistent tree. */
static void *rewrite(void *arg)
{
	struct node *a = node(moving, "rewritten A"),
		    *b = node(moving, "rewritten B");

	(void)arg;
	for (unsigned long i = 0;; i++) {
		a->parent = i & 1 ? b : moving;
		b->prevchild = i & 2 ? a : NULL;
		moving->firstchild = i & 4 ? a : b;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct node *root, *fan, *deep, *bad, *self, *siblings, *a, *b;
	char *endless;
	void *gone;
	pthread_t t;

	my_wait_event_info = &wait_event;
	root = node(NULL, "TopMemoryContext");

	fan = node(root, "fan-out");
	siblings = calloc(FANOUT, sizeof(*siblings));
	if (!siblings)
		return 1;
	for (int i = 0; i < FANOUT; i++)
		link_node(&siblings[i], fan, "sibling");

	deep = node(root, "deep");
	for (int i = 0; i < DEPTH; i++)
		deep = node(deep, "level");

	endless = malloc(ENDLESS);
	if (!endless)
		return 1;
	memset(endless, 'x', ENDLESS);
	node(root, endless)->ident = endless;
	node(root, (const char *)0xffff888000000000ull);

	bad = node(root, "bad pointers");
	bad->firstchild = (struct node *)0xffff888000001000ull;
	bad = node(root, "unmapped child");
	gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(gone, 4096);
	bad->firstchild = gone;
	bad = node(root, "misaligned child");
	bad->firstchild = (struct node *)((char *)node(NULL, "x") + 3);
	bad = node(root, "not a context");
	node(bad, "tag 7")->type = 7;

	self = node(root, "cycle");
	self->firstchild = self;
	bad = node(root, "sibling cycle");
	a = node(bad, "one");
	b = node(bad, "other");
	a->nextchild = b;
	a->prevchild = b;

	moving = node(root, "moving");
	TopMemoryContext = root;
	pthread_create(&t, NULL, rewrite, NULL);
	sleep(argc > 1 ? (unsigned)atoi(argv[1]) : 60);
	return 0;
}
