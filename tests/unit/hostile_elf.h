/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hostile_elf.h - the symbol tables the symbolizer's unit tests read to
 * check its memory bounds, written by tests/lib/hostile-elf.py (found
 * under $SRC) into a temporary directory.  Included after <cmocka.h>, as
 * static inline, like assert_file.h.
 */
#ifndef VMTOOLS_TESTS_HOSTILE_ELF_H
#define VMTOOLS_TESTS_HOSTILE_ELF_H

#include <stdio.h>
#include <stdlib.h>

/* Write hostile-elf.py's file with args as dir/name; its path (free it). */
static inline char *hostile_elf(const char *dir, const char *name,
				const char *args)
{
	const char *src = getenv("SRC");
	char *path, *cmd;

	assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
	assert_true(asprintf(&cmd, "python3 %s/tests/lib/hostile-elf.py %s %s",
			     src ? src : ".", path, args) > 0);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	return path;
}

/* Remove the temporary directory dir and what is in it. */
static inline void hostile_elf_done(const char *dir)
{
	char *cmd;

	assert_true(asprintf(&cmd, "rm -rf '%s'", dir) > 0);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

#endif
