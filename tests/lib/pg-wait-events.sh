# shellcheck shell=bash
# tests/lib/pg-wait-events.sh - what a running PostgreSQL itself says its
# wait events are, sourced after pg.sh with the cluster started: the truth
# the agent's tables (agent/symbolize/pgwait_NN.c) are checked against, and
# what a new version's table is written from.
#
#   pg_wait_events FILE   ask a backend of the cluster and write FILE
#
# A backend runs `SELECT pg_sleep(60)` with compute_query_id on; gdb
# attaches to it and calls its own pgstat_get_wait_event_type() for every
# class (the top byte of wait_event_info) and pgstat_get_wait_event() for
# every event number of each, as pg_stat_activity would to name them.  The
# query id pg_stat_activity shows for that backend is then looked for in
# its status entry (*MyBEEntry): where it sits is st_query_id's offset.
# FILE, sorted, one fact a line, in the form tests/programs/pgwait-dump.c
# prints the agent's table:
#
#   class CLASS TYPE                  wait_event_type of class CLASS
#   event CLASS ID NAME               wait_event of CLASS, ID
#   single CLASS NAME                 every ID of CLASS is NAME
#   lwlock_first_extension ID         from ID on, LWLocks are "extension"
#   query_id_offset N
#
# Only the built-in events: from 17 on an extension's own (class
# Extension, InjectionPoint) are named from shared memory, and asking for
# one that is not registered raises an ERROR in the backend, so only
# Extension's event 0 is asked for there (the binary has
# WaitEventExtensionNew), and an InjectionPoint none.  A class whose
# events 0, 1 and 2 have one name is that name whatever the number
# (single: Extension and BufferPin before 17); numbering is taken to end
# after 64 numbers without a name, and a number PostgreSQL does not use
# ("<unassigned:N>", a gap among the LWLocks) has none.

pg_wait_events() {
	local out=$1 pid qid sleeper
	cat >"$T/pg-wait-events.py" <<'PY'
import gdb
out = open(gdb.parameter("logging file") + ".facts", "w")
def text(expr):
    v = gdb.parse_and_eval(expr)
    return None if int(v) == 0 else v.string()
def name(info):
    return text("(char *)pgstat_get_wait_event(%d)" % info)
for cls in range(1, 16):
    t = text("(char *)pgstat_get_wait_event_type(%d)" % (cls << 24))
    if t in (None, "???"):
        continue
    out.write("class %d %s\n" % (cls, t))
    if t == "InjectionPoint":
        continue
    if t == "Extension":
        # From 17 on extensions name their own (WaitEventExtensionNew):
        # asking for one not registered is an ERROR.
        try:
            gdb.parse_and_eval("(long)&WaitEventExtensionNew")
            out.write("event %d 0 %s\n" % (cls, name(cls << 24)))
            continue
        except gdb.error:
            pass
    if name(cls << 24) == name((cls << 24) | 1) == name((cls << 24) | 2):
        out.write("single %d %s\n" % (cls, name(cls << 24)))
        continue
    misses = 0
    for i in range(0, 4096):
        n = name((cls << 24) | i)
        if t == "LWLock" and n == "extension":
            out.write("lwlock_first_extension %d\n" % i)
            break
        if n in (None, "???", "unknown wait event") or n.startswith("<unassigned:"):
            misses += 1
            if misses == 64:
                break
            continue
        misses = 0
        out.write("event %d %d %s\n" % (cls, i, n))
entry = int(gdb.parse_and_eval("*(unsigned long *)&MyBEEntry"))
mem = gdb.selected_inferior().read_memory(entry, 2048).tobytes()
qid = int(gdb.parameter("logging file").split(".")[-1]) & (2**64 - 1)
offs = [o for o in range(0, len(mem) - 7, 8) if int.from_bytes(mem[o:o + 8], "little") == qid]
out.write("query_id_offset %s\n" % (offs[0] if len(offs) == 1 else "unknown:%r" % offs))
out.close()
PY
	pg_as psql -h "$PGHOST" -p "$PGPORT" -U postgres -X -A -t -q \
		-c "SET compute_query_id = on" -c "SELECT pg_sleep(60)" postgres >/dev/null 2>&1 &
	sleeper=$!
	for _ in $(seq 100); do
		pid=$(pg_psql "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)' AND query_id IS NOT NULL")
		[ -n "$pid" ] && break
		sleep 0.1
	done
	[ -n "$pid" ] || { echo "pg_wait_events: the sleeping backend did not show in pg_stat_activity" >&2; kill "$sleeper"; return 1; }
	qid=$(pg_psql "SELECT query_id FROM pg_stat_activity WHERE pid = $pid")
	# The query id rides in the log file's name: gdb hands it over.
	timeout 120 gdb -q -batch -nx -p "$pid" -ex "set logging file $T/gdb.$qid" \
		-ex "source $T/pg-wait-events.py" >"$T/gdb.log" 2>&1
	kill "$sleeper" 2>/dev/null
	pg_psql "SELECT pg_cancel_backend($pid)" >/dev/null
	wait "$sleeper" 2>/dev/null
	if [ ! -s "$T/gdb.$qid.facts" ] || ! grep -q '^query_id_offset ' "$T/gdb.$qid.facts"; then
		echo "pg_wait_events: gdb could not ask backend $pid:" >&2
		tail -n 5 "$T/gdb.log" >&2
		return 1
	fi
	LC_ALL=C sort "$T/gdb.$qid.facts" >"$out"
}
