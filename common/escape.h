/* SPDX-License-Identifier: Apache-2.0 */
/*
 * escape.h - bytes that came from outside (a request, a process name, a
 * disk) made safe to write where a person or a parser reads them.
 *
 * A log line must stay one line of text whatever a client sends: a
 * newline would let it forge a line of its own, an ESC drive the terminal
 * that shows the log, and bytes that are not UTF-8 break the tools that
 * read it.  A JSON document must be valid UTF-8 for every parser.  Such
 * bytes are written as \xHH, the two hex digits of the byte, so nothing
 * is lost and nothing is guessed.
 */
#ifndef VMTOOLS_COMMON_ESCAPE_H
#define VMTOOLS_COMMON_ESCAPE_H

#include <stddef.h>

enum vm_escape_mode {
	/*
	 * Free text in a log line: control characters (C0, DEL, C1), the
	 * line and paragraph separators U+2028 and U+2029, and bytes that
	 * are not UTF-8 become \xHH.
	 */
	VM_ESCAPE_TEXT,
	/*
	 * One field of a log line, such as a request's path: as TEXT, and
	 * also the space (so the value stays one word and cannot pass for
	 * the fields after it) and the backslash itself (\\), so that every
	 * escape reads back to exactly one byte.
	 */
	VM_ESCAPE_WORD,
	/*
	 * Serialized JSON: only bytes that are not UTF-8 become \\xHH (the
	 * backslash escaped, as inside a JSON string, where the JSON writer
	 * has already escaped the control characters).
	 */
	VM_ESCAPE_JSON,
};

/*
 * Write s[0..len) escaped for mode into out (size bytes, always
 * NUL-terminated when size > 0; an escape is never cut in half).  Returns
 * the length the whole escaped text needs, as snprintf does: a result >=
 * size means it was truncated.
 */
size_t vm_escape(char *out, size_t size, const char *s, size_t len,
		 enum vm_escape_mode mode);

#endif
