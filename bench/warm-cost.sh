#!/usr/bin/env bash
# bench/warm-cost.sh - what `serve`'s warmer costs at start-up and after,
# for a PostgreSQL 15 with 100 idle client backends (psql sessions
# waiting for input): `serve --no-setup --comm postgres` with the warmer
# (the default) and with --no-warm, ROUNDS times each (default 3),
# interleaved.  For each start: the agent's CPU time (the schedstat of all
# its threads, the warmer's pool included) and its VmRSS once the warmer
# had SETTLE seconds (default 15) to warm what they map, and the CPU of the next IDLE seconds (default 20) of
# rescans, as a share of one CPU.  No profile is taken.
#
# usage: BUILD=build bash bench/warm-cost.sh   (ROUNDS=3 SETTLE=15 IDLE=20)
. "$(dirname "$0")/lib/measure.sh"
. "$SRC/tests/lib/agent.sh"
ROUNDS=${ROUNDS:-3}
IDLE=${IDLE:-20}
SETTLE=${SETTLE:-15}
reason=$(need_root)
[ -z "$reason" ] && reason=$(pg_reason)
[ -z "$reason" ] && reason=$(need_cmd curl python3)
[ -z "$reason" ] || { echo "bench/warm-cost.sh: cannot run: $reason" >&2; exit 1; }
pg_start >/dev/null || exit 1
pg_idle_sessions 100 || exit 1
sleep 2
backends=$(pg_psql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")

# cpu_ns PID: CPU time the process's threads used so far, in ns.
cpu_ns() {
	local t s=0
	for t in /proc/"$1"/task/*/schedstat; do
		[ -r "$t" ] && s=$((s + $(cut -d' ' -f1 "$t" 2>/dev/null || echo 0)))
	done
	echo "$s"
}
# one NAME ARG...: a start with ARGs; appends "start_cpu_ms rss_kib
# idle_cpu_pct tables" to $T/NAME.  Nothing asks the agent anything
# until the end (a /healthz costs a BPF probe).
one() {
	local name=$1 c1 c2 rss
	shift
	start_agent "$name" --no-setup --comm postgres "$@"
	sleep "$SETTLE"
	c1=$(cpu_ns "$AGENT_PID")
	rss=$(awk '/VmRSS/ {print $2}' "/proc/$AGENT_PID/status")
	sleep "$IDLE"
	c2=$(cpu_ns "$AGENT_PID")
	echo "$((c1 / 1000000)) $rss $(python3 -c "print('%.3f' % (($c2 - $c1) / 1e9 / $IDLE * 100))") $(agent_health unwind.tables) $(agent_health warm.last_pass_took_ms)" >>"$T/$name"
	stop_agent
}

for _ in $(seq "$ROUNDS"); do
	one warm
	one cold --no-warm
done

python3 - "$T" "$backends" "$IDLE" "$SETTLE" <<'PY'
import statistics, sys
t, backends, idle, settle = sys.argv[1:5]
def rows(n):
    return [[float(x) if x else 0 for x in l.split()] for l in open("%s/%s" % (t, n))]
w, c = rows("warm"), rows("cold")
med = lambda v, i: statistics.median(r[i] for r in v if len(r) > i)
print("PostgreSQL 15, %s client backends; medians of %d starts each, interleaved" % (backends, len(w)))
print("| | warmer (default) | --no-warm | difference |")
print("|---|---|---|---|")
print("| agent CPU, all threads, %s s after start | %.0f ms | %.0f ms | %+.0f ms |" % (settle, med(w, 0), med(c, 0), med(w, 0) - med(c, 0)))
print("| agent VmRSS then | %.1f MiB | %.1f MiB | %+.1f MiB |" % (med(w, 1) / 1024, med(c, 1) / 1024, (med(w, 1) - med(c, 1)) / 1024))
print("| agent CPU over the next %s s (a rescan every 5 s) | %.3f%% of one CPU | %.3f%% | %+.3f%% |" % (idle, med(w, 2), med(c, 2), med(w, 2) - med(c, 2)))
print("| unwind tables kept before any profile | %.0f | %.0f | |" % (med(w, 3), med(c, 3)))
print("| the warmer's last pass took (wall, at nice 19) | %.0f ms | | |" % med(w, 4))
PY
