#!/usr/bin/env bash
# tests/integration/83-continuous-faults.sh - the faults windows of
# `serve --continuous --continuous-faults` (docs/continuous.md), with the
# real agent (eBPF), tests/programs/faults-touch as the workload under a
# command name of its own, and tests/lib/pyroscope-standin.py as the push
# target:
#   - --continuous-faults without --continuous, a period out of range and
#     --continuous-faults-period without --continuous-faults exit 2 with a
#     sentence; without --continuous-faults, GET /profile/faults/history
#     says continuous false and .../profile answers 404 naming the option;
#   - with 2 s windows, the faults history's index has its fields (the
#     period, 64 by default) and windows whose faults and bytes add up;
#     256 MiB touched in touch_memory: the faults windows merged
#     (GET /profile/faults/history/profile?from=) have at least 90% of
#     their bytes under touch_memory, at least 230 MiB in all, sample
#     types fault_space/bytes then faults/count, a period of 64 pages,
#     fault_mapping=anonymous on at least 90% of the bytes;
#   - the CPU windows are unchanged: the CPU index has the contract's
#     fields, its windows follow each other, its merge is a CPU profile
#     (samples/count, cpu/nanoseconds) without fault labels; an on-demand
#     faults profile of 64 MiB touched beside the faults windows is whole;
#   - the stand-in files faults windows as faults:fault_space:bytes and
#     CPU windows as process_cpu, each accepted (200);
#   - /healthz and /metrics count the faults windows.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/agent.sh"
. "$SRC/tests/lib/pyroscope-standin.sh"

skip_unless "continuous faults windows" "$(need_bpf)" \
	"$(need_cmd curl go python3 awk protoc-c)"
pprof_home
TOUCH=$BUILD/programs/faults-touch
STACKS=$SRC/tests/lib/pg-stacks.py
COMM=cftouch$(($$ % 10000))
RX=$T/rx

share() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%d\n", (b > 0 ? a * 100 / b : 0) }'; }

# --- 1. options, and the routes when faults windows are off -----------------
# Each line: what the refusal says, then the options refused (exit 2).
while IFS='|' read -r want opts; do
	# shellcheck disable=SC2086 # the options are words
	"$VMTOOLS_AGENT" serve --no-setup --listen 127.0.0.1:0 $opts >"$T/opt.out" 2>&1
	check "serve $opts: exit 2 saying $want" \
		bash -c "[ $? = 2 ] && grep -q -- '$want' '$T/opt.out'"
done <<'EOF'
go with --continuous|--continuous-faults
whole number from 1 to 1000000|--continuous --continuous-faults --continuous-faults-period 0
goes with --continuous-faults|--continuous --continuous-faults-period 16
EOF

start_agent off --no-setup --comm "$COMM" --continuous --continuous-interval 2
check "without --continuous-faults, GET /profile/faults/history says continuous false" \
	bash -c "curl -s '$AGENT_URL/profile/faults/history' | grep -q '\"continuous\": *false'"
code=$(curl -s -o "$T/off.json" -w '%{http_code}' "$AGENT_URL/profile/faults/history/profile?from=-1m")
check "without --continuous-faults, .../profile is 404 naming the option ($code)" \
	bash -c "[ $code = 404 ] && grep -q -- '--continuous-faults' '$T/off.json'"
stop_agent

# --- 2. faults windows beside the CPU windows --------------------------------
# faults-touch waits for the FIFO's writer, fd 8, to be closed: what runs
# in the background meanwhile is started without it (8>&-).
standin_start "$RX"
mkfifo "$T/go"
"$TOUCH" --comm "$COMM" --wait --hold 30 <"$T/go" >"$T/touch.out" &
TOUCH_PID=$!
at_exit "kill -9 $TOUCH_PID"
exec 8>"$T/go"
start_agent main --no-setup --comm "$COMM" --continuous \
	--continuous-interval 2 --continuous-faults \
	--push-url "http://127.0.0.1:$STANDIN_PORT/" 8>&-
# faults_sampling: the faults session runs (it starts beside the CPU one).
faults_sampling() {
	for _ in $(seq 200); do
		curl -s "$AGENT_URL/healthz" | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)['continuous']['faults']['sampling'] else 1)" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
check "/healthz says the faults windows sample" faults_sampling
started=$(date +%s)
exec 8>&-
# The touch has done once the process holds its 256 MiB (RSS in kB); the
# window it ended in is sealed 2 s later at most.
for _ in $(seq 300); do
	rss=$(awk '/^VmRSS:/ { print $2 }' /proc/"$TOUCH_PID"/status 2>/dev/null)
	[ "${rss:-0}" -ge $((256 * 1024)) ] && break
	sleep 0.1
done
diag <<<"faults-touch holds ${rss:-0} kB"
sleep 5

curl -s "$AGENT_URL/profile/faults/history" >"$T/fidx.json"
check "the faults index: continuous, period 64, 2 s, its windows with faults and bytes" \
	python3 -c "import json,sys; d=json.load(open('$T/fidx.json')); w=d['windows']
sys.exit(0 if set(d)=={'continuous','period','interval_seconds','oldest','newest','bytes','dropped_windows','windows'}
	and d['continuous'] is True and d['period']==64 and d['interval_seconds']==2 and len(w)>=2
	and all(set(x)=={'start','end','faults','bytes','lost'} for x in w)
	and all(x['bytes']==x['faults']*$(getconf PAGESIZE) for x in w)
	and all(w[i]['end']<=w[i+1]['start'] for i in range(len(w)-1))
	and sum(x['faults'] for x in w)>0 else 1)"
code=$(curl -s -o "$T/faults.pb" -w '%{http_code}' \
	"$AGENT_URL/profile/faults/history/profile?from=$((started - 1))&until=now")
check "GET /profile/faults/history/profile?from=UNIX&until=now: 200 ($code)" test "$code" = 200
go tool pprof -raw "$T/faults.pb" >"$T/faults.raw" 2>"$T/faults.raw.err"
check "its sample types are fault_space/bytes, then faults/count" \
	grep -q '^fault_space/bytes\[dflt\] *faults/count' "$T/faults.raw"
read -r total under <<<"$(python3 "$STACKS" reach "$T/faults.raw" touch_memory)"
diag <<<"faults windows merged: $((total / 1048576)) MiB sampled, $((under / 1048576)) MiB under touch_memory ($(share "$under" "$total")%)"
check "at least 90% of the faults windows' bytes are under touch_memory ($under of $total)" \
	test "$(share "$under" "$total")" -ge 90
check "at least 230 MiB were sampled of the 256 touched ($((total / 1048576)))" \
	test "${total:-0}" -ge $((230 << 20))
check "its period is 64 faults of a page, in bytes" \
	grep -qx "Period: $((64 * $(getconf PAGESIZE)))" "$T/faults.raw"
anon=$(awk '/^ +[0-9]+ +[0-9]+:/ { v = $1 } /fault_mapping:\[anonymous\]/ { s += v } END { printf "%.0f\n", s }' "$T/faults.raw")
check "the history keeps each stack's mapping kind: at least 90% of the bytes are fault_mapping=anonymous ($anon of $total)" \
	test "$(share "$anon" "${total:-0}")" -ge 90
check "format=folded: the faults windows as folded stacks with touch_memory" \
	bash -c "curl -s '$AGENT_URL/profile/faults/history/profile?from=-1h&format=folded' | grep -q ';touch_memory'"

# --- 3. the CPU windows are unchanged -----------------------------------------
curl -s "$AGENT_URL/profile/cpu/history" >"$T/cidx.json"
check "the CPU index has the contract's fields and windows that follow each other" \
	python3 -c "import json,sys; d=json.load(open('$T/cidx.json')); w=d['windows']
sys.exit(0 if set(d)=={'continuous','frequency','interval_seconds','oldest','newest','bytes','dropped_windows','windows'}
	and d['frequency']==19 and len(w)>=2 and all(set(x)=={'start','end','samples','lost'} for x in w)
	and all(w[i]['end']==w[i+1]['start'] for i in range(len(w)-1)) else 1)"
curl -s -o "$T/cpu.pb" "$AGENT_URL/profile/cpu/history/profile?from=-1h"
go tool pprof -raw "$T/cpu.pb" >"$T/cpu.raw" 2>/dev/null
check "the CPU windows merged are a CPU profile (samples/count, cpu/nanoseconds) without fault labels" \
	bash -c "grep -q '^samples/count *cpu/nanoseconds' '$T/cpu.raw' && ! grep -q fault_mapping '$T/cpu.raw'"

# An on-demand faults profile beside the faults windows: its own events.
(sleep 1 && exec "$TOUCH" --comm "$COMM" --mib 64 --hold 2 >/dev/null) &
code=$(agent_post profile/faults '{"timeout_seconds": 4, "format": "folded"}' "$T/od.folded")
wait $!
od_total=$(awk '{ s += $NF } END { printf "%.0f\n", s }' "$T/od.folded")
od_under=$(awk '/;touch_memory( |;)/ { s += $NF } END { printf "%.0f\n", s }' "$T/od.folded")
check "an on-demand POST /profile/faults beside them: 200, at least 60 MiB, 90% under touch_memory ($code, $od_under of $od_total)" \
	bash -c "[ $code = 200 ] && [ ${od_total:-0} -ge $((60 << 20)) ] && [ $(share "$od_under" "$od_total") -ge 90 ]"

# --- 4. the push, /healthz, /metrics -------------------------------------------
for _ in $(seq 100); do
	grep -q '"profile_type": "faults:fault_space:bytes", "status": 200' "$RX/requests.jsonl" 2>/dev/null && break
	sleep 0.1
done
nf=$(grep -c '"profile_type": "faults:fault_space:bytes", "status": 200' "$RX/requests.jsonl" 2>/dev/null)
nc=$(grep -c '"profile_type": "process_cpu:[a-z]*:[a-z]*", "status": 200' "$RX/requests.jsonl" 2>/dev/null)
diag <<<"the stand-in filed ${nf:-0} faults and ${nc:-0} CPU pushes; $(grep -c . "$RX/requests.jsonl" 2>/dev/null) requests in all"
check "the stand-in files faults windows as faults:fault_space:bytes, accepted" test "${nf:-0}" -ge 1
check "... and CPU windows as process_cpu, accepted" test "${nc:-0}" -ge 1
check "no push was refused" \
	bash -c "! grep -v '\"status\": 200' '$RX/requests.jsonl'"
check "/healthz counts the faults windows, without an error" \
	bash -c "curl -s '$AGENT_URL/healthz' | python3 -c \"import json,sys; f=json.load(sys.stdin)['continuous']['faults']; sys.exit(0 if f['windows']>=2 and f['history_bytes']>0 and f['error'] is None else 1)\""
check "/metrics counts the faults windows and their history" \
	bash -c "curl -s '$AGENT_URL/metrics' >'$T/m.txt' &&
		grep -qE '^vmtools_continuous_faults_windows_total [1-9]' '$T/m.txt' &&
		grep -qE '^vmtools_continuous_faults_sampling 1' '$T/m.txt' &&
		grep -qE '^vmtools_faults_history_bytes [1-9]' '$T/m.txt' &&
		grep -qE '^vmtools_faults_history_dropped_windows_total 0' '$T/m.txt'"
ticks=$(awk '{ print $14 + $15 }' /proc/"$AGENT_PID"/stat)
diag <<<"the agent's CPU time, CPU and faults windows, pushes and the test's queries: $((ticks * 1000 / $(getconf CLK_TCK))) ms over $(($(date +%s) - started)) s"
check "SIGTERM: the agent stops" stop_agent
