#!/usr/bin/env bash
# tests/integration/33-profile-debuginfo.sh - debug files the machine does
# not have, for the libc every PostgreSQL backend runs: Debian's libc6-dbg
# unpacked with `dpkg -x` into the test's directory (tests/lib/libc-dbg.sh),
# never /usr/lib/debug (VMTOOLS_DEBUG_DIR points the agent at an empty
# one), so the names can only come from where the test put them:
#   (a) a real `debuginfod` server on loopback serving that directory,
#       with --debuginfod-url on `profile` and on `serve` (whose /healthz
#       and /metrics count the lookups); a server that refuses connections
#       costs names only;
#   (b) a tools image built with `--debug-dir` pointing at it, mounted
#       read-only where `serve --mountpoint` looks;
#   (c) neither: the same functions are libc.so.6+0xSTART, several distinct
#       ones, each START a function of the debug file (addr2line).
# The profile is of PostgreSQL under `pgbench -S`.
# In (a) also: a server answering 200 with what is not an ELF file with that
# build id is counted failed (not found) and its answer not kept in the
# cache; one sending 64 MiB without a Content-Length is cut at
# DEBUGINFOD_MAXSIZE (1 MiB there) and counted failed.  In (b) the debug
# files are in the manifest and verified.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"
. "$SRC/tests/lib/agent.sh"
. "$SRC/tests/lib/libc-dbg.sh"

skip_unless "debug files from debuginfod and the tools disk" "$(need_bpf)" \
	"$(need_loop)" "$(pg_reason)" \
	"$(need_cmd debuginfod debugfs curl nm addr2line readelf dpkg apt-get unshare python3)"
# Not in a subshell: it sets LIBC_SO, LIBC_ID and LIBC_DEBUG.
libc_dbg_fetch "$T/dbg" >"$T/why" ||
	skip_unless "debug files from debuginfod and the tools disk" "$(cat "$T/why")"

mkdir -p "$T/empty"
export VMTOOLS_DEBUG_DIR=$T/empty
unset DEBUGINFOD_URLS

# libc's functions only its debug file names: local, not in .dynsym.
nm -D --defined-only "$LIBC_SO" | awk '{sub(/@.*/, "", $3); print $3}' | sort -u >"$T/dynamic.txt"
nm "$LIBC_DEBUG" | awk '$2 ~ /^[tT]$/ {print $3}' | sort -u | comm -23 - "$T/dynamic.txt" >"$T/static.txt"

# The frames of a folded profile, one per line.
frames() { cut -d' ' -f1 "$1" | tr ';' '\n' | sort -u; }
static_named() { frames "$1" | grep -Fxf "$T/static.txt" | head -n 3 | tr '\n' ' '; }

check "--debuginfod-url refuses what is not an http(s) URL, naming it" \
	bash -c "'$VMTOOLS_AGENT' profile --debuginfod-url ftp://x --output '$T/x' 2>&1 | grep -q 'ftp://x is not an http'; [ \${PIPESTATUS[0]} = 2 ]"
check "a PostgreSQL 15 cluster starts" pg_start
check "pgbench initializes its tables" pg_bench_init 1
pg_bench_bg 120 -S -c 2 -j 2

profile_cli() { # NAME [ARG]...: a 3 s folded profile of postgres
	local name=$1
	shift
	"$VMTOOLS_AGENT" profile --seconds 3 --frequency 499 --format folded \
		"$@" --output "$T/$name.folded" 2>"$T/$name.err"
}

# (c) Neither: function starts from .eh_frame_hdr, where nm puts the
# function in the debug file.
profile_cli none
check "(c) without debug files no libc function only the debug file knows is named" \
	bash -c "[ -s '$T/none.folded' ] && [ -z \"\$(frames '$T/none.folded' | grep -Fxf '$T/static.txt')\" ]"
frames "$T/none.folded" | sed -n 's/^libc\.so\.6+0x//p' >"$T/none.starts"
n=$(wc -l <"$T/none.starts")
nm "$LIBC_DEBUG" | awk '$2 ~ /^[tTiW]$/ {sub(/^0+/, "", $1); print $1}' | sort -u >"$T/fn.addrs"
bad=0 exact=0
while read -r a; do
	# addr2line names a function there, and nearly always a function of
	# the debug file starts exactly there (not quite always: glibc starts
	# the FDE of the signal trampoline __restore_rt one byte early).
	f=$(addr2line -f -e "$LIBC_DEBUG" "0x$a" | head -n 1)
	[ "$f" != "??" ] || { bad=$((bad + 1)); echo "0x$a: $f" >>"$T/none.bad"; }
	grep -qFx "$a" "$T/fn.addrs" && exact=$((exact + 1))
done <"$T/none.starts"
check "(c) libc frames are libc.so.6+0xSTART, $n distinct, each a function of the debug file, $exact where nm puts one" \
	test "$n" -ge 2 -a "$bad" = 0 -a "$exact" -ge $((n - 1))
[ "$bad" = 0 ] || diag "$T/none.bad"

# (a) A real debuginfod server on loopback, indexing the unpacked package.
port=$(pg_free_port)
debuginfod -p "$port" -d "$T/debuginfod.sqlite" -F "$T/dbg" -t 0 -g 0 \
	>"$T/debuginfod.log" 2>&1 &
at_exit "kill $!"
for ((i = 0; i < 120; i++)); do
	code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/buildid/$LIBC_ID/debuginfo")
	[ "$code" = 200 ] && break
	sleep 0.5
done
check "debuginfod serves libc's debug file by its build id" test "$code" = 200

profile_cli dfd --debuginfod-url "http://127.0.0.1:$port" --debuginfod-cache "$T/cache"
named=$(static_named "$T/dfd.folded")
check "(a) profile --debuginfod-url names libc's static functions ($named)" test -n "$named"
check "(a) the fetched file is in --debuginfod-cache" test -s "$T/cache/$LIBC_ID/debuginfo"

start_agent dfd --no-setup --debuginfod-url "http://127.0.0.1:$port" \
	--debuginfod-cache "$T/cache2"
# A 3 s folded profile through the API.
FOLDED_3S='{"sampling_frequency": 499, "timeout_seconds": 3, "format": "folded"}'
st=$(agent_post profile/cpu "$FOLDED_3S" "$T/serve-dfd.folded")
named=$(static_named "$T/serve-dfd.folded")
check "(a) serve --debuginfod-url names them too ($named)" test "$st" = 200 -a -n "$named"
curl -s "$AGENT_URL/healthz" >"$T/healthz.json"
check "(a) /healthz counts the lookup found" \
	python3 -c "import json,sys; d=json.load(open('$T/healthz.json'))['debuginfod']; sys.exit(not (d['enabled'] and d['lookups']['found'] >= 1))"
curl -s "$AGENT_URL/metrics" >"$T/metrics.txt"
check "(a) /metrics counts it: vmtools_debuginfod_lookups_total{outcome=\"found\"} >= 1" \
	awk '$1 == "vmtools_debuginfod_lookups_total{outcome=\"found\"}" && $2 >= 1 {ok = 1} END {exit !ok}' "$T/metrics.txt"
stop_agent

# A server that refuses connections: the profile comes, without the names.
dead=$(pg_free_port)
start_agent dead --no-setup --debuginfod-url "http://127.0.0.1:$dead" \
	--debuginfod-cache "$T/cache3"
st=$(agent_post profile/cpu "$FOLDED_3S" "$T/serve-dead.folded")
check "a dead debuginfod server costs names only: 200, libc.so.6+0x frames" \
	bash -c "[ '$st' = 200 ] && grep -q 'libc\.so\.6+0x' '$T/serve-dead.folded'"
curl -s "$AGENT_URL/healthz" >"$T/healthz-dead.json"
check "/healthz counts the failed lookups" \
	python3 -c "import json,sys; d=json.load(open('$T/healthz-dead.json'))['debuginfod']; sys.exit(not (d['lookups']['failed'] >= 1 and d['lookups']['found'] == 0))"
stop_agent

# A server that answers 200 with what is not the debug file asked for (not
# an ELF file): a failed lookup, not a found one, and names only lost.
cat >"$T/liar.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        body = b"<html>this is not an ELF file</html>" * 100
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
liar=$(pg_free_port)
python3 "$T/liar.py" "$liar" 2>/dev/null &
at_exit "kill $!"
for ((i = 0; i < 100; i++)); do
	curl -s -o /dev/null "http://127.0.0.1:$liar/x" && break
	sleep 0.05
done
start_agent liar --no-setup --debuginfod-url "http://127.0.0.1:$liar" \
	--debuginfod-cache "$T/cache4"
st=$(agent_post profile/cpu "$FOLDED_3S" "$T/serve-liar.folded")
curl -s "$AGENT_URL/healthz" >"$T/healthz-liar.json"
check "a server answering what is not an ELF file: counted failed, not found" \
	python3 -c "import json,sys; d=json.load(open('$T/healthz-liar.json'))['debuginfod']; sys.exit(not (d['lookups']['failed'] >= 1 and d['lookups']['found'] == 0))"
check "... the profile still comes (200, libc.so.6+0x frames), and its answer is not kept in the cache" \
	bash -c "[ '$st' = 200 ] && grep -q 'libc\.so\.6+0x' '$T/serve-liar.folded' && [ -z \"\$(find '$T/cache4' -name debuginfo -type f)\" ]"
diag "$T/healthz-liar.json"
stop_agent

# A server that answers without a Content-Length and sends 64 MiB: the
# download stops at DEBUGINFOD_MAXSIZE (1 MiB here) all the same, and
# nothing of it stays in the cache.
cat >"$T/flood.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        try:
            for _ in range(64):
                self.wfile.write(b"\0" * (1 << 20))
        except OSError:
            pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
flood=$(pg_free_port)
python3 "$T/flood.py" "$flood" 2>/dev/null &
at_exit "kill $!"
for ((i = 0; i < 100; i++)); do
	curl -s -o /dev/null --max-time 1 -r 0-0 "http://127.0.0.1:$flood/x" && break
	sleep 0.05
done
start_agent flood DEBUGINFOD_MAXSIZE=1048576 --no-setup \
	--debuginfod-url "http://127.0.0.1:$flood" --debuginfod-cache "$T/cache5"
st=$(agent_post profile/cpu "$FOLDED_3S" "$T/serve-flood.folded")
curl -s "$AGENT_URL/healthz" >"$T/healthz-flood.json"
kept=$(du -sb "$T/cache5" | cut -f1)
check "a download without Content-Length stops at DEBUGINFOD_MAXSIZE: failed, the cache holds $kept bytes" \
	bash -c "[ '$st' = 200 ] && [ '$kept' -lt 4194304 ] && python3 -c \"import json,sys; d=json.load(open('$T/healthz-flood.json'))['debuginfod']; sys.exit(not (d['lookups']['failed'] >= 1 and d['lookups']['found'] == 0))\""
stop_agent

# (b) The tools disk: an image with --debug-dir, mounted read-only.
mkdir -p "$T/root/lib/modules/$(uname -r)" "$T/mnt"
check "(b) vmtools-image build --debug-dir packs the .build-id tree" \
	"$VMTOOLS_IMAGE" build --root "$T/root" --output "$T/tools.img" --no-perf \
	--label vmt-n13-dbg --debug-dir "$T/dbg/usr/lib/debug"
check "(b) the same file from two --debug-dir is refused, naming it, and no image is left" \
	bash -c "! '$VMTOOLS_IMAGE' build --root '$T/root' --output '$T/twice.img' --no-perf \
		--debug-dir '$T/dbg/usr/lib/debug' --debug-dir '$T/dbg/usr/lib/debug' 2>'$T/twice.err' &&
		grep -q 'already has /usr/lib/debug/.build-id/' '$T/twice.err' && [ ! -e '$T/twice.img' ]"
check "(b) a --debug-dir without .build-id/ is refused" \
	bash -c "! '$VMTOOLS_IMAGE' build --root '$T/root' --output '$T/none.img' --no-perf \
		--debug-dir '$T/empty' 2>'$T/none.err' &&
		grep -q 'has no .build-id directory' '$T/none.err' && [ ! -e '$T/none.img' ]"
check "(b) the manifest lists libc's debug file with its hash, and verify checks it" \
	bash -c "debugfs -R 'cat /.vmtools/manifest.json' '$T/tools.img' 2>/dev/null |
		grep -q '/usr/lib/debug/.build-id/${LIBC_ID:0:2}/${LIBC_ID:2}.debug' &&
		'$VMTOOLS_IMAGE' verify '$T/tools.img' >/dev/null"
cat >"$T/agent-on-disk" <<SH
#!/bin/sh
# The agent in a mount namespace of its own, the image mounted as setup does.
exec unshare -m --propagation private sh -c 'mount -o loop,ro "\$0" "\$1" && shift && exec "\$@"' \
	'$T/tools.img' '$T/mnt' '$VMTOOLS_AGENT' "\$@"
SH
chmod +x "$T/agent-on-disk"
VMTOOLS_AGENT=$T/agent-on-disk start_agent disk --no-setup --mountpoint "$T/mnt"
st=$(agent_post profile/cpu "$FOLDED_3S" "$T/disk.folded")
named=$(static_named "$T/disk.folded")
check "(b) serve --mountpoint names libc's static functions from the tools disk ($named)" \
	test "$st" = 200 -a -n "$named"
stop_agent
