#!/usr/bin/env python3
# tests/lib/pg-wait-table.py - writes agent/symbolize/pgwait_NN.c, the
# agent's table of one PostgreSQL major version, from the facts
# tests/lib/pg-wait-events.sh asked a running PostgreSQL of that version
# for (tests/integration/36-pg-versions.sh then checks the two agree).
#
# usage: python3 tests/lib/pg-wait-table.py FACTS MAJOR "CHECKED AGAINST" \
#            > agent/symbolize/pgwait_MAJOR.c
import sys
import textwrap

facts, major, source = sys.argv[1], int(sys.argv[2]), sys.argv[3]
classes, single, events, first_ext, qid = {}, {}, {}, 0, None
for line in open(facts):
    f = line.rstrip("\n").split(" ", 3)
    if f[0] == "class":
        classes[int(f[1])] = f[2]
    elif f[0] == "single":
        single[int(f[1])] = f[2]
    elif f[0] == "event":
        events.setdefault(int(f[1]), {})[int(f[2])] = f[3]
    elif f[0] == "lwlock_first_extension":
        first_ext = int(f[1])
    elif f[0] == "query_id_offset":
        qid = int(f[1])
if qid is None:
    sys.exit("pg-wait-table.py: %s has no query_id_offset" % facts)


def ident(c):
    return classes[c].lower()


out = []
w = out.append
w("// SPDX-License-Identifier: Apache-2.0")
w("/*")
w(" * pgwait_%d.c - PostgreSQL %d's wait event names and status entry layout" % (major, major))
w(" * (pgwait.h).")
w(" *")
text = ("Written by tests/lib/pg-wait-table.py from what %s itself answered "
        "tests/lib/pg-wait-events.sh: every name is what its "
        "pgstat_get_wait_event_type() and pgstat_get_wait_event() return for "
        "that number in a running backend, and st_query_id sits at offset %d "
        "of its PgBackendStatus, where the backend's query id was found.  "
        "tests/integration/36-pg-versions.sh checks this table against that "
        "PostgreSQL." % (source, qid))
for l in textwrap.wrap(text, 72, break_on_hyphens=False):
    w(" * " + l)
w(" */")
w('#include "agent/symbolize/pgwait.h"')
for c in sorted(events):
    w("")
    w("static const char *const %s[] = {" % ident(c))
    for i in sorted(events[c]):
        w('\t[%d] = "%s",' % (i, events[c][i]))
    w("};")
w("")
w("const struct vm_pg_layout vm_pg_layout_%d = {" % major)
w("\t.major = %d," % major)
w("\t.query_id_offset = %d," % qid)
w("\t.classes = {")
for c in sorted(classes):
    w('\t\t[0x%02X] = "%s",' % (c, classes[c]))
w("\t},")
w("\t.events = {")
for c in sorted(events):
    w("\t\t[0x%02X] = VM_PG_NAMES(%s)," % (c, ident(c)))
w("\t},")
w("\t.lwlock_first_extension = %d," % first_ext)
if single:
    w("\t.single = {")
    for c in sorted(single):
        w('\t\t[0x%02X] = "%s",' % (c, single[c]))
    w("\t},")
w("};")
print("\n".join(out))
