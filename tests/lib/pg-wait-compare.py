#!/usr/bin/env python3
# tests/lib/pg-wait-compare.py - is the agent's wait-event table of one
# major version (tests/programs/pgwait-dump.c's facts) right for one
# running minor release of it (tests/lib/pg-wait-events.sh's facts)?
#
# Minor releases only append events to a class (numbers are never reused
# or moved), so the table is right when
#   - every fact the server states (a class, an event's number and name,
#     a class named alike throughout, where extensions' LWLocks begin,
#     st_query_id's offset) is in the table, the same;
#   - every event the table has and the server does not comes after the
#     server's last number in its class: a later minor release's event,
#     which this server never reports.
# Anything else (a name that differs, a fact the server lacks that is not
# such an event) is wrong.  Prints one line per disagreement, and on the
# last line how many events the table names beyond the server; exits 1
# when there is a disagreement.
#
# usage: python3 tests/lib/pg-wait-compare.py TABLE FACTS
import sys


def facts(path):
    return {l.rstrip("\n") for l in open(path) if l.strip()}


table, server = facts(sys.argv[1]), facts(sys.argv[2])
last = {}
for f in server:
    w = f.split(" ", 3)
    if w[0] == "event":
        last[w[1]] = max(last.get(w[1], -1), int(w[2]))

bad, later = [], []
for f in sorted(server - table):
    bad.append("the server states what the table does not: %s" % f)
for f in sorted(table - server):
    w = f.split(" ", 3)
    if w[0] == "event" and w[1] in last and int(w[2]) > last[w[1]]:
        later.append(f)
    else:
        bad.append("the table states what the server does not: %s" % f)
for b in bad:
    print(b)
print("%d later events in the table%s%s" %
      (len(later), ": " if later else "", ", ".join(later)))
sys.exit(1 if bad else 0)
