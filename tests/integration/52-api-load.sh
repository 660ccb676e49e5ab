#!/usr/bin/env bash
# tests/integration/52-api-load.sh - a bounded load test of the REST API on
# loopback: four curl clients send a few thousand requests of mixed valid
# and invalid kinds (profiles that win or get 409, status, DELETE, 400,
# 413, 422, 404, 405, /healthz, /metrics) at once.  Afterwards the agent
# still answers correctly, and its open file descriptors and RSS are back
# near where they started.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/agent.sh"

skip_unless "REST API load test" "$(need_bpf)" "$(need_cmd curl python3)" \
	"$(need_burn)"
CLIENTS=4
ROUNDS=${LOAD_ROUNDS:-100} # x 12-13 requests x CLIENTS

burn_bg postgres 300

start_agent agent --no-setup

fds() { ls "/proc/$AGENT_PID/fd" | wc -l; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$AGENT_PID/status"; }
idle() {
	for ((i = 0; i < 100; i++)); do
		curl -s "$AGENT_URL/profile/cpu" | grep -q '"running":false' && return 0
		sleep 0.1
	done
	return 1
}

# Warm up every path once (a profile, a health probe) before the baseline.
curl -s -o /dev/null -X POST -d '{"timeout_seconds": 1}' "$AGENT_URL/profile/cpu"
curl -s -o /dev/null "$AGENT_URL/healthz"
curl -s -o /dev/null "$AGENT_URL/metrics"
fd0=$(fds)
rss0=$(rss_kb)

# One client's requests as a curl config: 13 kinds per round.
head -c 20000 /dev/zero | tr '\0' ' ' >"$T/big"
for c in $(seq "$CLIENTS"); do
	for r in $(seq "$ROUNDS"); do
		# A real profile now and then: each winner holds its client 1 s.
		[ $((r % 20)) = 1 ] && cat <<CFG
next
url = "$AGENT_URL/profile/cpu"
request = "POST"
data = "{\"timeout_seconds\": 1, \"sampling_frequency\": 49}"
CFG
		cat <<CFG
next
url = "$AGENT_URL/profile/cpu"
next
url = "$AGENT_URL/profile/cpu"
request = "POST"
data = "{\"timeout_seconds\": 1"
next
url = "$AGENT_URL/profile/cpu"
request = "POST"
data = "{\"sampling_frequency\": 1000000}"
next
url = "$AGENT_URL/profile/cpu"
request = "POST"
data = "{\"profiler\": {\"Perf\": \"/bin/sh\"}}"
next
url = "$AGENT_URL/profile/cpu"
request = "POST"
data-binary = "@$T/big"
next
url = "$AGENT_URL/no/such/path"
next
url = "$AGENT_URL/metrics"
request = "PUT"
next
url = "$AGENT_URL/metrics"
next
url = "$AGENT_URL/profile/cpu"
request = "DELETE"
next
url = "$AGENT_URL/debug/pprof/profile?seconds=0"
next
url = "$AGENT_URL/profile/cpu"
request = "PATCH"
next
url = "$AGENT_URL/profile/cpu"
CFG
		[ $((r % 20)) = 0 ] && printf 'next\nurl = "%s/healthz"\n' "$AGENT_URL"
	done | sed -e '1d' -e 's|^url = .*|&\noutput = "/dev/null"\nwrite-out = "%{http_code}\\n"|' >"$T/client$c.cfg"
done
s=$(date +%s%N)
for c in $(seq "$CLIENTS"); do
	curl -s -K "$T/client$c.cfg" >"$T/codes$c" 2>"$T/curl$c.err" &
done
wait $(jobs -p | grep -vx "$AGENT_PID" | grep -vx "$BURN_PID") 2>/dev/null
ms=$((($(date +%s%N) - s) / 1000000))
total=$(cat "$T"/codes* | wc -l)
sort "$T"/codes* | uniq -c | sort -rn >"$T/summary"
check "load: $total requests from $CLIENTS clients in ${ms} ms, all answered" \
	bash -c "[ $total -ge $((CLIENTS * ROUNDS * 12)) ] && ! grep -qw 000 '$T/summary'"
diag "$T/summary"
check "load: only the expected statuses (200 400 404 405 409 412 413 422)" \
	bash -c "! awk '{ print \$2 }' '$T/summary' | grep -vxE '200|400|404|405|409|412|413|422'"
check "load: profiles were taken and refused (200s and 409s)" \
	bash -c "grep -qw 409 '$T/summary' && grep -q 'outcome=completed\|outcome=stopped' '$T/agent.log'"

check "after the load: no profile left running" idle
check "after the load: a profile is 200" \
	bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{\"timeout_seconds\": 1}' '$AGENT_URL/profile/cpu') = 200 ]"
check "after the load: a bad field is 422" \
	bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{\"timeout_seconds\": 0}' '$AGENT_URL/profile/cpu') = 422 ]"
check "after the load: /metrics counts them all" \
	bash -c "curl -s '$AGENT_URL/metrics' | awk '/^vmtools_http_requests_total/ { n += \$2 } END { exit !(n >= $total) }'"
sleep 0.5
fd1=$(fds)
rss1=$(rss_kb)
check "file descriptors back where they were ($fd0 before, $fd1 after)" \
	test "$fd1" -le "$((fd0 + 2))"
check "RSS near where it was (${rss0} kB before, ${rss1} kB after)" \
	test "$rss1" -le "$((rss0 + 16384))"
kill "$AGENT_PID"
wait "$AGENT_PID"
check "exit 0 after the load" test $? = 0
