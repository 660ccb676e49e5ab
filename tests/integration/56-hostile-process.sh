#!/usr/bin/env bash
# tests/integration/56-hostile-process.sh - what an unprivileged local user
# can put in front of the agent through a process it profiles (issue 27):
#   - a stripped binary whose .gnu_debuglink names a FIFO beside it (and
#     in .debug/): the debug file search opens it without blocking and
#     passes over it, so the profile ends on time, /healthz answers within
#     1 s meanwhile, and SIGTERM stops the agent within 2 s (it waited
#     forever, holding the symbol cache every session needs).
# The hostile process runs as the user nobody.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/agent.sh"

skip_unless "hostile processes of an unprivileged user" "$(need_bpf)" \
	"$(need_root)" "$(need_cmd curl objcopy mkfifo runuser timeout)" \
	"$(need_burn)"
id nobody >/dev/null 2>&1 || skip_unless "hostile processes" "needs the user nobody"

COMM=c27fifo
H=$T/h
chmod 755 "$T"
mkdir -p "$H/.debug"
cp "$BURN" "$H/hostile"
objcopy --only-keep-debug "$H/hostile" "$H/hostile.debug"
(cd "$H" && objcopy --strip-all --add-gnu-debuglink=hostile.debug hostile)
rm "$H/hostile.debug"
mkfifo "$H/hostile.debug" "$H/.debug/hostile.debug"
chmod -R a+rX "$H"
check "the hostile binary is stripped and links a FIFO as its debug file" \
	bash -c "readelf -x .gnu_debuglink '$H/hostile' | grep -q hostile.debug && [ -p '$H/hostile.debug' ]"

runuser -u nobody -- "$H/hostile" --threads 1 --seconds 60 --comm "$COMM" \
	>/dev/null 2>&1 &
HOSTILE=$!
at_exit "pkill -u nobody -x $COMM"
sleep 0.5

start_agent fifo --no-setup --comm "$COMM"
curl -s -X POST -H 'Content-Type: application/json' \
	-d '{"sampling_frequency": 99, "timeout_seconds": 2, "format": "folded"}' \
	-o "$T/fifo.folded" -w '%{http_code}' --max-time 20 \
	"$AGENT_URL/profile/cpu" >"$T/fifo.code" &
POST=$!
sleep 1
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$AGENT_URL/healthz")
check "/healthz answers within 1 s while the profile runs" test "$code" = 200
wait "$POST"
check "the profile of the process whose debug link is a FIFO ends on time: 200, its samples" \
	bash -c "[ \"\$(cat '$T/fifo.code')\" = 200 ] && grep -q '^$COMM' '$T/fifo.folded'"
check "a second profile is not refused as busy (nothing was left holding the cache)" \
	bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 -X POST -H 'Content-Type: application/json' \
		-d '{\"timeout_seconds\": 1}' '$AGENT_URL/profile/cpu')\" = 200 ]"
start=$(date +%s%N)
kill -TERM "$AGENT_PID"
timeout 5 tail --pid="$AGENT_PID" -f /dev/null
gone=$((($(date +%s%N) - start) / 1000000))
check "SIGTERM stops the agent within 2 s ($gone ms)" test "$gone" -lt 2000
kill "$HOSTILE" 2>/dev/null
