#!/usr/bin/env bash
# bench/memory.sh - what a memory snapshot costs, against what an operator
# does today for the same view: `SELECT pg_log_backend_memory_contexts(pid)`
# for each backend, then reading the trees out of the server log.
#
# Two shapes, on PostgreSQL 15, ROUNDS times each (default 5), the two ways
# interleaved:
#   idle100: 100 idle client backends (psql sessions waiting for input);
#            every postgres process is snapshotted (`POST /profile/memory`
#            of `--comm postgres`) / logged (every pid pg_stat_activity
#            lists, until the log holds a "Grand total" for each)
#   deep:    one backend holding DEEP prepared statements (default 50,000;
#            each a CachedPlanSource context and its query's child: the
#            count of contexts is printed), `targets.pids` / its one pid
# For each: the wall time (curl's time_total; for the log, from the call
# until the last "Grand total" line is written), the CPU it cost (the
# agent's threads' schedstat, plus every postgres process's: the log way
# costs the backends, not the agent), and the bytes read: for the agent,
# what `process_vm_readv` returned over one `vmtools-agent profile --kind
# memory` under strace (not timed); for the log, the bytes the log grew.
# Then the agent's peak RSS (VmHWM) after the deep snapshots against its
# RSS before them: its memory while walking that backend, bounded.
#
# usage: BUILD=build bash bench/memory.sh   (ROUNDS=5 DEEP=50000)
. "$(dirname "$0")/lib/measure.sh"
. "$SRC/tests/lib/agent.sh"
DEEP=${DEEP:-50000}
reason=$(need_root)
[ -z "$reason" ] && reason=$(pg_reason)
[ -z "$reason" ] && reason=$(need_cmd curl strace python3)
[ -z "$reason" ] || { echo "bench/memory.sh: cannot run: $reason" >&2; exit 1; }
pg_start >/dev/null || exit 1

# 100 idle psql sessions, each kept open on its FIFO until the script
# ends; the deep one is made after the idle rounds (make_deep).
pg_idle_sessions 100 || exit 1
idle=$(pg_psql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND state = 'idle'")

start_agent mem --no-setup --comm postgres

# cpu_ns PID...: CPU time the processes' threads used so far, in ns.
cpu_ns() {
	local p t s=0
	for p; do
		for t in /proc/"$p"/task/*/schedstat; do
			[ -r "$t" ] && s=$((s + $(cut -d' ' -f1 "$t" 2>/dev/null || echo 0)))
		done
	done
	echo "$s"
}
pg_pids() { pgrep -u postgres -x postgres | tr '\n' ' '; }

# agent NAME BODY: one snapshot; appends "wall_ms cpu_ms" to $T/NAME.
agent() {
	local pids c0 c1 t
	pids=$(pg_pids)
	c0=$(cpu_ns "$AGENT_PID" $pids)
	t=$(agent_post profile/memory "$2" "$T/$1.pb" -w '%{http_code} %{time_total}')
	c1=$(cpu_ns "$AGENT_PID" $pids)
	[ "${t%% *}" = 200 ] || { echo "bench/memory.sh: POST /profile/memory: $t" >&2; exit 1; }
	echo "$(python3 -c "print('%.1f %.1f' % (${t#* } * 1000, ($c1 - $c0) / 1e6))")" >>"$T/$1"
}

# logged NAME WHERE: pg_log_backend_memory_contexts of every pid
# pg_stat_activity lists WHERE; appends "wall_ms cpu_ms log_bytes".
logged() {
	local pids c0 c1 t0 t1 before n want size0
	pids=$(pg_pids)
	before=$(grep -c 'Grand total' "$T/pg/server.log")
	size0=$(stat -c %s "$T/pg/server.log")
	c0=$(cpu_ns $pids)
	t0=$(date +%s%N)
	want=$(pg_psql "SELECT count(pg_log_backend_memory_contexts(pid)) FROM pg_stat_activity WHERE $2")
	for _ in $(seq 3000); do
		n=$(($(grep -c 'Grand total' "$T/pg/server.log") - before))
		[ "$n" -ge "$want" ] && break
		sleep 0.01
	done
	t1=$(date +%s%N)
	c1=$(cpu_ns $pids)
	[ "$n" -ge "$want" ] || { echo "bench/memory.sh: the log holds $n of $want trees" >&2; exit 1; }
	echo "$(((t1 - t0) / 1000000)) $(python3 -c "print('%.1f' % (($c1 - $c0) / 1e6))") $(($(stat -c %s "$T/pg/server.log") - size0))" >>"$T/$1"
}

# Bytes the agent reads of the targets' memory, one snapshot each.
read_bytes() {
	strace -f -e trace=process_vm_readv -e signal=none -o "$T/strace.$1" \
		"$VMTOOLS_AGENT" profile --kind memory "$@" -o "$T/strace.pb" >/dev/null 2>&1
	awk -F'= ' '/process_vm_readv/ && $NF ~ /^[0-9]+$/ { s += $NF; n++ } END { print s + 0, n + 0 }' "$T/strace.$1"
}
# make_deep: the deep session, DEEP prepared statements, idle; sets
# deep_pid and contexts.
make_deep() {
	pg_session deep
	exec {deep_fd}>"$T/deep.in"
	seq 0 $((DEEP - 1)) | awk '{ printf "PREPARE p%d AS SELECT %d;\n", $1, $1 }
		END { print "SELECT \x27ready\x27;" }' >&"$deep_fd"
	for _ in $(seq 600); do
		grep -q ready "$T/deep.out" 2>/dev/null && break
		sleep 0.5
	done
	grep -q ready "$T/deep.out" || { echo "bench/memory.sh: the deep session did not get ready" >&2; exit 1; }
	deep_pid=$(pg_psql "SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT ''ready''%'")
	echo "SELECT 'contexts ' || count(*) FROM pg_backend_memory_contexts;" >&"$deep_fd"
	sleep 2
	contexts=$(sed -n 's/^contexts //p' "$T/deep.out" | tail -1)
}

rss0=$(awk '/VmRSS/ {print $2}' "/proc/$AGENT_PID/status")
for _ in $(seq "$ROUNDS"); do
	agent vm-idle '{"targets": {"comm": ["postgres"]}}'
	logged log-idle "backend_type IS NOT NULL AND pid <> pg_backend_pid()"
done
read -r idle_bytes idle_calls < <(read_bytes --comm postgres)
# The deep backend only now, so that the idle rows do not walk it.
make_deep
for _ in $(seq "$ROUNDS"); do
	agent vm-deep "{\"targets\": {\"pids\": [$deep_pid]}}"
	logged log-deep "pid = $deep_pid"
done
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$AGENT_PID/status")
stop_agent
read -r deep_bytes deep_calls < <(read_bytes --pid "$deep_pid")

python3 - "$T" "$idle" "$contexts" "$idle_bytes" "$idle_calls" "$deep_bytes" "$deep_calls" "$rss0" "$hwm" <<'PY'
import statistics, sys
t, idle, contexts = sys.argv[1], sys.argv[2], sys.argv[3]
ib, ic, db, dc, rss0, hwm = map(int, sys.argv[4:10])
def med(name, col):
    return statistics.median(float(l.split()[col]) for l in open("%s/%s" % (t, name)))
n = len(open("%s/vm-idle" % t).readlines())
print("| snapshot (median of %d rounds, PostgreSQL 15) | vmtools `POST /profile/memory` | `pg_log_backend_memory_contexts` + the log | ratio |" % n)
print("|---|---|---|---|")
for shape, what, b, c in (("idle", "%s idle backends, every postgres process" % idle, ib, ic),
                          ("deep", "one backend with %s contexts" % contexts, db, dc)):
    vw, vc, lw, lc = med("vm-" + shape, 0), med("vm-" + shape, 1), med("log-" + shape, 0), med("log-" + shape, 1)
    lb = med("log-" + shape, 2)
    print("| %s: wall time | %.1f ms | %.1f ms | %.1fx |" % (what, vw, lw, lw / vw))
    print("| %s: CPU (agent + postgres) | %.1f ms | %.1f ms | %.1fx |" % (what, vc, lc, lc / vc if vc else float("inf")))
    print("| %s: bytes read / written | %.2f MiB read in %d calls | %.2f MiB of log | |" % (what, b / 2**20, c, lb / 2**20))
print("| the agent's RSS before the snapshots, its peak after them | %.1f MiB, %.1f MiB | | |" % (rss0 / 1024, hwm / 1024))
PY
