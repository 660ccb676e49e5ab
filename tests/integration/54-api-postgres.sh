#!/usr/bin/env bash
# tests/integration/54-api-postgres.sh - the REST API's purpose, end to end
# on this machine: a real PostgreSQL 15 cluster under pgbench, profiled by
# `vmtools-agent serve` with the default targets (comm postgres), once as
# developers ask (POST, curl) and once as `go tool pprof` asks.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"

r=$(need_bpf)
[ -z "$r" ] && r=$(need_cmd curl go)
[ -z "$r" ] && r=$(pg_reason)
if [ -n "$r" ]; then
	skip "profiling PostgreSQL through the REST API" "$r"
	exit 0
fi
export HOME=$T/home PPROF_TMPDIR=$T/pprof
mkdir -p "$HOME" "$PPROF_TMPDIR"

if ! pg_start || ! pg_bench_init 1; then
	not_ok "PostgreSQL cluster starts"
	exit 0
fi
pg_bench_bg 20 -c 4 -j 2 -S

"$VMTOOLS_AGENT" serve --no-setup --listen 127.0.0.1:0 2>"$T/agent.log" &
PID=$!
at_exit "kill -9 $PID"
for ((i = 0; i < 100; i++)); do
	PORT=$(grep -o 'port [0-9]*' "$T/agent.log" | grep -o '[0-9]*$')
	[ -n "$PORT" ] && break
	sleep 0.05
done
sleep 1

st=$(curl -s -X POST -H "Content-Type: application/json" \
	-d '{"profiler": {"BccProfile": null}, "sampling_frequency": 99, "timeout_seconds": 3, "archive": false}' \
	-o "$T/pg.pb" -w '%{http_code}' "http://127.0.0.1:$PORT/profile/cpu")
check "POST /profile/cpu while pgbench runs: 200" test "$st" = 200
go tool pprof -top "$T/pg.pb" >"$T/top" 2>"$T/top.err"
check "the profile holds PostgreSQL's own functions" \
	grep -qE 'PostgresMain|exec_simple_query|exec_bind_message|ExecutorRun|PortalRun|standard_ExecutorRun' "$T/top"
go tool pprof -tags "$T/pg.pb" >"$T/tags" 2>&1
check "samples are labelled comm=postgres and by backend type" \
	bash -c "grep -q 'postgres' '$T/tags' && grep -q 'client backend' '$T/tags'"

go tool pprof -seconds 2 -top "http://127.0.0.1:$PORT/debug/pprof/profile" \
	>"$T/go" 2>"$T/go.err"
check "go tool pprof -seconds 2 .../debug/pprof/profile profiles PostgreSQL" \
	grep -qE 'PostgresMain|exec_simple_query|exec_bind_message|PortalRun|postgres' "$T/go"
kill "$PID"
wait "$PID"
check "the agent exits 0" test $? = 0
