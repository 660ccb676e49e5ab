#!/usr/bin/env python3
# tools/pg-wait-table.py - writes agent/symbolize/pgwait_NN.c, the
# agent's table of one PostgreSQL major version, from the facts
# tests/lib/pg-wait-events.sh asked a running PostgreSQL of that version
# for (tests/integration/36-pg-versions.sh then checks the two agree).
#
# usage: python3 tools/pg-wait-table.py FACTS MAJOR.MINOR "CHECKED AGAINST" \
#            [OLDER_FACTS=MAJOR.MINOR]... > agent/symbolize/pgwait_MAJOR.c
# MAJOR.MINOR is the release FACTS came from (the table's written_from).
# Each OLDER_FACTS is what an older minor release of the same major
# version answered (its query_id_offset may be left out): an event it
# names otherwise becomes a rename (struct vm_pg_rename), from the last
# release given that names it so to the first that names it as FACTS does.
import sys
import textwrap

facts, release, source = sys.argv[1], sys.argv[2], sys.argv[3]
major = int(release.split(".")[0])


def read(path):
    classes, single, events, first_ext, qid = {}, {}, {}, 0, None
    for line in open(path):
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
    return classes, single, events, first_ext, qid


classes, single, events, first_ext, qid = read(facts)
if qid is None:
    sys.exit("pg-wait-table.py: %s has no query_id_offset" % facts)
# older[minor] = events of that release
older = {}
for arg in sys.argv[4:]:
    path, rel = arg.rsplit("=", 1)
    if int(rel.split(".")[0]) != major:
        sys.exit("pg-wait-table.py: %s is not a release of %d" % (rel, major))
    older[int(rel.split(".")[1])] = read(path)[2]
minor = int(release.split(".")[1])
renames = []
for c in sorted(events):
    for i in sorted(events[c]):
        old = {m: ev.get(c, {}).get(i) for m, ev in older.items()}
        other = {n for n in old.values() if n not in (None, events[c][i])}
        if len(other) > 1:
            sys.exit("pg-wait-table.py: event %d %d has had names %s" % (c, i, sorted(other)))
        if not other:
            continue
        name = other.pop()
        last_old = max(m for m, n in old.items() if n == name)
        first_new = min([m for m, n in old.items() if n == events[c][i] and m > last_old] + [minor])
        if any(n == events[c][i] for m, n in old.items() if m < last_old):
            sys.exit("pg-wait-table.py: event %d %d changed name back and forth" % (c, i))
        renames.append((c, i, name, last_old, first_new))


def ident(c):
    return classes[c].lower()


out = []
w = out.append
w("// SPDX-License-Identifier: Apache-2.0")
w("/*")
w(" * pgwait_%d.c - PostgreSQL %d's wait event names and status entry layout" % (major, major))
w(" * (pgwait.h).")
w(" *")
text = ("Written by tools/pg-wait-table.py from what %s itself answered "
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
if renames:
    w("")
    text = ("What older minor releases name otherwise (checked: %s; a "
            "release between last_old and first_new was not to be had)." %
            ", ".join("%d.%d" % (major, m) for m in sorted(older)))
    w("/*")
    for l in textwrap.wrap(text, 72, break_on_hyphens=False):
        w(" * " + l)
    w(" */")
    w("static const struct vm_pg_rename renames[] = {")
    for c, i, name, last_old, first_new in renames:
        w('\t{ 0x%02X, %d, "%s", %d, %d },' % (c, i, name, last_old, first_new))
    w("};")
for c in sorted(events):
    w("")
    w("static const char *const %s[] = {" % ident(c))
    for i in sorted(events[c]):
        w('\t[%d] = "%s",' % (i, events[c][i]))
    w("};")
w("")
w("const struct vm_pg_layout vm_pg_layout_%d = {" % major)
w("\t.major = %d," % major)
w('\t.written_from = "%s",' % release)
if renames:
    w("\tVM_PG_RENAMES(renames),")
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
