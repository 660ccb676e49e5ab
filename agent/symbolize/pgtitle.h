/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pgtitle.h - the PostgreSQL backend type of a process, from the title
 * PostgreSQL sets (pgtitle.c): "postgres: checkpointer" -> "checkpointer",
 * "postgres: alice shop [local] SELECT" -> "client backend".
 */
#ifndef VMTOOLS_AGENT_PGTITLE_H
#define VMTOOLS_AGENT_PGTITLE_H

/*
 * A static string, or NULL when the process is not PostgreSQL's.  comm is
 * the command name (may be NULL), title the command line as ps shows it.
 */
const char *vm_pg_backend_type(const char *comm, const char *title);

#endif
