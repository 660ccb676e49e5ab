#!/usr/bin/env bash
# tests/integration/81-ui-postgres.sh - the agent's web UI (docs/ui.md)
# against a real PostgreSQL 15 under pgbench -S: the files of /ui/ with
# their content types, cache headers and Content-Security-Policy; paths
# that leave the UI's directory, dot files, symlinks and FIFOs in a hostile
# UI directory (the tools disk's) refused; the UI found on the tools disk
# below --mountpoint; POST format svg; then Chromium opens the UI and a
# 5 s CPU profile in speedscope, whose sandwich table lists PostgresMain,
# and a window of the history when the agent profiles all the time
# (tests/browser/ui.mjs); behind --auth-token-file nothing is served
# before the token is given, and the token reaches no URL and no log.
# Also refused: %2e%2e and an oversized file in the hostile directory; the
# UI is not found through a symlink.  The profile opens on speedscope's
# left-heavy view, in CPU time; the history window is skipped, saying so,
# when the agent does not profile continuously; with the token the UI works
# (a browser's Basic password).
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"
. "$SRC/tests/lib/agent.sh"
. "$SRC/tests/lib/browser.sh"

UI=$BUILD/ui
skip_unless "the web UI against PostgreSQL" "$(need_bpf)" "$(need_cmd curl xmllint)" \
	"$(pg_reason)" "$(need_browser)" \
	"$([ -f "$UI/index.html" ] || echo "needs $UI (make ui)")"

if ! pg_start || ! pg_bench_init 1; then
	not_ok "PostgreSQL cluster starts"
	exit 0
fi
pg_bench_bg 300 -c 2 -j 2 -S

# Continuous profiling, when this agent has it: its history is in the UI.
cont=()
if "$VMTOOLS_AGENT" serve --help 2>&1 | grep -q -- --continuous; then
	cont=(--continuous --continuous-interval 2 --continuous-frequency 99)
fi
start_agent ui --no-setup --ui-dir "$UI"

# header URL NAME: the value of response header NAME of GET URL.
header() {
	curl -s -D - -o /dev/null "$1" | tr -d '\r' |
		sed -n "s/^$2: //Ip" | head -n 1
}
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 --path-as-is "$@"; }

check "GET /ui/ is HTML" \
	test "$(header "$AGENT_URL/ui/" Content-Type)" = "text/html; charset=utf-8"
check "GET /ui/ui.js is JavaScript" \
	test "$(header "$AGENT_URL/ui/ui.js" Content-Type)" = "text/javascript; charset=utf-8"
js=$(cd "$UI/speedscope" && ls speedscope-*.js)
check "speedscope's $js is cached for good" \
	grep -q immutable <<<"$(header "$AGENT_URL/ui/speedscope/$js" Cache-Control)"
check "the page is revalidated every time" \
	test "$(header "$AGENT_URL/ui/" Cache-Control)" = no-cache
csp=$(header "$AGENT_URL/ui/speedscope/index.html" Content-Security-Policy)
check "a Content-Security-Policy with default-src 'none' and nothing from elsewhere" \
	bash -c "grep -q \"default-src 'none'\" <<<\"\$1\" && ! grep -qE 'https?:|\\*' <<<\"\$1\"" _ "$csp"
check "X-Content-Type-Options: nosniff" \
	test "$(header "$AGENT_URL/ui/ui.css" X-Content-Type-Options)" = nosniff
for p in /ui/../etc/passwd /ui/%2e%2e/%2e%2e/etc/passwd /ui/.hidden.js \
	/ui/speedscope/../../../etc/passwd /ui//etc/passwd /ui/speedscope/LICENSE; do
	check "GET $p: 404" test "$(code "$AGENT_URL$p")" = 404
done
check "POST /ui/: 405" test "$(code -X POST "$AGENT_URL/ui/")" = 405

# A hostile UI directory, as a tools disk could hold one.
H=$T/hostile
mkdir -p "$H/speedscope" "$T/outside"
cp "$UI/index.html" "$H/"
echo 'secret' >"$T/outside/secret.js"
ln -s "$T/outside/secret.js" "$H/link.js"
ln -s "$T/outside" "$H/dir"
mkfifo "$H/fifo.js"
head -c $((9 * 1024 * 1024)) /dev/zero >"$H/big.js"
start_agent hostile --no-setup --ui-dir "$H"
check "a hostile UI directory: its index.html is served" \
	test "$(code "$AGENT_URL/ui/")" = 200
check "a symlink to a file outside is not followed (404)" \
	test "$(code "$AGENT_URL/ui/link.js")" = 404
check "a symlinked directory is not followed (404)" \
	test "$(code "$AGENT_URL/ui/dir/secret.js")" = 404
check "a FIFO does not hang the request (404)" \
	test "$(code "$AGENT_URL/ui/fifo.js")" = 404
check "a file over the size bound is refused (404)" \
	test "$(code "$AGENT_URL/ui/big.js")" = 404

# Without --ui-dir (and nothing installed), the tools disk's copy is used;
# a symlink on the way there is refused.
mkdir -p "$T/mnt/usr/share/vmtools" "$T/mnt2/usr/share" "$T/elsewhere/vmtools"
cp -r "$UI" "$T/mnt/usr/share/vmtools/ui"
cp -r "$UI" "$T/elsewhere/vmtools/ui"
ln -s "$T/elsewhere/vmtools" "$T/mnt2/usr/share/vmtools"
if [ -e /usr/local/share/vmtools/ui ]; then
	skip "the UI found on the tools disk below --mountpoint" "an installed UI in /usr/local/share/vmtools/ui comes first"
else
	start_agent disk --no-setup --mountpoint "$T/mnt"
	check "the UI found on the tools disk below --mountpoint" \
		test "$(code "$AGENT_URL/ui/")" = 200
	start_agent disk2 --no-setup --mountpoint "$T/mnt2"
	check "a tools disk whose UI path holds a symlink: not served (404)" \
		test "$(code "$AGENT_URL/ui/")" = 404
	check "its error says where the UI is looked for" \
		grep -q "web UI is not installed" <(curl -s "$AGENT_URL/ui/")
fi

start_agent ui2 --no-setup --ui-dir "$UI" "${cont[@]}"
st=$(curl -s -X POST -H 'Content-Type: application/json' \
	-d '{"timeout_seconds": 2, "format": "svg"}' \
	-D "$T/svg.h" -o "$T/pg.svg" -w '%{http_code}' "$AGENT_URL/profile/cpu")
check "POST format svg: 200, image/svg+xml" \
	bash -c "[ $st = 200 ] && grep -qi '^Content-Type: image/svg+xml' '$T/svg.h'"
check "xmllint --noout the PostgreSQL SVG" xmllint --noout "$T/pg.svg"
check "the PostgreSQL SVG has a PostgresMain frame" \
	grep -q '<title>PostgresMain (' "$T/pg.svg"
st=$(curl -s -D "$T/go.h" -o "$T/go.svg" -w '%{http_code}' \
	"$AGENT_URL/debug/pprof/profile?seconds=1&format=svg")
check "GET /debug/pprof/profile?seconds=1&format=svg: 200, image/svg+xml, xmllint passes" \
	bash -c "[ $st = 200 ] && grep -qi '^Content-Type: image/svg+xml' '$T/go.h' && xmllint --noout '$T/go.svg'"
check "GET /debug/pprof/profile?format=png: 422 naming the formats" \
	grep -q 'format must be pprof, folded or svg' <(curl -s "$AGENT_URL/debug/pprof/profile?seconds=1&format=png")

run_browser ui.mjs "$AGENT_URL"

# Behind a token.
TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "$TOKEN" >"$T/token"
chmod 600 "$T/token"
start_agent token --no-setup --ui-dir "$UI" --auth-token-file "$T/token"
check "with a token: GET /ui/ without it is 401" test "$(code "$AGENT_URL/ui/")" = 401
check "with a token: the 401 asks a browser for it (WWW-Authenticate: Basic)" \
	grep -qi '^WWW-Authenticate: Basic' <(curl -s -D - -o /dev/null "$AGENT_URL/ui/")
check "with a token: GET /ui/ with it as Bearer is 200" \
	test "$(code -H "Authorization: Bearer $TOKEN" "$AGENT_URL/ui/")" = 200
check "with a token: GET /ui/ with it as Basic password is 200" \
	test "$(code -u "anyone:$TOKEN" "$AGENT_URL/ui/")" = 200
check "with a token: a wrong Basic password is 401" \
	test "$(code -u "anyone:x$TOKEN" "$AGENT_URL/ui/")" = 401
run_browser ui.mjs "$AGENT_URL" "$TOKEN"
check "the token is in no log line of the agent" bash -c "! grep -qF '$TOKEN' '$AGENT_LOG'"
