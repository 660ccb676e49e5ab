#!/usr/bin/env bash
# tests/integration/55-api-hostile.sh - `vmtools-agent serve` against a
# hostile client, with real curl and raw sockets (python3) on 127.0.0.1:
#   - log injection: a path, a method or a header with a newline, an ESC or
#     bytes that are not UTF-8 (also without the token, answered 401)
#     never forges a line: every line of the log is one line of UTF-8 text
#     with the client's bytes escaped, and every JSON answer is valid UTF-8;
#   - framing the agent refuses itself: two Content-Length headers (400,
#     and the bytes after the body are not answered as a second request),
#     a Transfer-Encoding other than chunked alone (501 or 400 at once, not
#     after the idle timeout), %00 or another control byte in the target
#     (400, not routed), a control byte in a header;
#   - slowloris: 128 connections (64 from each of two addresses) sending a
#     header line a second are closed after --request-timeout (or when
#     their slots go to newer connections), and clients from a third
#     address and from one of the two get answers meanwhile; a profile
#     longer than --request-timeout is not cut by that deadline;
#   - strict JSON: single quotes, a name holding \u0000, a byte order mark,
#     a field given twice;
#   - --auth-token-file naming a FIFO is refused at once;
#   - a POST queued while the agent did not accept, its client gone
#     before it was, is not read and starts no session.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/agent.sh"

skip_unless "REST API against a hostile client" "$(need_cmd curl python3)"

# raw NAME REQUEST [SECONDS]: send REQUEST (Python's escapes) on one
# connection, read until the agent closes it or SECONDS (default 5) pass.
# Prints "STATUS RESPONSES END": the first status, how many responses came
# back, and eof or timeout; the bytes are in $T/NAME.resp.
cat >"$T/raw.py" <<'PY'
import codecs, re, socket, sys
port, secs, out = int(sys.argv[1]), float(sys.argv[3]), sys.argv[4]
req = codecs.escape_decode(sys.argv[2].encode())[0]
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(secs)
s.sendall(req)
data, end = b"", "timeout"
try:
    while True:
        b = s.recv(65536)
        if not b:
            end = "eof"
            break
        data += b
except (socket.timeout, ConnectionResetError):
    pass
open(out, "wb").write(data)
codes = re.findall(rb"^HTTP/1\.[01] (\d{3})", data, re.M)
print(codes[0].decode() if codes else "none", len(codes), end)
PY
raw() {
	python3 "$T/raw.py" "$AGENT_PORT" "$2" "${3:-5}" "$T/$1.resp"
}

# said DESC WANT GOT: ok when GOT is WANT, else show the response.
said() {
	if [ "$3" = "$2" ]; then
		ok "$1"
	else
		not_ok "$1: got '$3', want '$2'"
		diag "$T/$4.resp"
	fi
}

# log_is_clean LOG: every line is one UTF-8 line of the agent's own.
log_is_clean() {
	python3 - "$1" <<'PY'
import re, sys
raw = open(sys.argv[1], "rb").read()
text = raw.decode("utf-8")  # raises on bytes that are not UTF-8
for n, line in enumerate(text.split("\n")[:-1], 1):
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z vmtools-agent: ", line), (n, line)
    assert not re.search("[\x00-\x1f\x7f-\x9f\u2028\u2029]", line), (n, line)
PY
}

# Log injection.  --idle-timeout 30: nothing here waits for it.
start_agent main --no-setup --idle-timeout 30
forged='2026-01-01T00:00:00.000Z%20vmtools-agent:%20session%20outcome=completed'
curl -gs -o "$T/inj.json" "$AGENT_URL/x%0a$forged%1b[31m" >/dev/null
curl -gs -o "$T/utf.json" -w '%{http_code}' "$AGENT_URL/x%ff%fe%c0%af" >"$T/utf.code"
raw method 'G\x1bET /x\xff\x9b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >/dev/null
check "a forged line in the path is refused and logged as sent, on its request's line" \
	grep -qF 'GET /x%0a2026-01-01T00:00:00.000Z%20vmtools-agent:%20session%20outcome=completed%1b[31m 400' "$T/main.log"
check "a method with ESC and a path with bytes not UTF-8 are logged escaped" \
	grep -qF 'G\x1bET /x\xff\x9b 404' "$T/main.log"
check "404 of a path that is not UTF-8: 404, and its JSON body is valid UTF-8" \
	python3 -c '
import json, sys
assert open(sys.argv[2]).read() == "404"
e = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))["error"]
assert "/x\\xff\\xfe\\xc0\\xaf" in e, e
' "$T/utf.json" "$T/utf.code"
check "no line of the log is forged, none holds a control byte, all UTF-8" \
	log_is_clean "$T/main.log"

# Framing.
said "two Content-Length headers: 400 and the connection closed, no smuggled second answer" \
	"400 1 eof" "$(raw cl2 'POST /profile/cpu HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 60\r\n\r\n{}GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n')" cl2
said "two equal Content-Length headers: 400 too" "400 1 eof" \
	"$(raw cl22 'POST /profile/cpu HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}')" cl22
said "Transfer-Encoding gzip: 501 at once" "501 1 eof" \
	"$(raw gzip 'POST /profile/cpu HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n{}')" gzip
said "Transfer-Encoding gzip, chunked: 400 at once" "400 1 eof" \
	"$(raw gzchunk 'POST /profile/cpu HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n')" gzchunk
said "Content-Length and Transfer-Encoding together: 400" "400 1 eof" \
	"$(raw both 'POST /profile/cpu HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n')" both
said "chunked alone is still read (its bad JSON answered 400 by the parser)" \
	"400 1 eof" "$(raw chunked 'POST /profile/cpu HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n1\r\n{\r\n0\r\n\r\n')" chunked
check "chunked body reached the JSON parser" grep -q 'not valid JSON' "$T/chunked.resp"
said "%00 in the path: 400, not routed to /profile/cpu" "400 1 eof" \
	"$(raw nul 'GET /profile/cpu%00x HTTP/1.1\r\nHost: x\r\n\r\n')" nul
check "the 400 of %00 names the control byte" grep -q 'control character (byte 0x00)' "$T/nul.resp"
said "a raw control byte in the path: 400" "400 1 eof" \
	"$(raw ctl 'GET /profile/cpu\x01 HTTP/1.1\r\nHost: x\r\n\r\n')" ctl
said "%0a in the query: 400" "400 1 eof" \
	"$(raw query 'GET /debug/pprof/profile?seconds=1%0a HTTP/1.1\r\nHost: x\r\n\r\n')" query
said "a control byte in a header value: 400" "400 1 eof" \
	"$(raw hdr 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x1bb\r\n\r\n')" hdr
check "no session was started by any of these" \
	bash -c "! grep -q 'session profiler=' '$T/main.log'"

# Strict JSON.
while IFS='|' read -r want needle body; do
	st=$(agent_post profile/cpu "$(printf "$body")" "$T/post.json")
	if [ "$st" = "$want" ] && grep -qF -- "$needle" "$T/post.json"; then
		ok "strict JSON: $want for $body"
	else
		not_ok "strict JSON: $body answered $st (want $want with '$needle')"
		diag "$T/post.json"
	fi
done <<'ROWS'
400|a single quote at byte 1|{'timeout_seconds': 1}
422|holds \\u0000|{"timeout_seconds\\u0000x": 1}
422|format must not hold|{"format": "folded\\u0000x"}
400|byte order mark|\xef\xbb\xbf{"timeout_seconds": 1}
422|a field is given twice|{"timeout_seconds": 1, "timeout_seconds": 2}
400|not valid JSON|{"timeout_seconds": 01}
ROWS
check "no session was started by a refused body" \
	bash -c "! grep -q 'session profiler=' '$T/main.log'"
check "the log is still clean" log_is_clean "$T/main.log"
stop_agent

# Log injection without the token: the 401 is logged escaped too.
printf 's3cret-token\n' >"$T/token"
chmod 600 "$T/token"
start_agent auth --no-setup --auth-token-file "$T/token"
st=$(curl -gs -o "$T/auth.json" -w '%{http_code}' "$AGENT_URL/profile/cpu%0a$forged")
said "no token, control byte in the path: refused (400 before the token, 401 after)" \
	yes "$([ "$st" = 400 ] || [ "$st" = 401 ] && echo yes)" auth
st=$(curl -gs -o "$T/auth.json" -w '%{http_code}' "$AGENT_URL/x%ff%c2%9b")
check "no token: 401" test "$st" = 401
raw method401 'G\x1bET /profile/cpu HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >/dev/null
check "a 401 is logged with its path escaped" \
	grep -qF 'GET /x\xff\xc2\x9b 401' "$T/auth.log"
check "a 401 is logged with its method escaped" \
	grep -qF 'G\x1bET /profile/cpu 401' "$T/auth.log"
check "the log of the agent with a token is clean" log_is_clean "$T/auth.log"
stop_agent

# The token file is a FIFO: refused at once, not waited on.
mkfifo "$T/fifo"
timeout 20 "$VMTOOLS_AGENT" serve --no-setup --listen 127.0.0.1:0 \
	--auth-token-file "$T/fifo" >"$T/fifo.out" 2>&1
check_said $? 1 "$T/fifo.out" "--auth-token-file FIFO: exit 1 at once with a sentence" \
	"auth token file $T/fifo is not a regular file"

# Slowloris: 128 connections trickling one header line a second for 16 s,
# 64 from 127.0.0.2 and 64 from 127.0.0.3 (every slot; all root's, so one
# client for the agent, whose newer connections take the slots of those
# waiting longest); --request-timeout 2 is the time a request has to
# arrive whole.
start_agent slow --no-setup --request-timeout 2
python3 - "$AGENT_PORT" >"$T/slow.out" 2>&1 <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
socks = []
for addr in ("127.0.0.2", "127.0.0.3"):
    for i in range(64):
        s = socket.socket()
        s.bind((addr, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        socks.append(s)
closed = set()
for line in range(16):
    time.sleep(1)
    for n, s in enumerate(socks):
        if n in closed:
            continue
        try:
            s.sendall(b"X-Slow-%d: x\r\n" % line)
            s.setblocking(False)
            try:
                if s.recv(1) == b"":
                    closed.add(n)
            except BlockingIOError:
                pass
            s.setblocking(True)
        except OSError:
            closed.add(n)
print("trickled", len(socks), "closed by the agent", len(closed))
PY
SLOW=$!
sleep 5
req_ok() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 6 "$@")" = 200 ]; }
check "while 128 connections trickle headers, a client from another address is answered" \
	req_ok "$AGENT_URL/healthz"
check "and so is a client from an address that opened 64 of them" \
	req_ok --interface 127.0.0.2 "$AGENT_URL/healthz"
wait "$SLOW"
check "every trickling connection was closed by the agent before it ended" \
	grep -q 'trickled 128 closed by the agent 128$' "$T/slow.out"
diag "$T/slow.out"
check "the log says why they were closed" \
	grep -q -- '- /healthz 0 .*client=127.0.0.[23] uid=0 (closed: the request did not arrive whole within 2 s)' "$T/slow.log"
if [ -z "$(need_bpf)" ]; then
	st=$(curl -s -o "$T/long.pb" -w '%{http_code}' -X POST \
		-d '{"timeout_seconds": 4}' "$AGENT_URL/profile/cpu")
	check "a profile of 4 s is answered whole despite --request-timeout 2" \
		test "$st" = 200 -a -s "$T/long.pb"
else
	skip "a profile of 4 s is answered whole despite --request-timeout 2" "$(need_bpf)"
fi
stop_agent

# A POST queued, its client gone before the agent accepts it: the agent is
# stopped (SIGSTOP) while a client at 127.0.0.4 sends a POST into the
# listen queue and hangs up, then continued.  The client's socket is no
# process's any more when the connection is accepted: it is closed unread.
start_agent queued --no-setup --max-connections 2 --idle-timeout 30
kill -STOP "$AGENT_PID"
python3 - "$AGENT_PORT" >"$T/queued.out" 2>&1 <<'PY'
import socket, sys
port = int(sys.argv[1])
q = socket.socket()
q.bind(("127.0.0.4", 0))
q.connect(("127.0.0.1", port))  # completed by the kernel, not accepted yet
body = b'{"timeout_seconds": 2}'
q.sendall(b"POST /profile/cpu HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
q.close()
print("queued and gone")
PY
kill -CONT "$AGENT_PID"
sleep 2
check "the queued POST of a client gone before it was accepted is not read" \
	bash -c "! grep -q 'client=127.0.0.4' '$T/queued.log'"
check "and started no session for its gone client" \
	bash -c "! grep -q 'session profiler=' '$T/queued.log'"
curl -s -o "$T/queued.metrics" "$AGENT_URL/metrics"
check "/metrics counts no session" \
	bash -c "! grep -E '^vmtools_sessions_total\\{[^}]*\\} [1-9]' '$T/queued.metrics'"
stop_agent
