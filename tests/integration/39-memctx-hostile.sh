#!/usr/bin/env bash
# tests/integration/39-memctx-hostile.sh - a process of the user nobody
# that passes for a PostgreSQL 17 backend to the memory snapshot
# (tests/programs/memctx-hostile.c: named postgres, TopMemoryContext in its
# .dynsym, a PG_VERSION of 17 where it runs), its memory-context tree made
# to hurt: 10 million siblings, a chain 10,000 deep, names of a MiB
# without an end and names in the kernel, children in the kernel, in an
# unmapped page, misaligned, of a tag no context has, two cycles, and a
# subtree a thread relinks without end while it is walked.  POST
# /profile/memory of it answers 200 (its time a diagnostic, bounded
# generously by 30 s: the walk's own bound is 4 s, its I/O worker's 5 s),
# /healthz answers within 1 s meanwhile, the pprof's comment says the walk
# was partial and what the bounds cut, the agent stays under 300 MB
# resident at its peak, and SIGTERM while it walks the tree again stops
# it within 2 s.  The times are diagnostics too.
# Before it, a process that is not PostgreSQL (sleep) gets the kernel's
# breakdown alone, by kind of mapping, summing to its Pss (within the KiB
# smaps rounds each mapping's down to).
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/agent.sh"

skip_unless "a hostile memory-context tree of an unprivileged user" "$(need_root)" \
	"$(need_cmd curl go runuser timeout)"
id nobody >/dev/null 2>&1 || skip_unless "a hostile memory-context tree" "needs the user nobody"
[ -x "$BUILD/programs/memctx-hostile" ] ||
	skip_unless "a hostile memory-context tree" "needs $BUILD/programs/memctx-hostile (make tests)"
pprof_home

H=$T/h
chmod 755 "$T"
mkdir -p "$H"
cp "$BUILD/programs/memctx-hostile" "$H/postgres"
echo 17 >"$H/PG_VERSION"
chmod -R a+rX "$H"
run_as nobody "$H" "$H/postgres" 60 >/dev/null 2>&1 &
at_exit "pkill -u nobody -x postgres"
pid=
# Linking 10 million siblings takes it a second or two, more under load.
for _ in $(seq 600); do
	pid=$(pgrep -u nobody -x postgres | head -1)
	[ -n "$pid" ] && grep -q "^Threads:[[:space:]]*2" "/proc/$pid/status" 2>/dev/null && break
	sleep 0.1
done
check "the hostile process runs as nobody, named postgres ($pid)" test -n "$pid"

# Any other target gets the kernel's breakdown alone, summing to its Pss.
sleep 30 &
other=$!
at_exit "kill $other"
"$VMTOOLS_AGENT" profile --kind memory --pid "$other" -f folded -o "$T/other.folded" >"$T/other.err" 2>&1
pss=$(awk '/^Pss:/ { print $2 * 1024 }' "/proc/$other/smaps_rollup")
sum=$(awk '{ s += $NF } END { printf "%.0f\n", s }' "$T/other.folded")
diag "$T/other.folded"
check "a process that is not PostgreSQL gets its mapped files and stack, no contexts" \
	bash -c "grep -q '^sleep;\[mapped_files\] ' '$T/other.folded' && grep -q '^sleep;\[stacks\] ' '$T/other.folded' && ! grep -q TopMemoryContext '$T/other.folded'"
# smaps gives each mapping's Pss rounded down to a KiB, smaps_rollup their
# exact sum: a KiB per mapping at most apart.
maps=$(grep -c . "/proc/$other/maps" 2>/dev/null || echo 64)
check "its kinds of mapping sum to its Pss within a KiB per mapping ($sum, $pss)" \
	awk -v g="${sum:-0}" -v w="${pss:-0}" -v m="$maps" 'BEGIN { d = w - g; exit !(w > 0 && d >= 0 && d <= m * 1024) }'
kill "$other"

start_agent hostile --no-setup
start=$(date +%s%N)
curl -s -X POST -H 'Content-Type: application/json' \
	-d "{\"targets\": {\"pids\": [$pid]}}" -o "$T/hostile.pb" -w '%{http_code}' \
	--max-time 60 "$AGENT_URL/profile/memory" >"$T/hostile.code" &
post=$!
sleep 0.3
code=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 1 "$AGENT_URL/healthz")
diag <<<"/healthz while the tree is walked: ${code#* } s"
check "/healthz answers within 1 s while the tree is walked" test "${code% *}" = 200
wait "$post"
took=$((($(date +%s%N) - start) / 1000000))
diag <<<"the snapshot of the hostile tree took $took ms"
check "POST /profile/memory of it answers 200" test "$(cat "$T/hostile.code")" = 200
check "the snapshot of 10 million contexts ends within a generous 30 s ($took ms)" test "$took" -lt 30000
go tool pprof -comments "$T/hostile.pb" >"$T/hostile.comments" 2>&1
diag "$T/hostile.comments"
check "the comment says the walk was partial, and why (the tree changed on every try, or its time ran out)" \
	grep -Eq "changed under the walk on each of 3 tries: partial|partial: the walk's time ran out" "$T/hostile.comments"
# Under load the walk's time may run out first: that is said instead.
check "the comment says what the bounds cut (contexts past 200000, subtrees deeper than 200, names, or time)" \
	grep -Eq "the walk was bounded: [1-9][0-9]* contexts past 200000 not followed, [1-9][0-9]* subtrees deeper than 200 cut, [1-9][0-9]* names|partial: the walk's time ran out after [0-9]+ contexts" \
	"$T/hostile.comments"
n=$(sed -n 's/.*; \([0-9]*\) memory contexts read;.*/\1/p' "$T/hostile.comments")
check "no more contexts are kept than the bound (${n:-none})" test -n "$n" -a "${n:-0}" -le 200000
hwm=$(awk '/^VmHWM/ { print int($2 / 1024) }' "/proc/$AGENT_PID/status")
diag <<<"the agent's peak resident memory: $hwm MB"
check "the agent stayed under 300 MB resident at its peak ($hwm MB)" test "$hwm" -lt 300
# SIGTERM while the tree is walked again.
curl -s -X POST -H 'Content-Type: application/json' \
	-d "{\"targets\": {\"pids\": [$pid]}}" -o /dev/null \
	--max-time 60 "$AGENT_URL/profile/memory" &
sleep 0.5
start=$(date +%s%N)
kill -TERM "$AGENT_PID"
timeout 5 tail -s 0.05 --pid="$AGENT_PID" -f /dev/null
gone=$((($(date +%s%N) - start) / 1000000))
diag <<<"SIGTERM to exit: $gone ms"
check "SIGTERM stops the agent within 2 s ($gone ms)" test "$gone" -lt 2000
