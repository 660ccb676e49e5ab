// SPDX-License-Identifier: Apache-2.0
/*
 * test_fault_maps.c - unit tests of agent/samples/fault_maps.c: the kind
 * of each line of /proc/PID/maps (anonymous, shared, a file's), an
 * address found in its range or in none, lines that do not parse; and
 * the classifier reading this process's own mappings: a page it maps
 * shared, one it maps privately, one it unmapped.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/samples/fault_maps.h"

static void test_parse(void **state)
{
	static const char text[] =
		"55d1e7a00000-55d1e7a3c000 r--p 00000000 08:01 1234     /usr/lib/postgresql/15/bin/postgres\n"
		"55d1e8000000-55d1e8400000 rw-p 00000000 00:00 0        [heap]\n"
		"7f0000000000-7f0004000000 rw-s 00000000 00:01 5        /dev/zero (deleted)\n"
		"7f0004000000-7f0004100000 rw-p 00000000 00:00 0 \n"
		"7f0004100000-7f0004200000 rw-s 00000000 08:01 77       /var/lib/data.bin\n"
		"7f0004200000-7f0004300000 rw-p 00000000 00:00 0        [anon:glibc malloc]\n"
		"not a line of maps\n"
		"7f0004300000-7f0004200000 rw-p 00000000 00:00 0\n"
		"7ffd4a1d0000-7ffd4a1f1000 rw-p 00000000 00:00 0        [stack]";
	static const struct {
		uint64_t addr;
		enum vm_fault_mapping kind;
	} want[] = {
		{ 0x55d1e7a00010, VM_FAULT_FILE },
		{ 0x55d1e8000000, VM_FAULT_ANONYMOUS },
		{ 0x7f0003ffffff, VM_FAULT_SHARED },
		{ 0x7f0004000000, VM_FAULT_ANONYMOUS },
		/* A file mapped shared is shared memory. */
		{ 0x7f0004100000, VM_FAULT_SHARED },
		{ 0x7f0004250000, VM_FAULT_ANONYMOUS },
		{ 0x7ffd4a1f0fff, VM_FAULT_ANONYMOUS },
		/* Between mappings, below and above them all: none. */
		{ 0x55d1e7a3c000, VM_FAULT_UNMAPPED },
		{ 0x1000, VM_FAULT_UNMAPPED },
		{ 0x7ffd4a1f1000, VM_FAULT_UNMAPPED },
	};
	struct vm_fault_range *r;
	size_t n;

	(void)state;
	assert_int_equal(vm_fault_ranges_parse(text, strlen(text), &r, &n), 0);
	assert_int_equal(n, 7);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(vm_fault_ranges_find(r, n, want[i].addr),
				 want[i].kind);
	free(r);
	assert_int_equal(vm_fault_ranges_parse("", 0, &r, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(vm_fault_ranges_find(r, n, 0x1000), VM_FAULT_UNMAPPED);
	free(r);
	assert_string_equal(vm_fault_mapping_name(VM_FAULT_ANONYMOUS),
			    "anonymous");
	assert_string_equal(vm_fault_mapping_name(VM_FAULT_UNMAPPED),
			    "unmapped");
	assert_null(vm_fault_mapping_name(VM_FAULT_NONE));
}

/* This process's own mappings, read from /proc as the profiler reads. */
static void test_classify_self(void **state)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct vm_fault_maps m = { 0 };
	uint32_t pid = (uint32_t)getpid();
	char *shared, *private, *gone;

	(void)state;
	shared = mmap(NULL, page, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	private = mmap(NULL, page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(shared != MAP_FAILED && private != MAP_FAILED);
	assert_int_equal(vm_fault_maps_classify(&m, pid, (uintptr_t)shared, 1),
			 VM_FAULT_SHARED);
	assert_int_equal(vm_fault_maps_classify(&m, pid, (uintptr_t) private,
						2),
			 VM_FAULT_ANONYMOUS);
	assert_int_equal(vm_fault_maps_classify(&m, pid, (uintptr_t)&test_parse,
						3),
			 VM_FAULT_FILE);
	assert_int_equal(m.reads, 1);
	/* Mapped after the read: found by reading again. */
	gone = mmap(NULL, page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(gone != MAP_FAILED);
	munmap(shared, page);
	munmap(private, page);
	assert_int_equal(vm_fault_maps_classify(&m, pid, (uintptr_t)gone,
						5000000),
			 VM_FAULT_ANONYMOUS);
	assert_int_equal(m.reads, 2);
	/*
	 * Unmapped before its mappings were read: in none, said so.  (Once
	 * read, an address keeps the kind it had: the fault was taken then.)
	 */
	munmap(gone, page);
	vm_fault_maps_free(&m);
	assert_int_equal(vm_fault_maps_classify(&m, pid, (uintptr_t)gone, 1),
			 VM_FAULT_UNMAPPED);
	/* A process gone: none, and its maps are not read again. */
	assert_int_equal(vm_fault_maps_classify(&m, 0x7fffffff, 0x1000, 1),
			 VM_FAULT_UNMAPPED);
	assert_int_equal(vm_fault_maps_classify(&m, 0x7fffffff, 0x1000,
						100000000),
			 VM_FAULT_UNMAPPED);
	assert_int_equal(m.reads, 2);
	vm_fault_maps_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_classify_self),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
