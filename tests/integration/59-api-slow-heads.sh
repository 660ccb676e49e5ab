#!/usr/bin/env bash
# tests/integration/59-api-slow-heads.sh - slow request heads do not take
# the REST API (tests/lib/slow-heads.py: 80 connections from 127.0.0.1,
# each sending a header byte a second for 15 s and reopened when closed):
#   - from nobody: every connection is answered 403 and closed by the
#     agent at its opening, and root's /healthz, asked every 0.5 s
#     meanwhile, answers 200 every time (9 of 12 such probes failed when
#     every local client shared the loopback address's 64 slots, held
#     until a 10 s deadline);
#   - from root, who may use the API: every slow connection is closed by
#     the agent, at the request deadline (5 s by default) or earlier when
#     its slot goes to a newer connection, and root's /healthz probes
#     answer 200 every time.
# The probes' times and the slow connections' lifetimes are diagnostics.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/agent.sh"

skip_unless "slow request heads against the REST API" "$(need_root)" \
	"$(need_cmd curl python3 runuser)"
id nobody >/dev/null 2>&1 || skip_unless "slow request heads" "needs the user nobody"

H=$T/h
chmod 755 "$T"
mkdir "$H"
cp "$SRC/tests/lib/slow-heads.py" "$H/"
chmod -R a+rX "$H"

# probe OUT: root's GET /healthz every 0.5 s for 15 s, "STATUS SECONDS"
# a line.
probe() {
	local end=$((SECONDS + 15))
	while [ $SECONDS -lt $end ]; do
		curl -s -o /dev/null -w '%{http_code} %{time_total}\n' --max-time 5 \
			"$AGENT_URL/healthz"
		sleep 0.5
	done >"$1"
}
# all_answered OUT: every probe got 200 (and there were some).
all_answered() {
	[ "$(wc -l <"$1")" -ge 10 ] && ! grep -qv '^200 ' "$1"
}
# times OUT: the probes' times and how many did not get 200, as a
# diagnostic line.
times() {
	sort -k2 -n "$1" | awk '{ t[NR] = $2; if ($1 != 200) bad++ } END {
		printf "%d probes, %d without 200: min %.1f ms, median %.1f ms, max %.1f ms\n",
			NR, bad, t[1] * 1000, t[int((NR + 1) / 2)] * 1000, t[NR] * 1000 }'
}
# closed_all OUT: the helper's counts say every connection it opened was
# closed by the agent, none left open.
closed_all() {
	python3 - "$@" <<'PY'
import re, sys
line = open(sys.argv[1]).readline()
m = re.match(r"opened (\d+) closed_by_agent (\d+) still_open (\d+) answered (\d+) status=(\S+)", line)
assert m, line
opened, closed, still, answered = map(int, m.groups()[:4])
assert opened >= 80 and closed == opened and still == 0, line
if len(sys.argv) > 2:
    assert answered == opened and m.group(5) == "403:%d" % opened, line
PY
}

# From nobody.
start_agent nobody --no-setup
run_as nobody "$H" python3 "$H/slow-heads.py" "$AGENT_PORT" --count 80 \
	--seconds 15 >"$T/nobody.out" 2>&1 &
SLOW=$!
sleep 1
probe "$T/nobody.probes"
wait "$SLOW"
check "while nobody holds 80 slow heads, every /healthz of root answers 200" \
	all_answered "$T/nobody.probes"
times "$T/nobody.probes" | diag
check "each of nobody's connections was answered 403 and closed by the agent" \
	closed_all "$T/nobody.out" 403
diag "$T/nobody.out"
stop_agent

# From root.
start_agent root --no-setup
python3 "$H/slow-heads.py" "$AGENT_PORT" --count 80 --seconds 15 \
	>"$T/root.out" 2>&1 &
SLOW=$!
sleep 1
probe "$T/root.probes"
wait "$SLOW"
check "while root holds 80 slow heads, every /healthz of root answers 200" \
	all_answered "$T/root.probes"
times "$T/root.probes" | diag
check "each slow connection was closed by the agent" closed_all "$T/root.out"
diag "$T/root.out"
check "the log says those closed at the deadline (5 s by default)" \
	grep -q -- '- /healthz 0 .*client=127.0.0.1 uid=0 (closed: the request did not arrive whole within 5 s)' "$AGENT_LOG"
check "and those whose slot went to a newer connection" \
	grep -q -- '- /healthz 0 .*client=127.0.0.1 uid=0 (closed: waiting longest, its slot went to another)' "$AGENT_LOG"
stop_agent
