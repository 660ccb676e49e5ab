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
#
# Use VMTOOLS_AGENT=PATH start_agent ... for another build of the agent.

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
