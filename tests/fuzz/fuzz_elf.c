// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_elf.c - libFuzzer target for the symbolizer's ELF reader
 * (agent/symbolize/elf.c): any bytes a process might map, including truncated files,
 * bogus section headers and broken .gnu_debugdata, must yield an error or
 * fewer symbols, never a crash.  Lookups run on whatever was read.  The
 * .dynsym objects reader (agent/symbolize/elf_objects.c) and the
 * PostgreSQL release reader (agent/symbolize/pgrelease.c) read the same
 * bytes, the latter also as plain text.
 */
#include <stddef.h>
#include <stdint.h>

#include "agent/symbolize/elf.h"
#include "agent/symbolize/elf_objects.h"
#include "agent/symbolize/pgrelease.h"

static void fuzz_objects(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "my_wait_event_info",
					     "MyBEEntry" };
	struct vm_elf_objects o;
	uint64_t values[2], addr;

	if (vm_elf_objects_mem(data, size, names, 2, values, &o) == 0)
		vm_elf_objects_runtime(&o, 0x400000, 0x1000, values[0], &addr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vm_elf_info info = { 0 };
	uint64_t addr;

	if (vm_elf_read_mem(data, size, &info, "fuzz input", NULL) == 0) {
		for (uint64_t off = 0; off < 0x4000; off += 0x400)
			if (vm_elf_offset_to_addr(&info, off, &addr))
				vm_elf_lookup(&info, addr);
		for (size_t i = 0; i < info.n_syms; i++)
			vm_elf_lookup(&info, info.syms[i].addr);
	}
	vm_elf_info_free(&info);
	fuzz_objects(data, size);
	vm_pg_release_of_mem(data, size, 17);
	vm_pg_release_in((const char *)data, size, 15);
	return 0;
}
