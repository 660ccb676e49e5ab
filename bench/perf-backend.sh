#!/usr/bin/env bash
# bench/perf-backend.sh - the perf backend (`vmtools-agent profile
# --profiler perf`) against the eBPF backend and against running
# `perf record` + `perf script` by hand, on this machine, with PostgreSQL 15
# under `pgbench -S`:
#
#   (a) extra wall time of a 3-second profile at 99 Hz beyond the 3 seconds
#       (start-up, stopping, reading perf.data, symbolizing, encoding), and
#       each one's CPU time (user+sys, perf included) and peak RSS
#   (b) pgbench -S TPS lost while profiling at 99 Hz, against no profiler
#
# "By hand" is what a user without the agent would type:
#   perf record -F 99 -a -g -o FILE -- sleep 3 && perf script -i FILE
# (perf's defaults: cycles falling back to cpu-clock here, build ids
# collected at the end into the file and ~/.debug, here a temporary HOME).
# Runs are interleaved (one of each per round), medians reported, ratios
# against the perf backend; prints markdown tables.
#
# usage: BUILD=build bash bench/perf-backend.sh   (ROUNDS=5 TPS_ROUNDS=3)
. "$(dirname "$0")/lib/measure.sh"
bench_prepare
export HOME=$T/home
mkdir -p "$HOME"

PERFB="'$VMTOOLS_AGENT' profile --profiler perf --seconds 3 --frequency 99 --output $T/perfb.pb 2>$T/perfb.err"
BPF="'$VMTOOLS_AGENT' profile --profiler bpf --seconds 3 --frequency 99 --output $T/bpf.pb 2>$T/bpf.err"
HAND="perf record -q -F 99 -a -g -o $T/hand.data -- sleep 3 2>$T/hand.err && perf script -i $T/hand.data >$T/hand.txt 2>>$T/hand.err"

# (a): under load.
pg_bench_bg $((ROUNDS * 25 + 30)) -S -c 2 -j 2
sleep 2
for ((i = 0; i < ROUNDS; i++)); do
	measure perfb "$PERFB" || exit 1
	measure bpf "$BPF" || exit 1
	measure hand "$HAND" || exit 1
done
kill "$PG_BENCH_PID" 2>/dev/null
wait "$PG_BENCH_PID" 2>/dev/null

# (b): TPS of pgbench -S for 5 s, alone or while profiling for 7 s at 99 Hz
# (started 1 s before, so perf's start-up is over when pgbench begins).
for ((i = 0; i < TPS_ROUNDS; i++)); do
	tps "" >>"$T/tps.none"
	tps "'$VMTOOLS_AGENT' profile --profiler perf --seconds 7 --frequency 99 --output $T/t1.pb" >>"$T/tps.perfb"
	tps "'$VMTOOLS_AGENT' profile --profiler bpf --seconds 7 --frequency 99 --output $T/t2.pb" >>"$T/tps.bpf"
	tps "perf record -q -F 99 -a -g -o $T/t3.data -- sleep 7 && perf script -i $T/t3.data >/dev/null" >>"$T/tps.hand"
done

python3 - "$T" "$ROUNDS" "$TPS_ROUNDS" <<'PY'
import statistics as st, sys, os
T, rounds, tps_rounds = sys.argv[1], sys.argv[2], sys.argv[3]
def col(name, i):
    return st.median(float(l.split()[i]) for l in open(os.path.join(T, name)) if l.strip())
def tps(name):
    return st.median(float(l) for l in open(os.path.join(T, "tps." + name)) if l.strip())
rows = [("vmtools-agent profile --profiler perf", "perfb"),
        ("vmtools-agent profile --profiler bpf", "bpf"),
        ("perf record + perf script by hand", "hand")]
base = col("perfb", 0) - 3000
print("| 3-s profile at 99 Hz, pgbench -S running (median of %s interleaved runs) | extra wall time beyond 3 s | vs perf backend | CPU time (user+sys) | peak RSS |" % rounds)
print("|---|---|---|---|---|")
for label, name in rows:
    extra = col(name, 0) - 3000
    ratio = "1x" if name == "perfb" else "%.2fx" % (extra / max(base, 1))
    print("| %s | %d ms | %s | %d ms | %.1f MiB |" % (label, extra, ratio, col(name, 1), col(name, 2) / 1024))
none = tps("none")
print()
print("| pgbench -S TPS while profiling at 99 Hz (median of %s interleaved 5-s runs) | TPS | lost vs none |" % tps_rounds)
print("|---|---|---|")
print("| no profiler | %.0f | |" % none)
for label, name in rows:
    t = tps(name)
    print("| %s | %.0f | %.1f%% |" % (label, t, 100 * (none - t) / none))
PY
