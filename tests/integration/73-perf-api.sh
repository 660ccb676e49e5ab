#!/usr/bin/env bash
# tests/integration/73-perf-api.sh - the perf backend through the REST API,
# real agent, real curl, real `go tool pprof`: {"Perf": null} gives a pprof
# of the burner (named postgres, the default target), GET shows the running
# Perf session, DELETE ends it early with what was collected, and the
# failures map to the documented status codes with perf's own words: no
# perf 503, perf refused by perf_event_paranoid 503, a perf.data we cannot
# read 500.  A request naming a perf binary is refused (422).
# The stand-ins are tests/lib/fake-perf.sh's; the eBPF backend still answers
# after each failure; serve --perf PATH wins over PATH, and a relative one
# is refused.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/agent.sh"
. "$SRC/tests/lib/fake-perf.sh"

skip_unless "the perf backend through the REST API" "$(need_perf)" \
	"$(need_cmd curl go python3)" "$(need_burn)"
pprof_home
export TMPDIR=$T/tmp
mkdir -p "$TMPDIR"

burn_bg postgres 300

# serve NAME PATH [ARG]...: an agent whose perf is looked up in PATH, with
# no tools image (nothing at the mountpoint)
serve() {
	local name=$1 path=$2
	shift 2
	start_agent "$name" PATH="$path" --no-setup --mountpoint "$T/no-image" "$@"
}

# --- the real perf -------------------------------------------------------
serve real "$PATH"
st=$(agent_post profile/cpu '{"profiler": {"Perf": null}, "sampling_frequency": 99, "timeout_seconds": 2}' "$T/ok.out")
check "POST {\"Perf\": null} answers 200 (got $st)" test "$st" = 200
check "go tool pprof reads it without a warning and finds burn_hot_a" \
	bash -c "go tool pprof -top '$T/ok.out' >'$T/ok.top' 2>'$T/ok.err' && [ ! -s '$T/ok.err' ] && grep -q burn_hot_a '$T/ok.top'"

agent_post profile/cpu '{"profiler": {"Perf": null}, "timeout_seconds": 30}' "$T/long.out" >"$T/long.status" &
POST=$!
sleep 2
curl -s "$AGENT_URL/profile/cpu" >"$T/get.json"
check "GET shows the running Perf session and its samples so far" \
	bash -c "grep -q '\"running\": *true' '$T/get.json' && grep -q 'Perf' '$T/get.json' &&
		grep -Eq '\"samples\": *[1-9]' '$T/get.json'"
t0=$(date +%s)
del=$(curl -s -X DELETE -o "$T/del.json" -w '%{http_code}' "$AGENT_URL/profile/cpu")
wait "$POST"
t1=$(date +%s)
check "DELETE stops it (200)" test "$del" = 200
check "the POST gets the profile collected until then, well before 30 s" \
	bash -c "[ \"\$(cat '$T/long.status')\" = 200 ] && [ $((t1 - t0)) -lt 10 ] &&
		go tool pprof -top '$T/long.out' 2>/dev/null | grep -q burn_hot"
check "no perf process of the agent is left" bash -c "! pgrep -P $AGENT_PID -x perf"
check "nothing is left in \$TMPDIR" test -z "$(ls -A "$TMPDIR")"
st=$(agent_post profile/cpu '{"profiler": {"Perf": "/bin/sh"}}' "$T/path.out")
check "a request naming a perf binary is refused with 422 (got $st)" test "$st" = 422
stop_agent

# --- stand-in perfs --------------------------------------------------------
make_fake_perfs
serve none "$T/none"
st=$(agent_post profile/cpu '{"profiler": {"Perf": null}, "timeout_seconds": 1}' "$T/none.out")
check "no perf: 503 saying perf is not available (got $st)" \
	bash -c "[ '$st' = 503 ] && grep -q 'perf is not available' '$T/none.out'"
stop_agent
serve paranoid "$T/paranoid"
st=$(agent_post profile/cpu '{"profiler": {"Perf": null}, "timeout_seconds": 1}' "$T/paranoid.out")
check "perf refused by perf_event_paranoid: 503 with perf's message (got $st)" \
	bash -c "[ '$st' = 503 ] && grep -q 'perf_event_paranoid' '$T/paranoid.out'"
stop_agent
serve garbage "$T/garbage"
st=$(agent_post profile/cpu '{"profiler": {"Perf": null}, "timeout_seconds": 1}' "$T/garbage.out")
check "a perf.data we cannot read: 500 naming the problem (got $st)" \
	bash -c "[ '$st' = 500 ] && grep -q 'PERFILE2' '$T/garbage.out' && grep -q 'fake perf: stopped' '$T/garbage.out'"
st=$(agent_post profile/cpu '{"profiler": {"BccProfile": null}, "timeout_seconds": 1}' "$T/garbage2.out")
check "the eBPF backend still answers 200 afterwards (got $st)" test "$st" = 200
stop_agent
check "nothing is left in \$TMPDIR after the failures" test -z "$(ls -A "$TMPDIR")"

# --perf PATH, fixed at start-up, wins over PATH; a relative one is refused.
serve override "$PATH" --perf "$T/paranoid/perf"
st=$(agent_post profile/cpu '{"profiler": {"Perf": null}, "timeout_seconds": 1}' "$T/override.out")
check "serve --perf PATH runs that perf, not PATH's (got $st)" \
	bash -c "[ '$st' = 503 ] && grep -q 'perf_event_paranoid' '$T/override.out' &&
		grep -q 'perf backend runs $T/paranoid/perf' '$T/override.log'"
stop_agent
"$VMTOOLS_AGENT" serve --no-setup --perf perf >"$T/rel.out" 2>&1
st=$?
check "serve --perf with a relative path exits 2 naming it (got $st)" \
	bash -c "[ $st = 2 ] && grep -q \"\\--perf 'perf' must be an absolute path\" '$T/rel.out'"
