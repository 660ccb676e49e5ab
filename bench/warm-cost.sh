#!/usr/bin/env bash
# bench/warm-cost.sh - what `serve`'s warmer costs at start-up and after,
# for a PostgreSQL 15 with 100 idle client backends (psql sessions
# waiting for input): `serve --no-setup --comm postgres` with the warmer
# (the default) and with --no-warm, ROUNDS times each (default 3),
# interleaved.  For each start: the agent's CPU time (user + sys of all
# its threads, those ended included: bench/lib/measure.sh's cpu_cgroup)
# from its start until the warmer has looked twice without
# finding anything new (the same time for the agent without), its VmRSS
# then, and the CPU of the next IDLE seconds (default 20) of rescans, as
# a share of one CPU.  No profile is taken.
#
# usage: BUILD=build bash bench/warm-cost.sh   (ROUNDS=3 IDLE=20)
. "$(dirname "$0")/lib/measure.sh"
. "$SRC/tests/lib/agent.sh"
ROUNDS=${ROUNDS:-3}
IDLE=${IDLE:-20}
reason=$(need_root)
[ -z "$reason" ] && reason=$(pg_reason)
[ -z "$reason" ] && reason=$(need_cmd curl python3)
[ -z "$reason" ] || { echo "bench/warm-cost.sh: cannot run: $reason" >&2; exit 1; }
pg_start >/dev/null || exit 1
pg_idle_sessions 100 || exit 1
sleep 2
backends=$(pg_psql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")

cpu_cgroup
AGENT_IN_CGROUP=$(cpu_cgroup_wrap "$VMTOOLS_AGENT")

# one NAME ARG...: a start with ARGs; appends "start_cpu_ms rss_kib
# idle_cpu_pct tables last_pass_ms" to $T/NAME.  With the warmer, /healthz
# is asked once a second until it has looked twice without finding
# anything new; the agent without is asked as many times (a /healthz
# costs a BPF probe, the same for both).
one() {
	local name=$1 c0 c1 c2 rss n=0 last=-1 b p
	shift
	# Without a cgroup, the agent's own counts from its start.
	c0=0
	[ -z "$CPU_CGROUP" ] || c0=$(cpu_cgroup_ns)
	VMTOOLS_AGENT=$AGENT_IN_CGROUP start_agent "$name" --no-setup \
		--comm postgres "$@"
	if [ "$name" = warm ]; then
		while ((n < 300)); do
			sleep 1
			n=$((n + 1))
			b=$(agent_health warm.binaries)
			p=$(agent_health warm.passes)
			[ "$b" = "$last" ] && [ "${p:-0}" -ge 3 ] && break
			last=$b
		done
		echo "$n" >"$T/polls"
	else
		for _ in $(seq "$(cat "$T/polls")"); do
			sleep 1
			agent_health warm.binaries >/dev/null
			agent_health warm.passes >/dev/null
		done
	fi
	c1=$(cpu_cgroup_ns "$AGENT_PID")
	rss=$(awk '/VmRSS/ {print $2}' "/proc/$AGENT_PID/status")
	sleep "$IDLE"
	c2=$(cpu_cgroup_ns "$AGENT_PID")
	echo "$(((c1 - c0) / 1000000)) $rss $(python3 -c "print('%.3f' % (($c2 - $c1) / 1e9 / $IDLE * 100))") $(agent_health unwind.tables) $(agent_health warm.last_pass_took_ms) $n" >>"$T/$name"
	stop_agent
}

for _ in $(seq "$ROUNDS"); do
	one warm
	one cold --no-warm
done

python3 - "$T" "$backends" "$IDLE" <<'PY'
import statistics, sys
t, backends, idle = sys.argv[1:4]
def rows(n):
    return [[float(x) if x else 0 for x in l.split()] for l in open("%s/%s" % (t, n))]
w, c = rows("warm"), rows("cold")
med = lambda v, i: statistics.median(r[i] for r in v if len(r) > i)
print("PostgreSQL 15, %s client backends; medians of %d starts each, interleaved" % (backends, len(w)))
print("| | warmer (default) | --no-warm | difference |")
print("|---|---|---|---|")
print("| agent CPU, all threads, from start until the warmer settled (%.0f s) | %.0f ms | %.0f ms | %+.0f ms |" % (med(w, 5), med(w, 0), med(c, 0), med(w, 0) - med(c, 0)))
print("| agent VmRSS then | %.1f MiB | %.1f MiB | %+.1f MiB |" % (med(w, 1) / 1024, med(c, 1) / 1024, (med(w, 1) - med(c, 1)) / 1024))
print("| agent CPU over the next %s s (a rescan every 5 s) | %.3f%% of one CPU | %.3f%% | %+.3f%% |" % (idle, med(w, 2), med(c, 2), med(w, 2) - med(c, 2)))
print("| unwind tables kept before any profile | %.0f | %.0f | |" % (med(w, 3), med(c, 3)))
print("| the warmer's last pass took (wall) | %.0f ms | | |" % med(w, 4))
PY
