# shellcheck shell=bash
# tests/lib/pg-wait-events.sh - what a PostgreSQL itself says its wait
# events are, sourced after pg.sh with the cluster started: the truth the
# agent's tables (agent/symbolize/pgwait_NN.c) are checked against, and
# what a new version's table is written from.
#
#   pg_wait_events FILE   ask the cluster's server and write FILE
#
# The names: the server executable ($PG_BIN/postgres) is run with
# tests/programs/pgwait-ask.c preloaded, which calls the executable's own
# pgstat_get_wait_event_type() for every class (the top byte of
# wait_event_info) and pgstat_get_wait_event() for every event number of
# each, as pg_stat_activity would to name them, and exits before
# postgres's main() (the names of built-in events are constants of the
# executable; asking a running backend with gdb's inferior calls fails on
# CPUs whose extended register state gdb 13 cannot write back).
#
# The query id: a backend runs `SELECT pg_sleep(60)` with compute_query_id
# on, and the query id pg_stat_activity shows for it is looked for in its
# status entry, read from /proc/PID/mem at *MyBEEntry (the executable
# exports MyBEEntry in its .dynsym; nm -D gives its address, the
# executable's mapping the load bias): where it sits is st_query_id's
# offset.
#
# FILE, sorted, one fact a line, in the form tests/programs/pgwait-dump.c
# prints the agent's table:
#
#   class CLASS TYPE                  wait_event_type of class CLASS
#   event CLASS ID NAME               wait_event of CLASS, ID
#   single CLASS NAME                 every ID of CLASS is NAME
#   lwlock_first_extension ID         from ID on, LWLocks are "extension"
#   query_id_offset N

pg_wait_events() {
	local out=$1 pid qid sleeper
	rm -f "$T/pg-wait.names" "$T/pg-wait.qid"
	if ! LD_PRELOAD=$BUILD/programs/pgwait-ask.so VMTOOLS_PGWAIT_ASK=$T/pg-wait.names \
		"$PG_BIN/postgres" --version >"$T/pg-wait-ask.log" 2>&1 || [ ! -s "$T/pg-wait.names" ]; then
		echo "pg_wait_events: $PG_BIN/postgres did not answer pgwait-ask.so:" >&2
		tail -n 5 "$T/pg-wait-ask.log" >&2
		return 1
	fi
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
	python3 - "$pid" "$qid" >"$T/pg-wait.qid" 2>"$T/pg-wait-qid.log" <<'PY'
import os, struct, subprocess, sys
pid, qid = int(sys.argv[1]), int(sys.argv[2]) & (2**64 - 1)
exe = "/proc/%d/exe" % pid
nm = subprocess.run(["nm", "-D", "--defined-only", exe], capture_output=True, text=True).stdout
value = [int(l.split()[0], 16) for l in nm.splitlines() if l.split()[-1:] == ["MyBEEntry"]]
if len(value) != 1:
    sys.exit("no MyBEEntry in the .dynsym of %s" % os.readlink(exe))
with open(exe, "rb") as f:
    ehdr = f.read(64)
    e_type, phoff = struct.unpack_from("<H", ehdr, 16)[0], struct.unpack_from("<Q", ehdr, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", ehdr, 54)
    f.seek(phoff)
    phdrs = [struct.unpack_from("<IIQQ", f.read(phentsize)) for _ in range(phnum)]
bias = 0
if e_type == 3:  # ET_DYN: the mapping of the first PT_LOAD gives the bias
    first = min(p[3] for p in phdrs if p[0] == 1 and p[2] == 0)
    target = os.readlink(exe)
    for line in open("/proc/%d/maps" % pid):
        f = line.split()
        if len(f) >= 6 and f[5] == target and int(f[2], 16) == 0:
            bias = int(f[0].split("-")[0], 16) - (first & ~0xfff)
            break
    else:
        sys.exit("no mapping of %s at offset 0" % target)
with open("/proc/%d/mem" % pid, "rb", buffering=0) as m:
    m.seek(value[0] + bias)
    entry = struct.unpack("<Q", m.read(8))[0]
    m.seek(entry)
    mem = m.read(2048)
offs = [o for o in range(0, len(mem) - 7, 8) if int.from_bytes(mem[o:o + 8], "little") == qid]
print("query_id_offset %s" % (offs[0] if len(offs) == 1 else "unknown:%r" % offs))
PY
	kill "$sleeper" 2>/dev/null
	pg_psql "SELECT pg_cancel_backend($pid)" >/dev/null
	wait "$sleeper" 2>/dev/null
	if ! grep -q '^query_id_offset [0-9]' "$T/pg-wait.qid"; then
		echo "pg_wait_events: backend $pid's query id was not found in its status entry:" >&2
		cat "$T/pg-wait.qid" "$T/pg-wait-qid.log" | tail -n 5 >&2
		return 1
	fi
	cat "$T/pg-wait.names" "$T/pg-wait.qid" | LC_ALL=C sort >"$out"
}
