#!/usr/bin/env bash
# tests/integration/53-api-leaks.sh - 100 profiling sessions through the
# REST API, ended every way a session ends (DELETE, the client hanging up,
# its time running out), on the agent built with AddressSanitizer
# (make check builds it in $BUILD/asan); LeakSanitizer must find nothing
# when the agent exits on SIGTERM.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/agent.sh"

AGENT=${VMTOOLS_AGENT_ASAN:-$BUILD/asan/vmtools-agent}
asan=
[ -x "$AGENT" ] ||
	asan="needs the ASan build of the agent ($AGENT: make BUILD=$BUILD/asan SANITIZE=1 all, done by make check)"
skip_unless "no leak across 100 sessions" "$(need_bpf)" "$(need_cmd curl)" \
	"$(need_burn)" "$asan"

burn_bg postgres 600

VMTOOLS_AGENT=$AGENT start_agent agent ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 --no-setup

running() { curl -s "$AGENT_URL/profile/cpu" | grep -q '"state":"running"'; }
idle() {
	for ((j = 0; j < 100; j++)); do
		curl -s "$AGENT_URL/profile/cpu" | grep -q '"running":false' && return 0
		sleep 0.05
	done
	return 1
}

bad=0
for i in $(seq 100); do
	case $((i % 10)) in
	0) # runs out its time
		st=$(curl -s -o /dev/null -w '%{http_code}' -X POST \
			-d '{"timeout_seconds": 1}' "$AGENT_URL/profile/cpu")
		[ "$st" = 200 ] || bad=$((bad + 1))
		;;
	[1-4]) # the client hangs up while its profile runs (one gone
		# before its request is read would start no session at all)
		curl -s -o /dev/null -X POST -d '{"timeout_seconds": 30}' \
			"$AGENT_URL/profile/cpu" &
		post=$!
		for ((j = 0; j < 100; j++)); do
			running && break
			sleep 0.02
		done
		kill "$post"
		wait "$post"
		idle || bad=$((bad + 1))
		;;
	*) # stopped by DELETE, partial profile
		curl -s -o "$T/p" -w '%{http_code}' -X POST \
			-d '{"timeout_seconds": 30, "archive": true}' \
			"$AGENT_URL/profile/cpu" >"$T/st" &
		post=$!
		for ((j = 0; j < 100; j++)); do
			running && break
			sleep 0.02
		done
		curl -s -o /dev/null -X DELETE "$AGENT_URL/profile/cpu"
		wait "$post"
		[ "$(cat "$T/st")" = 200 ] || bad=$((bad + 1))
		;;
	esac
done
check "100 sessions ended as asked ($bad did not)" test "$bad" = 0
curl -s "$AGENT_URL/metrics" >"$T/metrics"
check "metrics: 100 sessions (10 completed, 40 client_gone, 50 stopped)" \
	bash -c "grep -q 'outcome=\"completed\"} 10$' '$T/metrics' &&
		grep -q 'outcome=\"client_gone\"} 40$' '$T/metrics' &&
		grep -q 'outcome=\"stopped\"} 50$' '$T/metrics'"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID"
st=$?
check "the ASan agent exits 0 on SIGTERM" test "$st" = 0
if grep -q 'ERROR: LeakSanitizer\|ERROR: AddressSanitizer\|runtime error' "$T/agent.log"; then
	not_ok "no leak or memory error across 100 sessions"
	grep -A 12 'ERROR:\|runtime error' "$T/agent.log" | diag
else
	ok "no leak or memory error across 100 sessions (LeakSanitizer)"
fi
