#!/usr/bin/env bash
# tests/integration/57-frozen-mount.sh - a target on a frozen mount (issue
# 27): a process of the user nobody runs from, and works in, a FUSE
# filesystem (fuse2fs on an ext4 image, mounted by root with allow_other,
# as an admin mounts sshfs) whose server is then stopped with SIGSTOP, so
# every lookup, open and read there waits for an answer that never comes
# (O_NONBLOCK does not reach a lookup).  The previous agent opened the
# target's PG_VERSION there and hung for good: the profile never ended,
# DELETE and SIGTERM did nothing.  Now every read of a target's files goes
# through agent/iopool/iopool.c:
#   - the first profile answers 200 with the target's samples, at most
#     a second or two late (one read timed out), and later ones on time
#     (the device is remembered), CPU, off-CPU and wall alike;
#   - files on other mounts are still read (libc's names are there);
#   - /healthz answers within 1 s and counts the read that hangs;
#   - DELETE ends a running profile at once, SIGTERM stops the agent
#     within 2 s.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/agent.sh"

skip_unless "a target on a frozen FUSE mount" "$(need_bpf)" "$(need_root)" \
	"$(need_cmd curl fuse2fs fusermount3 mke2fs mountpoint runuser)" \
	"$(need_burn)"
[ -c /dev/fuse ] || skip_unless "a target on a frozen FUSE mount" "needs /dev/fuse"
id nobody >/dev/null 2>&1 || skip_unless "a target on a frozen FUSE mount" "needs the user nobody"

chmod 755 "$T"
mkdir -p "$T/src" "$T/mnt"
cp "$BURN" "$T/src/c27fuse"
truncate -s 32M "$T/img"
mke2fs -q -t ext4 -d "$T/src" "$T/img"
fuse2fs -f -o fakeroot,allow_other "$T/img" "$T/mnt" >"$T/fuse2fs.log" 2>&1 &
FUSE=$!
at_exit "fusermount3 -u -z '$T/mnt'"
for ((i = 0; i < 100; i++)); do
	mountpoint -q "$T/mnt" && break
	sleep 0.05
done
check "the FUSE filesystem is mounted" mountpoint -q "$T/mnt"

run_as nobody "$T/mnt" ./c27fuse --threads 1 --seconds 120 \
	--comm c27fuse >/dev/null 2>&1 &
at_exit "pkill -x c27fuse"
sleep 0.5
check "the target runs from it, as nobody" bash -c "pgrep -u nobody -x c27fuse >/dev/null"
kill -STOP "$FUSE"
at_exit "kill -CONT $FUSE"
# Every thread of the server stopped before anything asks it: a request
# one of them read just before stopping would wait for ever, unkillable,
# and pin its name (a lookup of the same name waits behind it).
for ((i = 0; i < 100; i++)); do
	grep -qv '^T' <(for s in /proc/"$FUSE"/task/*/stat; do cut -d' ' -f3 "$s"; done) || break
	sleep 0.02
done
check "and the filesystem is frozen: a lookup there does not answer within 1 s" \
	bash -c "! timeout -s KILL 1 stat '$T/mnt/probe' >/dev/null 2>&1"

start_agent frozen --no-setup --comm c27fuse
# A folded profile of 2 s; TIMED makes agent_post print the status code and
# the seconds it took.
FOLDED_2S='{"timeout_seconds": 2, "format": "folded"}'
TIMED=(--max-time 30 -w '%{http_code} %{time_total}')
read -r code took < <(agent_post profile/cpu "$FOLDED_2S" "$T/cpu1.folded" "${TIMED[@]}")
diag <<<"first CPU profile of 2 s: $code in $took s"
check "the first 2 s CPU profile answers 200 within 5 s (${took} s), with the target's samples" \
	bash -c "[ '$code' = 200 ] && awk 'BEGIN { exit !($took < 5) }' && grep -q '^c27fuse;' '$T/cpu1.folded'"
read -r code took < <(agent_post profile/cpu "$FOLDED_2S" "$T/cpu2.folded" "${TIMED[@]}")
check "a second one answers on time (${took} s): the frozen device is remembered" \
	bash -c "[ '$code' = 200 ] && awk 'BEGIN { exit !($took < 3) }'"
check "frames in files on other mounts are still named (libc's clock_gettime)" \
	grep -q 'clock_gettime' "$T/cpu2.folded"
for kind in offcpu wall; do
	read -r code took < <(agent_post "profile/$kind" "$FOLDED_2S" "$T/$kind.folded" "${TIMED[@]}")
	check "a 2 s $kind profile answers 200 on time (${took} s)" \
		bash -c "[ '$code' = 200 ] && awk 'BEGIN { exit !($took < 3) }' && grep -q '^c27fuse;' '$T/$kind.folded'"
done
curl -s -o "$T/health.json" -w '%{http_code}' --max-time 1 "$AGENT_URL/healthz" >"$T/health.code"
check "/healthz answers within 1 s and counts the read that hangs" \
	bash -c "[ \"\$(cat '$T/health.code')\" = 200 ] && grep -Eq '\"reads_hanging\": *[1-9]' '$T/health.json'"

agent_post profile/cpu '{"timeout_seconds": 20, "format": "folded"}' "$T/deleted.folded" \
	"${TIMED[@]}" >"$T/deleted.code" &
POST=$!
sleep 1
start=$(date +%s%N)
curl -s -o /dev/null -X DELETE --max-time 5 "$AGENT_URL/profile/cpu"
wait "$POST"
ended=$((($(date +%s%N) - start) / 1000000))
check "DELETE ends a running 20 s profile within 2 s ($ended ms), 200 with what was collected" \
	bash -c "[ $ended -lt 2000 ] && grep -q '^200 ' '$T/deleted.code' && grep -q '^c27fuse;' '$T/deleted.folded'"

start=$(date +%s%N)
kill -TERM "$AGENT_PID"
timeout 5 tail -s 0.05 --pid="$AGENT_PID" -f /dev/null
gone=$((($(date +%s%N) - start) / 1000000))
if kill -0 "$AGENT_PID" 2>/dev/null; then
	for task in /proc/"$AGENT_PID"/task/*; do
		echo "$task $(cat "$task/comm" 2>/dev/null) $(cat "$task/wchan" 2>/dev/null) $(tr '\n' ' ' <"$task/stack" 2>/dev/null) syscall: $(cat "$task/syscall" 2>/dev/null)"
	done | diag
	ps -eo pid,stat,wchan:24,cmd | grep -v ' [SRI]' | diag
fi
check "SIGTERM stops the agent within 2 s ($gone ms)" test "$gone" -lt 2000
