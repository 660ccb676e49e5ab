#!/usr/bin/env bash
# bench/unwind-vm.sh - what walking a CPU sample's user stack with unwind
# tables in BPF (bpf/unwind.bpf.h) costs when the kernel interprets the
# program, as Neon's guest kernels, built without CONFIG_BPF_JIT, do;
# against the JIT of the same kernel.  In the qemu guest of tests/vm/*.sh
# (bench/lib/vm-bench.sh: Debian 12's 6.1 cloud kernel, TCG), whose
# initramfs also has bpftool, PostgreSQL 15 runs `pgbench -S -c 2 -j 2`
# and bench/lib/unwind-vm-guest.sh, beside one `vmtools-agent serve` (its
# tables and symbols cached by a first profile), takes ROUNDS rounds (the
# order alternating) of two CPU profiles (POST /profile/cpu), one loaded
# with net.core.bpf_jit_enable=1 and one with 0, and reads over WINDOW
# seconds of each, SETTLE seconds after its sampling program do_sample
# began to run:
#
#   do_sample's run_time_ns / run_cnt (kernel.bpf_stats_enabled=1): BPF
#   time per sample, whoever the sample is of
#   the profiler's own counters (bpf/profile.h's `stats`): the samples of
#   postgres processes and the callers their walks found by unwind table
#   and by frame pointer, so user frames per sample (the sample's pc and
#   its callers) and BPF time per user frame (all of do_sample's time over
#   all the frames it took)
#
# and prints a markdown table: medians with their range, and the ratio
# interpreted / JIT taken round by round.  The guest's CPUs are emulated,
# so the absolute times are far above a real machine's; the ratio compares
# the two in the same guest, under the same load, interleaved.
#
# usage: BUILD=build bash bench/unwind-vm.sh   (ROUNDS=5 WINDOW=10 SETTLE=3)
. "$(dirname "$0")/lib/vm-bench.sh"
WINDOW=${WINDOW:-10}
# Seconds between the program's first run and its window.
SETTLE=${SETTLE:-3}
# Loading and verifying the programs, under emulation.
LOAD_TIMEOUT=${LOAD_TIMEOUT:-300}

stats=$(vm_bench_stats SAMPLES FRAMES_TABLE FRAMES_FP WALKS_CUT WALKS_KERNEL) || exit 1

vm_bench_prepare "$SRC/bench/lib/unwind-vm-guest.sh" /usr/sbin/bpftool
# Boot and PostgreSQL take a few minutes under TCG; each profile loads,
# samples SETTLE + WINDOW + 5 seconds and symbolizes.
vm_bench_run "ROUNDS=$ROUNDS WINDOW=$WINDOW SETTLE=$SETTLE LOAD_TIMEOUT=$LOAD_TIMEOUT STATS=\"$stats\"" \
	$((600 + 2 * ROUNDS * (SETTLE + WINDOW + 180)))

PYTHONPATH=$SRC/bench/lib python3 - "$T/results" "$WINDOW" <<'PY'
import statistics as st, sys
from vm_rounds import read, paired, ns, values, ratio, table
path, window = sys.argv[1:3]
def sample(f):
    rnd, mode, jited = f[0], f[1], int(f[2])
    ns, runs, samples, table, fp, cut, kernel = (int(x) for x in f[3:10])
    if runs <= 0 or not 0 < samples <= runs or jited != (mode == "jit"):
        return "%s round %s: %d runs, %d samples, JITed %d" % (mode, rnd, runs, samples, jited)
    frames = samples + table + fp
    return mode, rnd, dict(ns=ns / runs, frames=frames / samples, per_frame=ns / frames,
                           rate=runs / float(f[10]), share=samples / runs,
                           cut=cut / samples, kernel=kernel / samples)
jit, interp, both = paired(*read(path, sample), "jit", "interpreted", "bench/unwind-vm.sh")
of = lambda w, key: values(w, key, both)
table(["rounds (%s-s windows, interleaved)" % window, "BPF time per sample, JIT", "interpreted",
       "interpreted / JIT", "user frames per sample, JIT / interpreted", "BPF time per user frame, JIT",
       "interpreted"],
      ["%d" % len(both), "%s ns" % ns(of(jit, "ns")), "%s ns" % ns(of(interp, "ns")),
       "%.2fx (%.2fx–%.2fx)" % ratio(jit, interp, "ns", both),
       "%.1f / %.1f" % (st.median(of(jit, "frames")), st.median(of(interp, "frames"))),
       "%s ns" % format(round(st.median(of(jit, "per_frame"))), ","),
       "%s ns" % format(round(st.median(of(interp, "per_frame"))), ",")])
print()
print("do_sample, in the qemu guest (TCG, Debian 6.1), under pgbench -S -c 2 -j 2 on PostgreSQL 15: medians (range) over the rounds; "
      "%.0f and %.0f runs/s (JIT, interpreted), %.0f%% and %.0f%% of them samples of postgres processes; "
      "walks cut short %.1f%% and %.1f%%, stacks left to bpf_get_stack %.1f%% and %.1f%% of those samples. "
      "Absolute times are under emulation, far above a real machine's; the ratio compares the two in the same guest." % (
          st.median(of(jit, "rate")), st.median(of(interp, "rate")),
          100 * st.median(of(jit, "share")), 100 * st.median(of(interp, "share")),
          100 * st.median(of(jit, "cut")), 100 * st.median(of(interp, "cut")),
          100 * st.median(of(jit, "kernel")), 100 * st.median(of(interp, "kernel"))))
PY
