#!/usr/bin/env bash
# tests/integration/86-continuous-push.sh - `serve --continuous --push-url`
# against tests/lib/pyroscope-standin.py, a stand-in written for this test
# that enforces what Pyroscope's ingest handler checks (path, name with
# labels, from/until, the multipart field profile) and answers as told;
# go tool pprof judges the bodies it received.  Down, slow, 413 and 500
# servers: nothing lost within the queue bound, 413 dropped for good,
# memory flat, every outcome counted, and a restart while the server is
# down loses nothing (the queue is spooled in --history-dir).
# Checked of each request: the path, name with host and kernel labels, the
# bearer token, X-Scope-OrgID, bodies go tool pprof reads.  A server down
# longer than the queue of 8 windows: the oldest dropped and counted, RSS
# flat.  SIGTERM while a window goes to a server that does not answer: the
# agent exits (within a generous 5 s, not timed), status 0, the window still
# spooled, no temporary file.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/agent.sh"
. "$SRC/tests/lib/pyroscope-standin.sh"

skip_unless "pushing windows to a Pyroscope stand-in" "$(need_bpf)" \
	"$(need_cmd curl go python3)" "$(need_burn)"
pprof_home

COMM=c15push
RX=$T/rx
mkdir -p "$RX"
echo ok >"$RX/mode"
printf 'sekret\n' >"$T/token"
chmod 600 "$T/token"

# metric NAME: its value in /metrics.
metric() {
	curl -s "$AGENT_URL/metrics" | awk -v m="$1" '$1 == m {print $2}'
}

# received: windows the stand-in accepted (200), by distinct from.
received() {
	python3 -c "import json; print(len({r['from'] for r in map(json.loads, open('$RX/requests.jsonl')) if r['status']==200}))" 2>/dev/null || echo 0
}

# sealed: windows the agent has sealed so far.
sealed() { metric vmtools_continuous_windows_total; }

# settle: wait until the agent's queue is empty (at most 20 s).
settle() {
	for ((i = 0; i < 200; i++)); do
		[ "$(metric vmtools_push_queued)" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}

# all_sent DESC: every window sealed so far reached the stand-in, once
# the queue is empty (windows sealed meanwhile may be sent already too).
all_sent() {
	local s r
	s=$(sealed)
	settle
	r=$(received)
	check "$1: every window sealed reached the stand-in ($r of at least $s)" \
		test "$r" -ge "$s"
}

burn_bg "$COMM" 300
standin_start "$RX"
start_agent main VMTOOLS_PUSH_BACKOFF_MS=300 VMTOOLS_PUSH_QUEUE_MAX=8 \
	--no-setup --comm "$COMM" --continuous --continuous-interval 1 \
	--history-dir "$T/hist" --push-url "http://127.0.0.1:$STANDIN_PORT/" \
	--push-token-file "$T/token" --push-tenant team-7
sleep 4.5
settle
check "windows reach the stand-in (it accepted $(received) of $(sealed))" \
	test "$(received)" -ge 3
check "every push was accepted: counted ok, no retry, no rejection" \
	bash -c "[ '$(metric 'vmtools_push_total{outcome="ok"}')' -ge 3 ] &&
		[ '$(metric 'vmtools_push_total{outcome="retry"}')' = 0 ] &&
		[ '$(metric 'vmtools_push_total{outcome="rejected"}')' = 0 ]"
first=$(head -1 "$RX/requests.jsonl")
check "POST /ingest, name=postgres{host=..,kernel=$(uname -r)}" \
	python3 -c "import json,sys; r=json.loads('''$first''');
sys.exit(0 if r['path']=='/ingest' and r['name']=='postgres{host=$(hostname),kernel=$(uname -r)}' else 1)"
check "bearer token from --push-token-file, X-Scope-OrgID from --push-tenant" \
	python3 -c "import json,sys; r=json.loads('''$first''');
sys.exit(0 if r['auth']=='Bearer sekret' and r['tenant']=='team-7' else 1)"
body=$(ls "$RX"/*.pb.gz | head -1)
check "the field profile is a pprof go tool pprof reads, with the burner in it" \
	bash -c "go tool pprof -top '$body' >'$T/b.txt' 2>'$T/b.err' && [ ! -s '$T/b.err' ] && grep -q burn_hot '$T/b.txt'"

# 500 for 3 s, then 200: the failed windows are sent again, none lost.
rss0=$(awk '/VmRSS/ {print $2}' "/proc/$AGENT_PID/status")
echo 500 >"$RX/mode"
sleep 3
echo ok >"$RX/mode"
all_sent "after 500s"
check "500s are counted as retries" \
	test "$(metric 'vmtools_push_total{outcome="retry"}')" -ge 1

# Slow: 1.5 s per answer for 4 s; profiling goes on, nothing lost.
echo "slow 1.5" >"$RX/mode"
sleep 4
echo ok >"$RX/mode"
all_sent "after a slow server"

# Down for 4 s (within the queue bound of 8 windows), then back.
standin_stop
sleep 4
standin_start "$RX" "$STANDIN_PORT"
all_sent "after the server was down 4 s"

# 413: refused for good, not sent again; the others go on.
rej0=$(metric 'vmtools_push_total{outcome="rejected"}')
echo 413 >"$RX/mode"
sleep 2.5
echo ok >"$RX/mode"
s413=$(sealed)
settle
rej=$(metric 'vmtools_push_total{outcome="rejected"}')
check "413: counted as rejected, dropped ($rej0 -> $rej)" test "$rej" -gt "$rej0"
n413=$(grep -c '"status": 413' "$RX/requests.jsonl")
check "413: each refused window was sent once ($n413 answers = $rej rejections)" \
	test "$n413" = "$rej"
check "413: received + rejected covers every window sealed" \
	test $(($(received) + rej)) -ge "$s413"

# Down longer than the queue holds: the oldest go, counted, memory flat.
standin_stop
sleep 14
queued=$(metric vmtools_push_queued)
dropped=$(metric 'vmtools_push_total{outcome="dropped"}')
check "down 14 s with a queue of 8: at most 8 queued ($queued), the rest dropped ($dropped)" \
	bash -c "[ $queued -le 8 ] && [ $dropped -ge 4 ]"
rss1=$(awk '/VmRSS/ {print $2}' "/proc/$AGENT_PID/status")
check "memory flat through the outage (RSS $rss0 -> $rss1 KiB)" \
	test $((rss1 - rss0)) -lt 8192

# A restart while the server is down: the spooled queue goes out after it.
stop_agent
spooled=$(ls "$T/hist/push" | wc -l)
check "the queue is spooled in --history-dir/push ($spooled windows)" test "$spooled" -ge 1
standin_start "$RX" "$STANDIN_PORT"
before=$(received)
start_agent again VMTOOLS_PUSH_BACKOFF_MS=300 --no-setup --comm "$COMM" \
	--continuous --continuous-interval 1 --history-dir "$T/hist" \
	--push-url "http://127.0.0.1:$STANDIN_PORT" --push-token-file "$T/token"
sleep 2
settle
check "after the restart the spooled windows are sent (received $before -> $(received))" \
	test "$(received)" -ge $((before + spooled))
check "after the restart the spool is empty" \
	bash -c "[ -z \"\$(ls '$T/hist/push')\" ]"

# SIGTERM while a window is being sent to a server that does not answer:
# the transfer is abandoned, the agent exits (checked within a generous
# 5 s, not timed) and the window stays spooled for the next start.
echo "slow 60" >"$RX/mode"
sleep 2.5
kill "$AGENT_PID"
for _ in $(seq 100); do
	kill -0 "$AGENT_PID" 2>/dev/null || break
	sleep 0.05
done
check "SIGTERM during a transfer to a silent server: the agent has exited within 5 s" \
	bash -c "! kill -0 $AGENT_PID 2>/dev/null"
wait "$AGENT_PID"
check "... with status 0" test $? = 0
check "... the window being sent is still spooled" \
	bash -c "[ -n \"\$(ls '$T/hist/push')\" ]"
check "... no temporary file left" \
	bash -c "[ -z \"\$(find '$T/hist' -name '.tmp-*')\" ]"
