#!/usr/bin/env bash
# tests/integration/79-perf-bound.sh - perf.data has a bound
# (agent/profile/perf/perf_bound.c): the perf backend gives perf record
# --max-size, perf stops there by itself, and the profile says it ended
# early.  The bound is lowered to 4 MiB (VMTOOLS_PERF_DATA_MAX, a test's
# knob) and a 5 s profile at 1000 Hz of the burner, recorded with
# --call-graph dwarf (libc has no frame pointers: 16 KiB of stack a
# sample, some 17 MB a second for the burner alone), passes it within a
# second.  Checked: perf
# is given the bound, the file (watched through the agent's descriptor
# until the answer) stays under it plus what perf flushes from its ring
# buffers once stopped and its header, and the profile is answered (200,
# the burner's samples; when, a diagnostic: at once, not after the 5 s)
# with a comment saying it ended early and a duration under the 5 s
# asked.  Without a bound the file grew by 20 to
# 30 MB a second (148 MB in this profile) and a permitted 60 s profile
# took over a gigabyte.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/agent.sh"
. "$SRC/tests/lib/pprof-raw.sh"

skip_unless "perf.data's bound" "$(need_perf)" "$(need_cmd curl go)" \
	"$(need_burn)"
pprof_home
export TMPDIR=$T/tmp
mkdir -p "$TMPDIR"

burn_bg postgres 300
BOUND=$((4 << 20))
start_agent bound VMTOOLS_PERF_DATA_MAX=$BOUND --no-setup \
	--mountpoint "$T/no-image" --perf "$(command -v perf)"
t0=$(date +%s%N)
agent_post profile/cpu '{"profiler": {"Perf": null}, "sampling_frequency": 1000, "timeout_seconds": 5}' \
	"$T/bound.pb.gz" --max-time 60 >"$T/bound.code" &
POST=$!
# perf's command line, and the largest perf.data seen: the agent holds
# the unlinked file from before perf starts until after it is read.
args= max=0
while kill -0 "$POST" 2>/dev/null; do
	for p in $(pgrep -P "$AGENT_PID"); do
		a=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)
		case $a in *record*) args=$a ;; esac
	done
	for fd in /proc/"$AGENT_PID"/fd/*; do
		case $(readlink "$fd" 2>/dev/null) in
		*/perf.data.*)
			size=$(stat -L -c %s "$fd" 2>/dev/null || echo 0)
			[ "$size" -gt "$max" ] && max=$size
			;;
		esac
	done
	sleep 0.02
done
wait "$POST"
diag <<<"answered $((($(date +%s%N) - t0) / 1000000)) ms after the request for 5 s"
code=$(cat "$T/bound.code")
diag <<<"perf ran: $args"
diag <<<"perf.data reached $max bytes, the bound $BOUND"
check "perf is given the bound: --max-size ${BOUND}B" \
	grep -q -- "--max-size ${BOUND}B" <<<"$args"
check "and --call-graph dwarf (the samples that make perf.data large)" \
	grep -q -- "--call-graph dwarf" <<<"$args"
check "the profile answers 200 (got $code)" test "$code" = 200
if [ "$code" != 200 ]; then
	diag <<<"its answer: $(head -c 600 "$T/bound.pb.gz")"
	tail -n 20 "$AGENT_LOG" | diag
fi
read_raw "$T/bound.pb.gz"
check "with the burner's samples" grep -q burn_hot "$T/bound.pb.gz.raw"
check "perf.data passed most of the bound ($max bytes): the profile reached it" \
	test "$max" -ge $((BOUND / 2))
# perf stops at the write that crosses the bound, then flushes its ring
# buffers (512 KiB a CPU at most) and writes its header and features.
slack=$(($(nproc) * (512 << 10) + (512 << 10)))
check "and stayed under the bound plus perf's last flush ($max <= $BOUND + $slack)" \
	test "$max" -le $((BOUND + slack))
comment=$(sed -n 's/^Comment: vmtools: ended early: //p' "$T/bound.pb.gz.raw")
diag <<<"the comment: ${comment:-none}"
check "the profile's comment says it ended early at the bound" \
	grep -q "perf.data reached its bound of $BOUND bytes (perf record --max-size) after .* of the 5 s asked" <<<"$comment"
# In seconds, from -top's "Duration: 251.41ms," or "1.2s," (-raw cuts it).
dur=$(go tool pprof -top "$T/bound.pb.gz" 2>/dev/null | awk '/^Duration:/ {
	d = $2; sub(/,$/, "", d)
	if (sub(/ms$/, "", d)) d /= 1000; else sub(/s$/, "", d)
	print d + 0 }')
check "its duration is when perf stopped, under the 5 s asked (${dur:-?} s)" \
	awk -v d="${dur:-9}" 'BEGIN { exit !(d + 0 < 4.5) }'
check "no perf process of the agent is left" bash -c "! pgrep -P $AGENT_PID"
check "nothing is left in \$TMPDIR" test -z "$(ls -A "$TMPDIR")"
stop_agent
