#!/usr/bin/env bash
# tests/integration/54-api-postgres.sh - the REST API's purpose, end to end
# on this machine: a real PostgreSQL 15 cluster under pgbench, profiled by
# `vmtools-agent serve` with the default targets (comm postgres), once as
# developers ask (POST, curl) and once as `go tool pprof` asks.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"
. "$SRC/tests/lib/agent.sh"

skip_unless "profiling PostgreSQL through the REST API" "$(need_bpf)" \
	"$(need_cmd curl go)" "$(pg_reason)"
pprof_home

if ! pg_start || ! pg_bench_init 1; then
	not_ok "PostgreSQL cluster starts"
	exit 0
fi
pg_bench_bg 20 -c 4 -j 2 -S

start_agent agent --no-setup
sleep 1

st=$(curl -s -X POST -H "Content-Type: application/json" \
	-d '{"profiler": {"BccProfile": null}, "sampling_frequency": 99, "timeout_seconds": 3, "archive": false}' \
	-o "$T/pg.pb" -w '%{http_code}' "$AGENT_URL/profile/cpu")
check "POST /profile/cpu while pgbench runs: 200" test "$st" = 200
go tool pprof -top "$T/pg.pb" >"$T/top" 2>"$T/top.err"
check "the profile holds PostgreSQL's own functions" \
	grep -qE 'PostgresMain|exec_simple_query|exec_bind_message|ExecutorRun|PortalRun|standard_ExecutorRun' "$T/top"
go tool pprof -tags "$T/pg.pb" >"$T/tags" 2>&1
check "samples are labelled comm=postgres and by backend type" \
	bash -c "grep -q 'postgres' '$T/tags' && grep -q 'client backend' '$T/tags'"

go tool pprof -seconds 2 -top "$AGENT_URL/debug/pprof/profile" \
	>"$T/go" 2>"$T/go.err"
check "go tool pprof -seconds 2 .../debug/pprof/profile profiles PostgreSQL" \
	grep -qE 'PostgresMain|exec_simple_query|exec_bind_message|PortalRun|postgres' "$T/go"
kill "$AGENT_PID"
wait "$AGENT_PID"
check "the agent exits 0" test $? = 0
