# shellcheck shell=bash
# tests/lib/agent.sh - a real `vmtools-agent serve` for a test or a
# benchmark, sourced after tap.sh (it uses $T, at_exit, not_ok and diag).
#
#   start_agent NAME [VAR=VALUE]... [ARG]...
#       runs `$VMTOOLS_AGENT serve --listen 127.0.0.1:0 ARG...` in the
#       background with the environment VAR=VALUE added (PATH=DIR: where it
#       looks for perf), its stderr in $T/NAME.log, and returns once
#       /healthz answers.  Sets AGENT_PID, AGENT_PORT, AGENT_URL and
#       AGENT_LOG.  An --listen among ARG wins ([::1]:0, 0.0.0.0:0); the
#       port is the one the agent says it took.  When the agent does not
#       answer within 20 s (or exits), prints `not ok` with its log and
#       exits the script: nothing after it could run.  The agent is killed
#       when the script ends, whatever happens.
#   stop_agent       SIGTERM to the agent started last, and wait for it;
#                    returns the agent's exit status
#   agent_post PATH BODY OUT [CURL_ARG]...
#                    POST the JSON BODY, sent byte for byte, to
#                    $AGENT_URL/PATH (profile/cpu, profile/offcpu ...),
#                    the answer's body in OUT; prints the status code (000:
#                    no answer).  CURL_ARGs go to curl: -D FILE for the
#                    headers, --max-time S, -S to say why on stderr, -w
#                    FORMAT for more than the status code
#   agent_running KIND  wait up to 4 s for GET /profile/KIND to say a
#                    profile is running; fails when none does
#   agent_health FIELD  one field of GET /healthz, dotted (unwind.builds);
#                    empty when there is none
#   agent_warmed     wait up to 60 s for the warmer to have looked at the
#                    targets three times, the last two finding nothing new
#                    (/healthz's warm.binaries unchanged); fails otherwise
#
# Use VMTOOLS_AGENT=PATH start_agent ... for another build of the agent;
# AGENT_URL=URL agent_post ... for an agent started otherwise (in a VM).

start_agent() {
	local name=$1 env=() host=127.0.0.1 prev= arg code i
	shift
	while [[ ${1:-} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do
		env+=("$1")
		shift
	done
	for arg; do
		[ "$prev" = --listen ] && host=${arg%:*}
		prev=$arg
	done
	AGENT_LOG=$T/$name.log
	env "${env[@]}" "$VMTOOLS_AGENT" serve --listen 127.0.0.1:0 "$@" \
		2>"$AGENT_LOG" &
	AGENT_PID=$!
	at_exit "kill -9 $AGENT_PID"
	AGENT_PORT= AGENT_URL=
	for ((i = 0; i < 400; i++)); do
		AGENT_PORT=$(grep -o 'port [0-9]*' "$AGENT_LOG" 2>/dev/null | grep -o '[0-9]*$')
		if [ -n "$AGENT_PORT" ]; then
			AGENT_URL=http://$host:$AGENT_PORT
			code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$AGENT_URL/healthz")
			[ "$code" != 000 ] && return 0
		fi
		kill -0 "$AGENT_PID" 2>/dev/null || break
		sleep 0.05
	done
	not_ok "vmtools-agent serve $* ($name) did not start answering /healthz"
	diag "$AGENT_LOG"
	exit 1
}

stop_agent() {
	kill "$AGENT_PID"
	wait "$AGENT_PID" 2>/dev/null
}

agent_post() {
	local path=$1 body=$2 out=$3
	shift 3
	curl -s -X POST -H 'Content-Type: application/json' --data-binary "$body" \
		-o "$out" -w '%{http_code}' "$@" "$AGENT_URL/$path"
}

agent_running() {
	for _ in $(seq 200); do
		curl -s "$AGENT_URL/profile/$1" | grep -q '"state": *"running"' && return 0
		sleep 0.02
	done
	return 1
}

agent_health() {
	curl -s "$AGENT_URL/healthz" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    d = d.get(k) if isinstance(d, dict) else None
print("" if d is None else d)' "$1"
}

agent_warmed() {
	local n p last=-1 i
	for ((i = 0; i < 600; i++)); do
		n=$(agent_health warm.binaries)
		p=$(agent_health warm.passes)
		[ -n "$n" ] && [ "$n" = "$last" ] && [ "${p:-0}" -ge 3 ] && return 0
		[ -n "$n" ] && [ "${p:-0}" -ge 1 ] && last=$n
		sleep 0.1
	done
	return 1
}
