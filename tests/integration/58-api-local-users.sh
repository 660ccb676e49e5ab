#!/usr/bin/env bash
# tests/integration/58-api-local-users.sh - who may use the REST API from
# inside the machine, with real curl run as root and as nobody (run_as):
#   - nobody's GET /profile/cpu, /healthz and /metrics, POST and DELETE
#     are answered 403 with the sentence saying who may and how to let a
#     user in, at the connection's opening: the agent logs the refusal and
#     no request of nobody's (its head is never read); root's are answered;
#   - while root's profile runs, nobody's DELETE is refused and the
#     profile runs to its end (it ended root's profile);
#   - a connection to the machine's own non-loopback address (when it has
#     one) and to [::1] is local too: nobody refused, root answered;
#   - --allow-user nobody lets nobody in; --allow-user naming no user exits
#     2 with a sentence;
#   - with --auth-token-file the token is still wanted (401 without it,
#     200 with it from root), and nobody is refused even with the token.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/agent.sh"

skip_unless "the REST API from inside the machine" "$(need_root)" \
	"$(need_cmd curl runuser)"
id nobody >/dev/null 2>&1 || skip_unless "the API from inside the machine" "needs the user nobody"
NOBODY=$(id -u nobody)

# as_nobody CURL_ARG...: curl run as nobody; prints the status, the body
# in $T/nobody.out.
as_nobody() {
	run_as nobody / curl -s -w '\n%{http_code}' "$@" >"$T/nobody.raw"
	tail -n 1 "$T/nobody.raw"
	head -n -1 "$T/nobody.raw" >"$T/nobody.out"
}
# refused DESC CURL_ARG...: nobody's request gets 403 and the sentence.
refused() {
	local desc=$1 st
	shift
	st=$(as_nobody "$@")
	if [ "$st" = 403 ] && grep -q "only root may use this agent, and this connection is from uid $NOBODY: .*--allow-user $NOBODY" "$T/nobody.out"; then
		ok "$desc"
	else
		not_ok "$desc: got $st"
		diag "$T/nobody.out"
	fi
}
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
# logged PATTERN: the agent's log has a line matching PATTERN within 2 s
# (a request is logged once it has been answered).
logged() {
	for _ in $(seq 40); do
		grep -q -- "$1" "$AGENT_LOG" && return 0
		sleep 0.05
	done
	return 1
}

start_agent users --no-setup
refused "nobody's GET /profile/cpu: 403 saying who may and how to let a user in" "$AGENT_URL/profile/cpu"
refused "nobody's GET /healthz: 403" "$AGENT_URL/healthz"
refused "nobody's GET /metrics: 403" "$AGENT_URL/metrics"
refused "nobody's POST /profile/cpu: 403" -X POST -d '{"timeout_seconds": 1}' "$AGENT_URL/profile/cpu"
refused "nobody's DELETE /profile/cpu: 403" -X DELETE "$AGENT_URL/profile/cpu"
check "root's GET /healthz and GET /profile/cpu: 200" \
	bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' '$AGENT_URL/healthz') = 200 ] &&
		[ \$(curl -s -o /dev/null -w '%{http_code}' '$AGENT_URL/profile/cpu') = 200 ]"
check "the agent logs each refusal with the user" \
	test "$(grep -c "refused a connection from uid $NOBODY at 127.0.0.1" "$AGENT_LOG")" = 5
check "and no request of nobody's: refused before its head was read" \
	bash -c "! grep -q ' uid=$NOBODY' '$AGENT_LOG'"
check "root's requests are logged with their user" logged 'GET /healthz 200 .* client=127.0.0.1 uid=0$'

# nobody's DELETE does not end root's running profile.
if [ -z "$(need_bpf)" ]; then
	sleep 60 &
	SLEEPER=$!
	at_exit "kill $SLEEPER"
	agent_post profile/cpu "{\"timeout_seconds\": 3, \"targets\": {\"pids\": [$SLEEPER]}}" \
		"$T/root.pb" >"$T/root.status" &
	POST=$!
	if agent_running cpu; then
		refused "nobody's DELETE while root's profile runs: 403" -X DELETE "$AGENT_URL/profile/cpu"
		check "root's profile is still running after it" agent_running cpu
	else
		not_ok "root's profile started"
		diag "$AGENT_LOG"
	fi
	wait "$POST"
	check "root's profile ran to its end: 200, outcome=completed" \
		bash -c "[ \$(cat '$T/root.status') = 200 ] && grep -q 'session .*outcome=completed' '$AGENT_LOG' &&
			! grep -q 'outcome=stopped' '$AGENT_LOG'"
else
	skip "nobody's DELETE does not end root's profile" "$(need_bpf)"
fi
stop_agent

# The machine's own address, beyond loopback: still from inside.
ADDR=$(ip -4 -o addr show scope global 2>/dev/null | awk '{ sub(/\/.*/, "", $4); print $4; exit }')
if [ -n "$ADDR" ]; then
	start_agent wide --no-setup --listen 0.0.0.0:0
	refused "nobody through $ADDR, the machine's own address: 403" "http://$ADDR:$AGENT_PORT/profile/cpu"
	check "root through $ADDR: 200" test "$(code "http://$ADDR:$AGENT_PORT/healthz")" = 200
	check "and logged as uid 0" logged "GET /healthz 200 .* client=$ADDR uid=0\$"
	stop_agent
else
	skip "the machine's own address is from inside" "no global IPv4 address"
fi
if ip -6 addr show dev lo 2>/dev/null | grep -q '::1/128'; then
	start_agent v6 --no-setup --listen '[::1]:0'
	refused "nobody through [::1]: 403" "$AGENT_URL/profile/cpu"
	check "root through [::1]: 200" test "$(code "$AGENT_URL/healthz")" = 200
	stop_agent
else
	skip "[::1] is from inside" "no IPv6 loopback"
fi

start_agent allowed --no-setup --allow-user nobody
check "--allow-user nobody lets nobody in" test "$(as_nobody "$AGENT_URL/healthz")" = 200
stop_agent
"$VMTOOLS_AGENT" serve --no-setup --listen 127.0.0.1:0 \
	--allow-user no-such-user-c27 >"$T/nouser.out" 2>&1
check_said $? 2 "$T/nouser.out" "--allow-user naming no user: exit 2 with a sentence" \
	"--allow-user 'no-such-user-c27' is not a user of this machine"

# The token still rules, for root too; it does not let nobody in.
openssl rand -hex 16 >"$T/token" 2>/dev/null || echo c27-token-0123456789 >"$T/token"
chmod 600 "$T/token"
start_agent token --no-setup --auth-token-file "$T/token"
check "with a token: root without it 401, with it 200" \
	bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' '$AGENT_URL/healthz') = 401 ] &&
		[ \$(curl -s -o /dev/null -w '%{http_code}' -H \"Authorization: Bearer \$(cat '$T/token')\" '$AGENT_URL/healthz') = 200 ]"
refused "with a token: nobody sending it is still refused (403)" \
	-H "Authorization: Bearer $(cat "$T/token")" "$AGENT_URL/healthz"
stop_agent
