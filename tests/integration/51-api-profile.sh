#!/usr/bin/env bash
# tests/integration/51-api-profile.sh - profiles through the REST API, with
# the real agent (eBPF engine) on 127.0.0.1, real curl and `go tool pprof`,
# and tests/programs/burn as the workload (named postgres, so the default
# targets sample it): 200 with each body kind, GET/DELETE while a POST
# runs, 409, DELETE's partial profile, the client hanging up, 50 concurrent
# POSTs, /debug/pprof/profile for `go tool pprof -seconds 2`, SIGTERM in
# the middle of a profile.
# No BPF program is left loaded at the end.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/agent.sh"

skip_unless "profiling through the REST API" "$(need_bpf)" \
	"$(need_cmd curl go python3 bpftool gzip)" "$(need_burn)"
pprof_home

burn_bg postgres 300

# pprof_has FILE FUNCTION: go tool pprof reads FILE without a warning and
# FUNCTION is in it.
pprof_has() {
	go tool pprof -top "$1" >"$T/top" 2>"$T/top.err" &&
		! grep -qi 'warn\|error' "$T/top.err" &&
		grep -q "$2" "$T/top"
}

start_agent main --no-setup

# 200: the contract's example, as developers send it.
st=$(agent_post profile/cpu '{"profiler": {"BccProfile": null}, "sampling_frequency": 99, "timeout_seconds": 2, "archive": false}' "$T/plain.out" -D "$T/plain.h")
check "POST (contract example): 200" test "$st" = 200
check "profile: application/octet-stream" \
	grep -qi '^Content-Type: application/octet-stream' "$T/plain.h"
check "profile: attachment profile.pb" \
	grep -qi '^Content-Disposition: attachment; filename="profile.pb"' "$T/plain.h"
check "go tool pprof reads it and finds burn_hot_a" \
	pprof_has "$T/plain.out" burn_hot_a
check "one log line for the session (profiler, outcome, samples)" \
	grep -qE 'session profiler=BccProfile frequency=99 seconds=2 outcome=completed status=200 samples=[1-9]' \
	"$T/main.log"
check "one log line for the request with its samples" \
	grep -qE 'POST /profile/cpu 200 [0-9.]+ms samples=[1-9]' "$T/main.log"

st=$(agent_post profile/cpu '{"timeout_seconds": 1, "archive": true}' "$T/gz.out" -D "$T/gz.h")
check "archive: 200, application/gzip, profile.pb.gz" \
	bash -c "[ $st = 200 ] && grep -qi '^Content-Type: application/gzip' '$T/gz.h' &&
		grep -qi 'filename=\"profile.pb.gz\"' '$T/gz.h' && gzip -t '$T/gz.out'"
check "archive: go tool pprof reads the gzipped profile" \
	pprof_has "$T/gz.out" burn_hot

st=$(agent_post profile/cpu '{"timeout_seconds": 1, "format": "folded"}' "$T/folded.out" -D "$T/folded.h")
check "folded: 200, text/plain, burn's stacks" \
	bash -c "[ $st = 200 ] && grep -qi '^Content-Type: text/plain' '$T/folded.h' &&
		grep -q 'burn_hot_a' '$T/folded.out'"

st=$(agent_post profile/cpu "{\"timeout_seconds\": 1, \"targets\": {\"pids\": [$BURN_PID]}}" "$T/pids.out")
check "targets.pids: 200 with the process's functions" \
	bash -c "[ $st = 200 ] && go tool pprof -top '$T/pids.out' 2>/dev/null | grep -q burn_hot"

st=$(agent_post profile/cpu '{"timeout_seconds": 1, "targets": {"pids": [4194303]}}' "$T/gone.out")
check "targets.pids naming no running process: 422 naming the pid" \
	bash -c "[ $st = 422 ] && grep -q '4194303' '$T/gone.out'"

# While a POST runs: GET and DELETE answer at once; a second POST is 409;
# DELETE ends the POST with what was collected.
agent_post profile/cpu '{"timeout_seconds": 30}' "$T/long.out" >"$T/long.status" &
LONG=$!
sleep 1.5
s=$(date +%s%N)
curl -s -o "$T/status" "$AGENT_URL/profile/cpu"
get_ms=$((($(date +%s%N) - s) / 1000000))
check "GET during a POST answers at once (${get_ms} ms)" test "$get_ms" -lt 1000
check "GET: running, profiler, frequency, started, elapsed, requested, samples" \
	python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["running"] is True and s["profiler"] == "BccProfile", s
assert s["sampling_frequency"] == 99 and s["timeout_seconds"] == 30, s
assert s["started"].endswith("Z") and 0.5 < s["elapsed_seconds"] < 30, s
assert s["samples"] > 0, s
' "$T/status"
st=$(agent_post profile/cpu '{"timeout_seconds": 1}' "$T/second.out")
check "second POST while one runs: 409 with a JSON error" \
	bash -c "[ $st = 409 ] && grep -q '\"error\":\"another profile is running' '$T/second.out'"
s=$(date +%s%N)
st=$(curl -s -X DELETE -o "$T/delete" -w '%{http_code}' "$AGENT_URL/profile/cpu")
check "DELETE of a running profile: 200 JSON, stopped" \
	bash -c "[ $st = 200 ] && grep -q '\"stopped\":true' '$T/delete'"
wait "$LONG"
stop_ms=$((($(date +%s%N) - s) / 1000000))
check "the stopped POST gets 200 soon after DELETE (${stop_ms} ms)" \
	bash -c "[ \$(cat '$T/long.status') = 200 ] && [ $stop_ms -lt 3000 ]"
check "the stopped POST's profile is partial (well under 30 s) and readable" \
	bash -c "go tool pprof -raw '$T/long.out' 2>/dev/null | grep -q burn_hot &&
		go tool pprof -top '$T/long.out' 2>/dev/null |
		awk '/^Duration:/ { d = \$2; sub(/s,?/, \"\", d); exit !(d + 0 < 10) }'"
check "412 again once it is over" \
	bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' -X DELETE '$AGENT_URL/profile/cpu') = 412 ]"

# The POST's client hangs up: the session ends and is freed.
curl -s -X POST -d '{"timeout_seconds": 30}' --max-time 1 -o /dev/null \
	"$AGENT_URL/profile/cpu"
sleep 0.5
check "client hang-up ends the session (GET: not running)" \
	bash -c "curl -s '$AGENT_URL/profile/cpu' | grep -q '\"running\":false'"
check "client hang-up is logged and counted" \
	bash -c "grep -q 'outcome=client_gone' '$T/main.log' &&
		curl -s '$AGENT_URL/metrics' | grep -q 'vmtools_sessions_total{outcome=\"client_gone\"} 1'"
st=$(agent_post profile/cpu '{"timeout_seconds": 1}' "$T/after.out")
check "a new POST works after the hang-up" test "$st" = 200

# 50 concurrent POSTs: exactly one 200 and 49 409s.
for i in $(seq 50); do
	curl -s -X POST -d '{"timeout_seconds": 5}' -o /dev/null \
		-w '%{http_code}\n' "$AGENT_URL/profile/cpu" >"$T/c.$i" &
done
wait_pids=$(jobs -p | grep -vx "$BURN_PID" | grep -vx "$AGENT_PID")
wait $wait_pids 2>/dev/null
n200=$(cat "$T"/c.* | grep -c '^200$')
n409=$(cat "$T"/c.* | grep -c '^409$')
check "50 concurrent POSTs: one 200 and 49 409 (got $n200 and $n409)" \
	bash -c "[ $n200 = 1 ] && [ $n409 = 49 ]"

# Go's convention: go tool pprof -seconds 2 against /debug/pprof/profile.
s=$(date +%s)
go tool pprof -seconds 2 -top "$AGENT_URL/debug/pprof/profile" \
	>"$T/goprof" 2>"$T/goprof.err"
st=$?
check "go tool pprof -seconds 2 http://127.0.0.1:PORT/debug/pprof/profile works" \
	bash -c "[ $st = 0 ] && grep -q burn_hot '$T/goprof' && ! grep -qi warn '$T/goprof.err'"
check "it asked for 2 seconds" \
	bash -c "grep -B1 'GET /debug/pprof/profile 200' '$T/main.log' | grep -q 'seconds=2 outcome=completed'"
check "/debug/pprof/profile?seconds=abc: 422 naming seconds" \
	bash -c "curl -s '$AGENT_URL/debug/pprof/profile?seconds=abc' | grep -q 'seconds must be a whole number'"

# The perf backend: a profile or a 503 saying what is missing.
st=$(agent_post profile/cpu '{"profiler": {"Perf": null}, "timeout_seconds": 1}' "$T/perf.out")
check "Perf: 200, or 503 with a JSON error (got $st)" \
	bash -c "[ $st = 200 ] || { [ $st = 503 ] && grep -q '\"error\"' '$T/perf.out'; }"

# --max-seconds bounds timeout_seconds.
stop_agent
burn_bg burn2 60
start_agent short --no-setup --max-seconds 2 --comm burn2
st=$(agent_post profile/cpu '{"timeout_seconds": 3}' "$T/max.out")
check "--max-seconds 2: timeout_seconds 3 is 422 (1 to 2)" \
	bash -c "[ $st = 422 ] && grep -q 'from 1 to 2' '$T/max.out'"
st=$(agent_post profile/cpu '{"timeout_seconds": 2}' "$T/comm.out")
go tool pprof -tags "$T/comm.out" >"$T/comm.tags" 2>&1
check "--comm burn2: a request without targets samples burn2, not postgres" \
	bash -c "[ $st = 200 ] && grep -q 'burn2' '$T/comm.tags' && ! grep -q 'postgres' '$T/comm.tags'"

# SIGTERM in the middle of a profile: the client gets what was collected,
# the agent exits 0 within a second, its BPF programs are gone.
stop_agent
start_agent term --no-setup
agent_post profile/cpu '{"timeout_seconds": 30}' "$T/term.out" >"$T/term.status" &
TERM_POST=$!
sleep 1.5
# The ids of the BPF programs the agent holds, from its fds' fdinfo.
progs=$(for fd in /proc/$AGENT_PID/fd/*; do
	[ "$(readlink "$fd")" = "anon_inode:bpf-prog" ] || continue
	awk '/^prog_id:/ { print $2 }' "/proc/$AGENT_PID/fdinfo/${fd##*/}"
done | sort -u | tr '\n' ' ')
check "the agent has a BPF program loaded while profiling" test -n "$progs"
s=$(date +%s%N)
kill -TERM "$AGENT_PID"
wait "$AGENT_PID"
st=$?
ms=$((($(date +%s%N) - s) / 1000000))
check "SIGTERM during a profile: exit 0 within a second ($ms ms)" \
	bash -c "[ $st = 0 ] && [ $ms -lt 1000 ]"
wait "$TERM_POST"
check "SIGTERM: the running POST still gets its profile (200)" \
	bash -c "[ \$(cat '$T/term.status') = 200 ] && go tool pprof -raw '$T/term.out' >/dev/null 2>&1"
left=
for id in $progs; do
	bpftool prog show id "$id" >/dev/null 2>&1 && left="$left $id"
done
check "no BPF program of the agent is left (ids:$progs)" test -z "$left"
check "SIGTERM is logged with the session's outcome" \
	grep -q 'outcome=shutdown status=200' "$T/term.log"
