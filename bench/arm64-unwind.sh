#!/usr/bin/env bash
# bench/arm64-unwind.sh - what walking a CPU sample's user stack with the
# unwinder's arm64 rules (unwind tables from .eh_frame, in BPF) costs
# against walking it by frame pointer, both in the arm64 guest of
# tests/vm/40-arm64.sh (bench/lib/vm-bench.sh with VM_ARCH=arm64: Debian
# 12's arm64 cloud kernel under qemu-system-aarch64, emulated, pointer
# authentication on).  tests/programs/nofp.c is cross-compiled twice
# (aarch64-linux-gnu-gcc, -O2, the same stacks): `fp` with frame pointers
# and no unwind tables, whose callers the BPF program finds by frame
# pointer, and `table` without frame pointers and with .eh_frame, whose
# callers it finds with the tables.  bench/lib/arm64-unwind-guest.sh
# profiles each alone by pid, ROUNDS rounds, the order alternating, and
# reads over WINDOW seconds of each, SETTLE seconds after do_sample began:
#
#   do_sample's run_time_ns over the target's samples (the profiler's own
#   `stats`): BPF time per sample of the workload, the walk included, and
#   its callers found by table and by frame pointer (which path ran)
#
# and prints a markdown table: medians with their range, and the ratio
# table / frame pointer taken round by round.  The guest's CPUs are
# emulated, so absolute times are far above a real machine's; the ratio
# compares the two paths in the same guest.
#
# usage: BUILD=build bash bench/arm64-unwind.sh   (ROUNDS=5 WINDOW=10 SETTLE=3)
VM_ARCH=arm64
. "$(dirname "$0")/lib/vm-bench.sh"
WINDOW=${WINDOW:-10}
SETTLE=${SETTLE:-3}
# Loading and verifying the programs, under emulation.
LOAD_TIMEOUT=${LOAD_TIMEOUT:-600}

stats=$(vm_bench_stats SAMPLES FRAMES_TABLE FRAMES_FP WALKS_CUT) || exit 1

command -v aarch64-linux-gnu-gcc >/dev/null ||
	{ echo "bench/arm64-unwind.sh: cannot run: needs aarch64-linux-gnu-gcc (ci/install-deps.sh)" >&2; exit 1; }
vm_bench_prepare "$SRC/bench/lib/arm64-unwind-guest.sh"
if [ "$VM_AGENT" = none ]; then
	echo "bench/arm64-unwind.sh: cannot run: $VM_AGENT_MISSING" >&2
	exit 1
fi
# The two builds, each with its libnofp.so beside it ($ORIGIN).
CC=aarch64-linux-gnu-gcc
# No -g: .debug_frame would give the fp build's functions rules again.
COMMON=(-std=gnu11 -O2 -pthread -fno-optimize-sibling-calls)
FP=(-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables)
TABLE=(-fomit-frame-pointer -fasynchronous-unwind-tables)
for mode in fp table; do
	d=$VM_BENCH_GUEST/usr/lib/vmtest/$mode
	mkdir -p "$d"
	if [ $mode = fp ]; then flags=("${FP[@]}"); else flags=("${TABLE[@]}"); fi
	$CC "${COMMON[@]}" "${flags[@]}" -fPIC -shared -o "$d/libnofp.so" "$SRC/tests/programs/nofplib.c" &&
		$CC "${COMMON[@]}" "${flags[@]}" -o "$d/nofp" "$SRC/tests/programs/nofp.c" -L"$d" -lnofp -ldl \
			-Wl,-rpath,'$ORIGIN' || { echo "bench/arm64-unwind.sh: cannot build the $mode workload" >&2; exit 1; }
done
# What each build has: the fp one no FDE of its own functions (those of
# the C library's start files only).
for mode in fp table; do
	echo "# $mode: $(readelf --debug-dump=frames "$VM_BENCH_GUEST/usr/lib/vmtest/$mode/nofp" 2>/dev/null |
		awk '/^Contents of the/ { s = $4 } / FDE / { n[s]++ } END { for (k in n) printf "%s %d FDEs ", k, n[k] }')" >&2
done
# Boot and PostgreSQL take a few minutes emulated; each profile loads,
# samples SETTLE + WINDOW + 5 seconds and symbolizes.
vm_bench_run "ROUNDS=$ROUNDS WINDOW=$WINDOW SETTLE=$SETTLE LOAD_TIMEOUT=$LOAD_TIMEOUT STATS=\"$stats\"" \
	$((900 + 2 * (ROUNDS + 1) * (SETTLE + WINDOW + 300)))

PYTHONPATH=$SRC/bench/lib python3 - "$T/results" "$WINDOW" <<'PY'
import statistics as st, sys
from vm_rounds import read, paired, ns, values, ratio, table
path, window = sys.argv[1:3]
def sample(f):
    if f[0] == "warm":
        return None
    v = dict(zip(("ns", "runs", "samples", "table", "fp", "cut"), (int(x) for x in f[2:8])))
    n = v["samples"]
    if v["runs"] <= 0 or n <= 0:
        return "%s round %s: %d runs, %d samples" % (f[1], f[0], v["runs"], n)
    # Time over the workload's own samples: the other CPU's are cheap.
    return f[1], f[0], dict(ns=v["ns"] / n, frames=(n + v["table"] + v["fp"]) / n,
                            by_table=v["table"] / max(v["table"] + v["fp"], 1), cut=v["cut"] / n)
fp, tables, both = paired(*read(path, sample), "fp", "table", "bench/arm64-unwind.sh")
of = lambda w, key: values(w, key, both)
table(["rounds (%s-s windows, interleaved)" % window, "BPF time per sample, frame pointers",
       "unwind tables", "tables / frame pointers", "user frames per sample, fp / table",
       "callers by table, fp / table"],
      ["%d" % len(both), "%s ns" % ns(of(fp, "ns")), "%s ns" % ns(of(tables, "ns")),
       "%.2fx (%.2fx–%.2fx)" % ratio(fp, tables, "ns", both),
       "%.1f / %.1f" % (st.median(of(fp, "frames")), st.median(of(tables, "frames"))),
       "%.0f%% / %.0f%%" % (100 * st.median(of(fp, "by_table")), 100 * st.median(of(tables, "by_table")))])
print()
print("do_sample's time over the samples of tests/programs/nofp.c built twice for arm64, in the qemu-system-aarch64 guest "
      "(emulated, Debian's 6.1 arm64 cloud kernel): medians (range) over the rounds; walks cut short %.1f%% and %.1f%%. "
      "Absolute times are under emulation; the ratio compares the two paths in the same guest." % (
          100 * st.median(of(fp, "cut")), 100 * st.median(of(tables, "cut"))))
PY
