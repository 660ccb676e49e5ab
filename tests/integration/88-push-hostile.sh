#!/usr/bin/env bash
# tests/integration/88-push-hostile.sh - `serve --push-url` against what a
# hostile or misconfigured push setup gives it (an endless body, a long
# token, credentials, a URL with a query), with
# tests/lib/pyroscope-standin.py as the server:
#   - a server that answers 200 and then a body without end: the agent
#     reads at most 64 KiB of it, counts the window ok, and stays
#     responsive;
#   - a 4000-character bearer token is sent whole;
#   - --push-basic-auth-file sends HTTP basic auth; a file without a colon,
#     and both it and --push-token-file, are refused at start-up;
#   - a --push-url with a query, a fragment or credentials is refused at
#     start-up, saying what to do, and the password is never printed.
# /healthz answers while the endless body is read; the basic auth password
# is in neither /healthz nor the log.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/agent.sh"
. "$SRC/tests/lib/pyroscope-standin.sh"

skip_unless "a hostile push server and bad push options" "$(need_bpf)" \
	"$(need_cmd curl python3 base64)" "$(need_burn)"

COMM=c27push
RX=$T/rx
mkdir -p "$RX"
echo flood >"$RX/mode"

standin_start "$RX"

metric() {
	curl -s --max-time 2 "$AGENT_URL/metrics" | awk -v m="$1" '$1 == m {print $2}'
}

# A token of 4000 characters (the file holds at most 4096 bytes).
python3 -c "print('t' * 3990 + 'LASTCHARS!')" >"$T/token"
chmod 600 "$T/token"

burn_bg "$COMM" 300
start_agent flood VMTOOLS_PUSH_BACKOFF_MS=300 --no-setup --comm "$COMM" \
	--continuous --continuous-interval 1 \
	--push-url "http://127.0.0.1:$STANDIN_PORT" --push-token-file "$T/token"
for ((i = 0; i < 100; i++)); do
	n=$(grep -c flooded "$RX/requests.jsonl" 2>/dev/null)
	[ "${n:-0}" -ge 2 ] && break
	sleep 0.1
done
flooded=$(python3 -c "import json; print(max([r.get('flooded', 0) for r in map(json.loads, open('$RX/requests.jsonl'))] or [0]))" 2>/dev/null)
diag <<<"the most a flooding answer got out before the agent closed: ${flooded:-none} bytes"
check "a server that answers without end is read no further than a bound (${flooded:-no} bytes of up to 2 GiB sent)" \
	test "${flooded:-0}" -gt 0 -a "${flooded:-0}" -lt $((64 << 20))
check "... and its 200 counts: the windows are ok, none retried" \
	bash -c "[ '$(metric 'vmtools_push_total{outcome="ok"}')' -ge 2 ] &&
		[ '$(metric 'vmtools_push_total{outcome="retry"}')' = 0 ]"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$AGENT_URL/healthz")
check "/healthz answers within 1 s meanwhile" test "$code" = 200
check "a 4000-character bearer token is sent whole" \
	python3 -c "import json,sys; r=json.loads(open('$RX/requests.jsonl').readline());
sys.exit(0 if r['auth'] == 'Bearer ' + 't' * 3990 + 'LASTCHARS!' else 1)"
stop_agent

# Basic auth from a file.
echo ok >"$RX/mode"
printf 'pusher:s3cr3t-pw\n' >"$T/basic"
chmod 600 "$T/basic"
start_agent basic VMTOOLS_PUSH_BACKOFF_MS=300 --no-setup --comm "$COMM" \
	--continuous --continuous-interval 1 \
	--push-url "http://127.0.0.1:$STANDIN_PORT" --push-basic-auth-file "$T/basic"
for ((i = 0; i < 60; i++)); do
	grep -q Basic "$RX/requests.jsonl" && break
	sleep 0.1
done
check "--push-basic-auth-file sends Authorization: Basic of its USER:PASSWORD" \
	python3 -c "import json,sys; rs=[json.loads(l) for l in open('$RX/requests.jsonl')];
sys.exit(0 if any(r['auth'] == 'Basic $(printf 'pusher:s3cr3t-pw' | base64)' and r['status'] == 200 for r in rs) else 1)"
curl -s "$AGENT_URL/healthz" >"$T/healthz"
check "the password shows neither in /healthz nor in the log" \
	bash -c "! grep -q s3cr3t '$T/healthz' '$AGENT_LOG'"
stop_agent

# refused URL DESC WANT: serve with --push-url URL fails at once, says WANT,
# never prints the password.
refused() {
	"$VMTOOLS_AGENT" serve --listen 127.0.0.1:0 --no-setup --continuous \
		--push-url "$1" >"$T/refused.out" 2>&1
	check_said $? 2 "$T/refused.out" "--push-url $2 is refused at start-up, saying '$3'" "$3"
	check "... and the password is not printed" bash -c "! grep -q s3cr3t '$T/refused.out'"
}
refused "http://127.0.0.1:$STANDIN_PORT/?tenant=x" "with a query" "query or fragment"
refused "http://127.0.0.1:$STANDIN_PORT/#frag" "with a fragment" "query or fragment"
refused "http://pusher:s3cr3t@127.0.0.1:$STANDIN_PORT/" "with credentials" "--push-basic-auth-file"

printf 'no-colon-here\n' >"$T/bad-basic"
chmod 600 "$T/bad-basic"
"$VMTOOLS_AGENT" serve --listen 127.0.0.1:0 --no-setup --continuous \
	--push-url "http://127.0.0.1:$STANDIN_PORT" --push-basic-auth-file "$T/bad-basic" >"$T/nocolon.out" 2>&1
check_said $? 1 "$T/nocolon.out" "a basic auth file without USER:PASSWORD is refused, naming it" \
	"$T/bad-basic holds no USER:PASSWORD"
"$VMTOOLS_AGENT" serve --listen 127.0.0.1:0 --no-setup --continuous \
	--push-url "http://127.0.0.1:$STANDIN_PORT" --push-basic-auth-file "$T/basic" \
	--push-token-file "$T/token" >"$T/both.out" 2>&1
check_said $? 2 "$T/both.out" "a token file and a basic auth file together are refused" "give one"
