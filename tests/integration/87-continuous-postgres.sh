#!/usr/bin/env bash
# tests/integration/87-continuous-postgres.sh - `serve --continuous` on a
# real PostgreSQL 15 with compute_query_id on: the samples of a backend
# looping one statement carry, in the merged history
# (/profile/cpu/history/profile), the query_id pg_stat_activity shows for
# it, and still do when the windows are read back from --history-dir
# after a restart.  Also the shutdown: SIGTERM while a statement runs ends
# the agent (well within 5 s; not a timing test) with its last window
# written and no temporary file left in the history directory.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"
. "$SRC/tests/lib/agent.sh"

skip_unless "continuous profiling of PostgreSQL" "$(need_bpf)" \
	"$(need_cmd curl go python3)" "$(pg_reason)"
pprof_home
HIST=$T/hist

if ! pg_start; then
	not_ok "PostgreSQL cluster starts"
	exit 0
fi
pg_psql "ALTER SYSTEM SET compute_query_id = on" >/dev/null
pg_psql "SELECT pg_reload_conf()" >/dev/null

# One session looping a statement that keeps its backend on a CPU.
pg_session loop
exec 6>"$T/loop.in"
at_exit "exec 6>&-"
echo "SELECT pg_backend_pid();" >&6
for _ in $(seq 100); do [ -s "$T/loop.out" ] && break; sleep 0.05; done
backend=$(head -n 1 "$T/loop.out")
check "the looping session has a backend ($backend)" test -n "$backend"
echo "SELECT sum(i) FROM generate_series(1, 2000000000) i;" >&6

start_agent cont --no-setup --continuous --continuous-frequency 97 \
	--continuous-interval 2 --history-dir "$HIST"
started=$(date +%s)
qid=
for _ in $(seq 50); do
	qid=$(pg_psql "SELECT query_id FROM pg_stat_activity WHERE pid = $backend AND state = 'active'")
	[ -n "$qid" ] && break
	sleep 0.1
done
check "pg_stat_activity shows a query id for the looping statement ($qid)" test -n "$qid"
sleep 5

# samples PROFILE [LABEL]: samples of the backend in PROFILE (go tool
# pprof -raw), only those with LABEL (e.g. query_id:[N]) when given.
samples() {
	go tool pprof -raw "$1" 2>/dev/null | awk -v pid="pid:[$backend]" -v want="${2:-}" '
		/^ +[0-9]+ +[0-9]+:/ { n = $1; labels = ""; next }
		/^ +[a-z_]+:\[/ { labels = labels " " $0
			if ($0 ~ /pid:\[/ && index(labels, pid) && (want == "" || index(labels, want)))
				sum += n
		}
		END { print sum + 0 }'
}

st=$(curl -s -o "$T/last.pb" -w '%{http_code}' \
	"$AGENT_URL/profile/cpu/history/profile?from=-4s")
check "GET history/profile?from=-4s: 200" test "$st" = 200
all=$(samples "$T/last.pb")
with=$(samples "$T/last.pb" "query_id:[$qid]")
diag <<<"backend $backend: $with of $all samples with query_id $qid"
check "the history's samples of the backend carry its query_id (at least 90%)" \
	python3 -c "import sys; sys.exit(0 if $all > 0 and $with >= 0.9 * $all else 1)"

# SIGTERM while sampling: the agent ends, its last window written.
kill "$AGENT_PID"
for _ in $(seq 100); do
	kill -0 "$AGENT_PID" 2>/dev/null || break
	sleep 0.05
done
check "SIGTERM: the agent has exited within 5 s" bash -c "! kill -0 $AGENT_PID 2>/dev/null"
wait "$AGENT_PID"
check "SIGTERM: exit status 0" test $? = 0
check "SIGTERM: it said it stopped" grep -q 'stopped$' "$AGENT_LOG"
check "SIGTERM: no temporary file left in --history-dir" \
	bash -c "[ -z \"\$(find '$HIST' -name '.tmp-*')\" ]"
last=$(ls "$HIST" | grep '^cpu-' | sort | tail -1)
check "SIGTERM: the last window is on disk ($last)" \
	bash -c "[ \$(( \$(date -u +%s) - \$(date -u -d \"\$(echo '$last' | sed -E 's/cpu-.{16}-(....)(..)(..)T(..)(..)(..)Z.*/\1-\2-\3 \4:\5:\6/')\" +%s) )) -le 3 ]"

# The windows read back from disk keep the labels.
start_agent again --no-setup --continuous --continuous-frequency 97 \
	--continuous-interval 2 --history-dir "$HIST"
st=$(curl -s -o "$T/old.pb" -w '%{http_code}' \
	"$AGENT_URL/profile/cpu/history/profile?from=$started&until=$((started + 4))")
check "after a restart, the windows from before: 200" test "$st" = 200
all=$(samples "$T/old.pb")
with=$(samples "$T/old.pb" "query_id:[$qid]")
diag <<<"read back: $with of $all samples with query_id $qid"
check "read back from --history-dir: the backend's samples still carry its query_id (at least 90%)" \
	python3 -c "import sys; sys.exit(0 if $all > 0 and $with >= 0.9 * $all else 1)"
check "the agent stops cleanly" stop_agent
