/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pgrelease.h - which minor release of its major version a PostgreSQL
 * server executable is (pgrelease.c), for the wait-event names that
 * changed between minor releases (pgwait.h's renames).  Read from the
 * version string every server carries for version() ("PostgreSQL 17.2 on
 * x86_64-pc-linux-gnu, compiled by ...", "PostgreSQL 15.18 (Debian
 * 15.18-0+deb12u1) on ..."), in the executable's .rodata.
 *
 * Input is untrusted (the executable of any process): libelf checks the
 * section's bounds, and the text is only searched (tests/fuzz/fuzz_elf.c).
 */
#ifndef VMTOOLS_AGENT_PGRELEASE_H
#define VMTOOLS_AGENT_PGRELEASE_H

#include <stddef.h>

/*
 * The minor release of major version major named in text ("PostgreSQL
 * MAJOR.MINOR" followed by neither a digit nor a dot), or
 * VM_PG_MINOR_UNKNOWN when none is, or two differ.
 */
unsigned vm_pg_release_in(const char *text, size_t len, unsigned major);

/* The same for the executable open on fd, from its .rodata. */
unsigned vm_pg_release_of_fd(int fd, unsigned major);
unsigned vm_pg_release_of_mem(const void *buf, size_t len, unsigned major);

#endif
