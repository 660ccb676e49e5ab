#!/usr/bin/env bash
# tests/integration/50-api-errors.sh - `vmtools-agent serve` answers every
# row of docs/api.md's tables that needs no profile: 400 naming the
# position, 413, 422 naming the field, 404, 405 with Allow, 412, 401 with
# --auth-token-file, GET status, /healthz, /metrics; bad flags; SIGTERM;
# idle clients cannot pin the service.  Real agent on 127.0.0.1, real curl.
# Body limits are checked too.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/agent.sh"

skip_unless "REST API error paths" "$(need_cmd curl python3)"

# req EXPECTED-STATUS NEEDLE DESC CURL-ARGS...: the status and the body.
req() {
	local want=$1 needle=$2 desc=$3 got
	shift 3
	got=$(curl -s -o "$T/body" -w '%{http_code}' "$@")
	if [ "$got" = "$want" ] && grep -qF -- "$needle" "$T/body"; then
		ok "$desc"
	else
		not_ok "$desc: status $got (want $want), body lacks '$needle'"
		diag "$T/body"
	fi
}

start_agent main --no-setup
ok "serve starts without a disk (--no-setup) and says its port"

req 200 '"running":false' "GET /profile/cpu when idle: running false" \
	"$AGENT_URL/profile/cpu"
req 412 '"error":"no profile is running' "DELETE with nothing running: 412" \
	-X DELETE "$AGENT_URL/profile/cpu"

# 400: not JSON, with the position.
req 400 'at byte 20' "malformed JSON: 400 naming the position" -X POST \
	-H 'Content-Type: application/json' -d '{"timeout_seconds": ]' \
	"$AGENT_URL/profile/cpu"
req 400 'ends at byte 21' "truncated JSON: 400 saying where it ends" -X POST \
	-d '{"timeout_seconds": 5' "$AGENT_URL/profile/cpu"
req 400 'not valid JSON' "text body: 400" -X POST -d 'profile please' \
	"$AGENT_URL/profile/cpu"

# 422: each wrong field named, with what is allowed.
while IFS='|' read -r body needle; do
	req 422 "$needle" "422 for $body" -X POST \
		-H 'Content-Type: application/json' -d "$body" \
		"$AGENT_URL/profile/cpu"
done <<'ROWS'
{"sampling_frequency": -1}|sampling_frequency must be a whole number from 1 to 1000
{"sampling_frequency": 0}|sampling_frequency
{"sampling_frequency": 1000000}|got 1000000
{"sampling_frequency": "99"}|sampling_frequency
{"sampling_frequency": 99.5}|sampling_frequency
{"timeout_seconds": -1}|timeout_seconds must be a whole number from 1 to 60
{"timeout_seconds": 0}|timeout_seconds
{"timeout_seconds": 1000000}|timeout_seconds
{"timeout_seconds": "5"}|timeout_seconds
{"timeout_seconds": 2.5}|timeout_seconds
{"archive": "yes"}|archive must be true or false
{"profiler": {"Foo": null}}|profiler must be {\"BccProfile\": null}
{"profiler": "Foo"}|profiler must be
{"profiler": {"Perf": "/bin/sh"}}|never runs a binary named by a request
{"profiler": {"BccProfile": "/tmp/x"}}|profiler.BccProfile must be null
{"binary": "/bin/sh"}|unknown field \"binary\"
{"format": "png"}|format must be pprof, folded or svg
{"targets": {"comm": ["a-very-long-command-name"]}}|targets.comm[0]
{"targets": {"pids": [-5]}}|targets.pids[0]
[1, 2, 3]|must be a JSON object
ROWS

# 413: by Content-Length at once, and for a chunked body.
head -c 100000 /dev/zero | tr '\0' ' ' >"$T/big"
req 413 'larger than 8192 bytes' "body over the limit: 413" -X POST \
	--data-binary @"$T/big" "$AGENT_URL/profile/cpu"
req 413 'larger than 8192 bytes' "chunked body over the limit: 413" -X POST \
	-H 'Transfer-Encoding: chunked' --data-binary @"$T/big" \
	"$AGENT_URL/profile/cpu"

# 404 and 405.
req 404 'no such path /nothing' "unknown path: 404 listing the paths" \
	"$AGENT_URL/nothing"
req 405 'PUT is not allowed on /profile/cpu' "PUT /profile/cpu: 405" \
	-X PUT "$AGENT_URL/profile/cpu"
curl -s -D "$T/headers" -o /dev/null -X POST "$AGENT_URL/healthz"
check "405 carries an Allow header" grep -qi '^Allow: GET, HEAD' "$T/headers"

# /healthz: every part named.
req 200 '"status":"ok"' "GET /healthz: 200 when a backend is usable" \
	"$AGENT_URL/healthz"
check "/healthz reports disk found/mounted/verified, kernel, bpf, perf" \
	python3 -c '
import json, sys
h = json.load(open(sys.argv[1]))
d = h["disk"]
assert d["found"] is False and d["mounted"] is False and d["verified"] is False, d
assert "--no-setup" in d["error"], d
assert h["kernel"]["release"] and "match" in h["kernel"], h
assert h["bpf"]["usable"] is True, h["bpf"]
assert "usable" in h["perf"], h
assert h["profile"]["running"] is False
' "$T/body"

# /metrics: Prometheus text that counts what happened above.
curl -s -D "$T/headers" -o "$T/metrics" "$AGENT_URL/metrics"
check "/metrics is Prometheus text 0.0.4" \
	grep -qi '^Content-Type: text/plain; version=0.0.4' "$T/headers"
check "/metrics counts answers by status (one 412, 422s, two 413s)" \
	python3 -c '
import re, sys
m = {}
for line in open(sys.argv[1]):
    if line.startswith("#"):
        continue
    name, value = line.rsplit(" ", 1)
    m[name] = float(value)
assert m["vmtools_http_requests_total{code=\"412\"}"] == 1, m
assert m["vmtools_http_requests_total{code=\"422\"}"] == 20, m
assert m["vmtools_http_requests_total{code=\"413\"}"] == 2, m
assert m["vmtools_build_info{version=\"0.1.0\"}"] == 1, m
for o in ("completed", "stopped", "client_gone", "shutdown", "failed"):
    assert m["vmtools_sessions_total{outcome=\"%s\"}" % o] == 0, m
for k in ("vmtools_samples_total", "vmtools_lost_stacks_total",
          "vmtools_last_session_duration_seconds", "vmtools_session_running"):
    assert k in m, k
' "$T/metrics"
check "one log line per request: method, path, status, duration" \
	grep -qE 'vmtools-agent: DELETE /profile/cpu 412 [0-9.]+ms client=127.0.0.1' \
	"$T/main.log"

# Idle clients cannot pin the service: 80 silent connections from another
# loopback address hit that address's limit, curl from 127.0.0.1 still
# gets through, and the silent ones are closed after --idle-timeout.
stop_agent
start_agent idle --no-setup --idle-timeout 2
python3 - "$AGENT_PORT" >"$T/idle.out" 2>&1 <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
socks = []
for i in range(80):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    try:
        s.connect(("127.0.0.1", port))
        socks.append(s)
    except OSError:
        pass
time.sleep(4)
closed = 0
for s in socks:
    s.settimeout(0.5)
    try:
        if s.recv(1) == b"":
            closed += 1
    except OSError:
        closed += 1
print("held", len(socks), "closed", closed)
PY
IDLE=$!
sleep 1
req 200 '"running":false' "answers while 80 idle connections are open" \
	--max-time 2 "$AGENT_URL/profile/cpu"
wait "$IDLE"
check "idle connections are closed after --idle-timeout" \
	grep -qE 'held ([1-9][0-9]*) closed \1$' "$T/idle.out"
diag "$T/idle.out"

# Authentication.
stop_agent
printf 's3cret-token\n' >"$T/token"
chmod 600 "$T/token"
start_agent auth --no-setup --auth-token-file "$T/token"
req 401 'Authorization: Bearer' "no token: 401" "$AGENT_URL/profile/cpu"
req 401 'requires a token' "wrong token: 401" \
	-H 'Authorization: Bearer s3cret-tokeX' "$AGENT_URL/profile/cpu"
req 401 'requires a token' "token prefix only: 401" \
	-H 'Authorization: Bearer s3cret' "$AGENT_URL/profile/cpu"
req 401 'requires a token' "POST without token: 401 before the body" \
	-X POST -d '{}' "$AGENT_URL/profile/cpu"
req 200 '"running":false' "right token: 200" \
	-H 'Authorization: Bearer s3cret-token' "$AGENT_URL/profile/cpu"
curl -s -D "$T/headers" -o /dev/null "$AGENT_URL/metrics"
check "401 carries WWW-Authenticate: Bearer" \
	grep -qi '^WWW-Authenticate: Bearer' "$T/headers"

# SIGTERM with nothing running: exit 0 at once.
start=$(date +%s%N)
kill -TERM "$AGENT_PID"
wait "$AGENT_PID"
st=$?
ms=$((($(date +%s%N) - start) / 1000000))
if [ "$st" = 0 ] && [ "$ms" -lt 1000 ]; then
	ok "SIGTERM: exit 0 within a second (${ms} ms)"
else
	not_ok "SIGTERM: exit $st after ${ms} ms"
	diag "$T/auth.log"
fi

# Without --no-setup and no disk: setup fails, serve goes on and says why.
start_agent nodisk --label nodisk-$$ --mountpoint "$T/mnt"
req 200 "no disk with the ext4 label 'nodisk-$$'" \
	"no disk: serve still serves, /healthz names the missing label" \
	"$AGENT_URL/healthz"
check "no disk: the setup failure is logged once at start" \
	grep -q "setup: no disk.*serving anyway" "$T/nodisk.log"
kill -INT "$AGENT_PID"
wait "$AGENT_PID"
check "SIGINT: exit 0" test $? = 0

# The port is taken: say so, naming it; IPv6 loopback works.
start_agent first --no-setup
"$VMTOOLS_AGENT" serve --no-setup --listen "127.0.0.1:$AGENT_PORT" >"$T/out" 2>&1
st=$?
check "a port in use is refused (status $st), naming the address" \
	bash -c "[ $st = 1 ] && grep -q 'cannot listen on 127.0.0.1:$AGENT_PORT.*Address already in use' '$T/out'"
stop_agent
if python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
	start_agent v6 --no-setup --listen '[::1]:0'
	check "--listen [::1]:PORT serves over IPv6" \
		bash -c "curl -s '$AGENT_URL/profile/cpu' | grep -q '\"running\":false'"
	stop_agent
else
	skip "--listen [::1]:PORT serves over IPv6" "no IPv6 loopback here"
fi

# Bad flags and files.
check_fails "--listen without a port is refused" \
	"$VMTOOLS_AGENT" serve --no-setup --listen 127.0.0.1
"$VMTOOLS_AGENT" serve --no-setup --listen localhost:3080 >"$T/out" 2>&1
check "--listen error names the argument and shows an example" \
	grep -q "listen 'localhost:3080' is not an address and port.*127.0.0.1:3080" "$T/out"
"$VMTOOLS_AGENT" serve --no-setup --auth-token-file "$T/missing" >"$T/out" 2>&1
check "a missing token file is named" grep -q "$T/missing" "$T/out"
: >"$T/empty"
"$VMTOOLS_AGENT" serve --no-setup --auth-token-file "$T/empty" >"$T/out" 2>&1
check "an empty token file is refused" grep -q "is empty" "$T/out"
check_fails "--max-seconds 0 is refused" \
	"$VMTOOLS_AGENT" serve --no-setup --max-seconds 0
check_fails "--comm longer than 15 characters is refused" \
	"$VMTOOLS_AGENT" serve --no-setup --comm sixteen-chars-xx
check "serve --help lists --listen and --auth-token-file" \
	bash -c "'$VMTOOLS_AGENT' serve --help | grep -q -- '--auth-token-file'"

# Listening beyond loopback without a token warns.
start_agent open --no-setup --listen 0.0.0.0:0
stop_agent
check "warns when listening beyond loopback without a token" \
	grep -q 'warning: listening beyond loopback without --auth-token-file' \
	"$T/open.log"
