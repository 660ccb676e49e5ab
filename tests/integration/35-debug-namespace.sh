#!/usr/bin/env bash
# tests/integration/35-debug-namespace.sh - a debug file names frames only
# for the processes that see it.  The user nobody, in a user and mount
# namespace of its own (`unshare -Urm`, which Debian allows unprivileged
# users), bind-mounts a directory of its own over the debug directory the
# agent looks in (VMTOOLS_DEBUG_DIR, Debian's libc6-dbg unpacked there:
# tests/lib/libc-dbg.sh); in it, libc's debug file with libc's build id
# and every symbol renamed EVIL_NAME.  Its busy process is profiled first,
# through its root the agent finds that file (its own frames are
# EVIL_…: the names are its to choose for itself); then a root process
# is profiled by the same agent, beside it and after it has gone: none of
# its frames is EVIL_…, and libc's carry the names of the real debug file
# (the agent kept the first process's file as libc's for every process).
# Skipped, saying why, where unprivileged user namespaces are not allowed.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/agent.sh"
. "$SRC/tests/lib/libc-dbg.sh"

WHAT="debug files a user mounts in a namespace of its own"
skip_unless "$WHAT" "$(need_bpf)" "$(need_root)" "$(need_burn)" \
	"$(need_cmd curl objcopy nm readelf runuser unshare dpkg apt-get python3)"
id nobody >/dev/null 2>&1 || skip_unless "$WHAT" "needs the user nobody"
chmod 755 "$T"
run_as nobody "$T" unshare -Urm true 2>"$T/why" ||
	skip_unless "$WHAT" "unprivileged user namespaces are not allowed here ($(head -n 1 "$T/why"))"
# Not in a subshell: it sets LIBC_SO, LIBC_ID and LIBC_DEBUG.
libc_dbg_fetch "$T/dbg" >"$T/why" || skip_unless "$WHAT" "$(cat "$T/why")"

DEBUG=$T/dbg/usr/lib/debug
export VMTOOLS_DEBUG_DIR=$DEBUG
unset DEBUGINFOD_URLS
EVIL=$T/evil/.build-id/${LIBC_ID:0:2}/${LIBC_ID:2}.debug
mkdir -p "$(dirname "$EVIL")"
objcopy --prefix-symbols=EVIL_ "$LIBC_DEBUG" "$EVIL"
cp "$BURN" "$T/burn"
chmod -R a+rX "$T/dbg" "$T/evil" "$T/burn"
check "the false debug file has libc's build id ($LIBC_ID) and EVIL_ names" \
	bash -c "readelf -n '$EVIL' | grep -q 'Build ID: $LIBC_ID' && nm '$EVIL' | grep -q ' EVIL_start_thread$'"

# libc's functions only its debug file names: local, not in .dynsym.
nm -D --defined-only "$LIBC_SO" | awk '{sub(/@.*/, "", $3); print $3}' | sort -u >"$T/dynamic.txt"
nm "$LIBC_DEBUG" | awk '$2 ~ /^[tT]$/ {print $3}' | sort -u | comm -23 - "$T/dynamic.txt" >"$T/static.txt"

# frames COMM FILE: the frames of COMM's stacks in a folded profile, one a line.
frames() { awk -v c="$1" 'index($0, c ";") == 1 {NF--; print}' "$2" | tr ';' '\n' | sort -u; }
evil() { frames "$1" "$2" | grep '^EVIL_' | head -n 3 | tr '\n' ' '; }
real() { frames "$1" "$2" | grep -Fxf "$T/static.txt" | head -n 3 | tr '\n' ' '; }

# The mount is in its namespace only: ours still shows the real file.
run_as nobody "$T" unshare -Urm sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' \
	sh "$T/evil" "$DEBUG" "$T/burn" --comm c59evil --threads 1 --seconds 120 \
	>/dev/null 2>&1 &
at_exit "pkill -u nobody -x c59evil"
for ((i = 0; i < 100; i++)); do
	pid=$(pgrep -u nobody -x c59evil | head -n 1)
	[ -n "$pid" ] && break
	sleep 0.05
done
check "nobody's process sees the false debug file where the agent looks, we the real one" \
	bash -c "cmp -s '/proc/$pid/root$DEBUG/.build-id/${LIBC_ID:0:2}/${LIBC_ID:2}.debug' '$EVIL' &&
		cmp -s '$DEBUG/.build-id/${LIBC_ID:0:2}/${LIBC_ID:2}.debug' '$LIBC_DEBUG'"

start_agent e3 --no-setup --comm c59evil --comm c59victim
FOLDED='{"sampling_frequency": 499, "timeout_seconds": 2, "format": "folded"}'
code=$(agent_post profile/cpu "$FOLDED" "$T/first.folded")
named=$(evil c59evil "$T/first.folded")
check "first, nobody's process alone: its libc frames are named from the file it mounted ($named)" \
	test "$code" = 200 -a -n "$named"

"$BURN" --comm c59victim --threads 1 --seconds 120 >/dev/null 2>&1 &
VICTIM=$!
at_exit "kill $VICTIM"
sleep 0.3
code=$(agent_post profile/cpu "$FOLDED" "$T/both.folded")
bad=$(evil c59victim "$T/both.folded")
good=$(real c59victim "$T/both.folded")
check "then a root process beside it: none of its frames is named by that file (${bad:-none})" \
	bash -c "[ '$code' = 200 ] && grep -q '^c59victim;' '$T/both.folded' && [ -z '$bad' ]"
check "its libc frames carry the real debug file's names ($good)" test -n "$good"
named=$(evil c59evil "$T/both.folded")
check "in the same profile nobody's process keeps its own names ($named)" test -n "$named"

pkill -u nobody -x c59evil
sleep 0.3
code=$(agent_post profile/cpu "$FOLDED" "$T/after.folded")
bad=$(evil c59victim "$T/after.folded")
good=$(real c59victim "$T/after.folded")
check "after it has gone, the root process's frames: none by that file (${bad:-none}), libc's real names ($good)" \
	test "$code" = 200 -a -z "$bad" -a -n "$good"
curl -s --max-time 5 "$AGENT_URL/healthz" >"$T/health.json"
diag <<<"symbols: $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['symbols'])" "$T/health.json" 2>&1)"
stop_agent
