#!/usr/bin/env bash
# tests/integration/73-perf-api.sh - the perf backend through the REST API,
# real agent, real curl, real `go tool pprof`: {"Perf": null} gives a pprof
# of the burner (named postgres, the default target), GET shows the running
# Perf session, DELETE ends it early with what was collected, and the
# failures map to the documented status codes with perf's own words: no
# perf 503, perf refused by perf_event_paranoid 503, a perf.data we cannot
# read 500.  A request naming a perf binary is refused (422).
. "$(dirname "$0")/../lib/tap.sh"

r=$(need_root)
[ -z "$r" ] && r=$(need_cmd curl go perf python3)
[ -z "$r" ] && [ ! -x "$BUILD/programs/burn" ] && r="needs $BUILD/programs/burn (make tests)"
[ -z "$r" ] && ! perf record -e cpu-clock -o /dev/null -q -- true 2>/dev/null &&
	r="perf record -e cpu-clock does not work here"
if [ -n "$r" ]; then
	skip "the perf backend through the REST API" "$r"
	exit 0
fi
export HOME=$T/home PPROF_TMPDIR=$T/pprof TMPDIR=$T/tmp
mkdir -p "$HOME" "$PPROF_TMPDIR" "$TMPDIR"

"$BUILD/programs/burn" --comm postgres --threads 1 --seconds 300 >/dev/null &
BURN=$!
disown "$BURN"
at_exit "kill -9 $BURN"

# start_agent NAME PATH [ARG]...: serve on a free port with PATH (where perf
# is found) and the extra serve options ARG
start_agent() {
	local name=$1 path=$2 i
	shift 2
	PATH=$path "$VMTOOLS_AGENT" serve --no-setup --listen 127.0.0.1:0 \
		--mountpoint "$T/no-image" "$@" 2>"$T/$name.log" &
	PID=$!
	at_exit "kill -9 $PID"
	PORT=
	for ((i = 0; i < 100; i++)); do
		PORT=$(grep -o 'port [0-9]*' "$T/$name.log" 2>/dev/null | grep -o '[0-9]*$')
		[ -n "$PORT" ] && break
		sleep 0.05
	done
	URL=http://127.0.0.1:$PORT
}
stop_agent() { kill "$PID" && wait "$PID" 2>/dev/null; }

post() { # NAME BODY: status printed, body in $T/NAME.out
	curl -s -X POST -H 'Content-Type: application/json' -d "$2" \
		-o "$T/$1.out" -w '%{http_code}' "$URL/profile/cpu"
}

# --- the real perf -------------------------------------------------------
start_agent real "$PATH"
st=$(post ok '{"profiler": {"Perf": null}, "sampling_frequency": 99, "timeout_seconds": 2}')
check "POST {\"Perf\": null} answers 200 (got $st)" test "$st" = 200
check "go tool pprof reads it without a warning and finds burn_hot_a" \
	bash -c "go tool pprof -top '$T/ok.out' >'$T/ok.top' 2>'$T/ok.err' && [ ! -s '$T/ok.err' ] && grep -q burn_hot_a '$T/ok.top'"

post long '{"profiler": {"Perf": null}, "timeout_seconds": 30}' >"$T/long.status" &
POST=$!
sleep 2
curl -s "$URL/profile/cpu" >"$T/get.json"
check "GET shows the running Perf session and its samples so far" \
	bash -c "grep -q '\"running\": *true' '$T/get.json' && grep -q 'Perf' '$T/get.json' &&
		grep -Eq '\"samples\": *[1-9]' '$T/get.json'"
t0=$(date +%s)
del=$(curl -s -X DELETE -o "$T/del.json" -w '%{http_code}' "$URL/profile/cpu")
wait "$POST"
t1=$(date +%s)
check "DELETE stops it (200)" test "$del" = 200
check "the POST gets the profile collected until then, well before 30 s" \
	bash -c "[ \"\$(cat '$T/long.status')\" = 200 ] && [ $((t1 - t0)) -lt 10 ] &&
		go tool pprof -top '$T/long.out' 2>/dev/null | grep -q burn_hot"
check "no perf process of the agent is left" bash -c "! pgrep -P $PID -x perf"
check "nothing is left in \$TMPDIR" test -z "$(ls -A "$TMPDIR")"
st=$(post path '{"profiler": {"Perf": "/bin/sh"}}')
check "a request naming a perf binary is refused with 422 (got $st)" test "$st" = 422
stop_agent

# --- stand-in perfs --------------------------------------------------------
mkdir -p "$T/none" "$T/paranoid" "$T/garbage"
cat >"$T/paranoid/perf" <<'EOF'
#!/bin/sh
echo "Error: Access to performance monitoring and observability operations is limited." >&2
echo "Consider adjusting /proc/sys/kernel/perf_event_paranoid setting." >&2
exit 255
EOF
cat >"$T/garbage/perf" <<'EOF'
#!/bin/bash
while [ $# -gt 0 ]; do case $1 in --control) c=${2#fd:}; shift ;; -o) o=$2; shift ;; esac; shift; done
echo "not a perf.data file" >"$o"
read -r _ <&"${c%,*}"; echo ack >&"${c#*,}"
trap 'echo "fake perf: stopped" >&2; exit 0' INT
while :; do /bin/sleep 0.1; done
EOF
chmod +x "$T"/*/perf

start_agent none "$T/none"
st=$(post none '{"profiler": {"Perf": null}, "timeout_seconds": 1}')
check "no perf: 503 saying perf is not available (got $st)" \
	bash -c "[ '$st' = 503 ] && grep -q 'perf is not available' '$T/none.out'"
stop_agent
start_agent paranoid "$T/paranoid"
st=$(post paranoid '{"profiler": {"Perf": null}, "timeout_seconds": 1}')
check "perf refused by perf_event_paranoid: 503 with perf's message (got $st)" \
	bash -c "[ '$st' = 503 ] && grep -q 'perf_event_paranoid' '$T/paranoid.out'"
stop_agent
start_agent garbage "$T/garbage"
st=$(post garbage '{"profiler": {"Perf": null}, "timeout_seconds": 1}')
check "a perf.data we cannot read: 500 naming the problem (got $st)" \
	bash -c "[ '$st' = 500 ] && grep -q 'PERFILE2' '$T/garbage.out' && grep -q 'fake perf: stopped' '$T/garbage.out'"
st=$(post garbage2 '{"profiler": {"BccProfile": null}, "timeout_seconds": 1}')
check "the eBPF backend still answers 200 afterwards (got $st)" test "$st" = 200
stop_agent
check "nothing is left in \$TMPDIR after the failures" test -z "$(ls -A "$TMPDIR")"

# --perf PATH, fixed at start-up, wins over PATH; a relative one is refused.
start_agent override "$PATH" --perf "$T/paranoid/perf"
st=$(post override '{"profiler": {"Perf": null}, "timeout_seconds": 1}')
check "serve --perf PATH runs that perf, not PATH's (got $st)" \
	bash -c "[ '$st' = 503 ] && grep -q 'perf_event_paranoid' '$T/override.out' &&
		grep -q 'perf backend runs $T/paranoid/perf' '$T/override.log'"
stop_agent
"$VMTOOLS_AGENT" serve --no-setup --perf perf >"$T/rel.out" 2>&1
st=$?
check "serve --perf with a relative path exits 2 naming it (got $st)" \
	bash -c "[ $st = 2 ] && grep -q \"\\--perf 'perf' must be an absolute path\" '$T/rel.out'"
