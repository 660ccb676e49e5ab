#!/usr/bin/env bash
# bench/profile.sh - the eBPF profiler against the tools a user would
# otherwise run, on this machine, with PostgreSQL 15 under `pgbench -S`:
#
#   (a) extra wall time of a 3-second profile beyond the 3 seconds:
#       vmtools-agent profile --seconds 3 -F 99  vs  bcc's profile-bpfcc -F 99 3
#       vs  perf record -F 99 -a -g -- sleep 3 && perf script
#   (b) pgbench -S TPS lost while profiling at 99 Hz: none vs ours vs perf,
#       with the profiler's start-up and end inside the 5-s window, and
#       with sampling alone
#   (c) each profiler's own CPU time (user+sys) and peak RSS
#
# Runs are interleaved (one of each per round) and medians reported, with
# ratios against ours; prints a markdown table.  bcc needs kernel headers:
# the running kernel has none here, so Debian's 6.1 headers (from
# tests/lib/fetch-kernel.sh) are overlaid in a private mount namespace and
# given to bcc with BCC_KERNEL_SOURCE; the host is not modified.
#
# usage: BUILD=build bash bench/profile.sh   (ROUNDS=5 TPS_ROUNDS=3)
. "$(dirname "$0")/lib/measure.sh"
bench_prepare

# bcc with Debian's 6.1 headers, in a private mount namespace.
BCC=$(bcc_command profile-bpfcc -F 99 3)

OURS="'$VMTOOLS_AGENT' profile --seconds 3 --frequency 99 --output $T/ours.pb 2>$T/ours.err"
PERF="perf record -q -F 99 -a -g -o $T/perf.data -- sleep 3 2>$T/perf.err && perf script -i $T/perf.data >$T/perf.txt 2>>$T/perf.err"

# (a) and (c): under load.
pg_bench_bg $((ROUNDS * 25 + 30)) -S -c 2 -j 2
sleep 2
for ((i = 0; i < ROUNDS; i++)); do
	measure ours "$OURS"
	[ -n "$BCC" ] && measure bcc "$BCC"
	measure perf "$PERF"
done
kill "$PG_BENCH_PID" 2>/dev/null
wait "$PG_BENCH_PID" 2>/dev/null

# (b): TPS of pgbench -S for 5 s, alone or while profiling at 99 Hz:
# "whole", the profiler started 0.5 s before pgbench and ending 0.5 s after
# it (its start-up and its end fall inside the window); "steady", started
# 1.5 s before and ending 1.5 s after (sampling alone).
for ((i = 0; i < TPS_ROUNDS; i++)); do
	for w in "whole 0.5 6" "steady 1.5 8"; do
		set -- $w
		tps "" "$2" >>"$T/tps.none.$1"
		tps "'$VMTOOLS_AGENT' profile --seconds $3 --frequency 99 --output $T/t.pb" "$2" >>"$T/tps.ours.$1"
		tps "perf record -q -F 99 -a -g -o $T/tperf.data -- sleep $3 && perf script -i $T/tperf.data >/dev/null" "$2" >>"$T/tps.perf.$1"
	done
done

python3 - "$T" "$ROUNDS" "$TPS_ROUNDS" "${BCC:+yes}" <<'PY'
import statistics as st, sys, os
T, rounds, tps_rounds, have_bcc = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
def col(name, i):
    p = os.path.join(T, name)
    if not os.path.exists(p):
        return None
    return st.median(float(l.split()[i]) for l in open(p) if l.strip())
def tps(name):
    return st.median(float(l) for l in open(os.path.join(T, "tps." + name)) if l.strip())
rows = [("vmtools-agent profile (eBPF)", "ours"), ("bcc profile-bpfcc", "bcc"), ("perf record + perf script", "perf")]
ours_extra = col("ours", 0) - 3000
print("| 3-s profile at 99 Hz, pgbench -S running (median of %s interleaved runs) | extra wall time beyond 3 s | vs ours | CPU time (user+sys) | peak RSS |" % rounds)
print("|---|---|---|---|---|")
for label, name in rows:
    wall = col(name, 0)
    if wall is None:
        print("| %s | not run (no kernel headers for bcc) | | | |" % label)
        continue
    extra = wall - 3000
    ratio = "1x" if name == "ours" else "%.0fx" % (extra / max(ours_extra, 1))
    print("| %s | %d ms | %s | %d ms | %.1f MiB |" % (label, extra, ratio, col(name, 1), col(name, 2) / 1024))
print()
print("| pgbench -S TPS while profiling at 99 Hz (median of %s interleaved 5-s runs) | whole: profiler's start and end inside the window | lost | steady: sampling only | lost |" % tps_rounds)
print("|---|---|---|---|---|")
none = {w: tps("none." + w) for w in ("whole", "steady")}
print("| no profiler | %.0f | | %.0f | |" % (none["whole"], none["steady"]))
for label, name in (("vmtools-agent profile (eBPF)", "ours"), ("perf record -a -g", "perf")):
    cells = []
    for w in ("whole", "steady"):
        t = tps(name + "." + w)
        cells += ["%.0f" % t, "%.1f%%" % (100 * (none[w] - t) / none[w])]
    print("| %s | %s |" % (label, " | ".join(cells)))
PY
