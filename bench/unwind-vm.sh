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

# stat_index NAME: NAME's index in bpf/profile.h's enum profile_stat, the
# layout of the profiler's `stats` map.
stat_index() {
	awk -v want="$1" '
		$0 == "enum profile_stat {" { on = 1; next }
		on && $1 ~ /^}/ { exit }
		on && $1 ~ /^PROFILE_STAT_/ { sub(",", "", $1); if ($1 == want) { print i + 0; exit } i++ }' "$SRC/bpf/profile.h"
}
stats=""
for s in SAMPLES FRAMES_TABLE FRAMES_FP WALKS_CUT WALKS_KERNEL; do
	i=$(stat_index "PROFILE_STAT_$s")
	[ -n "$i" ] || { echo "bench/unwind-vm.sh: no PROFILE_STAT_$s in bpf/profile.h" >&2; exit 1; }
	stats+=${stats:+ }$i
done

vm_bench_prepare "$SRC/bench/lib/unwind-vm-guest.sh" /usr/sbin/bpftool
# Boot and PostgreSQL take a few minutes under TCG; each profile loads,
# samples SETTLE + WINDOW + 5 seconds and symbolizes.
vm_bench_run "ROUNDS=$ROUNDS WINDOW=$WINDOW SETTLE=$SETTLE LOAD_TIMEOUT=$LOAD_TIMEOUT STATS=\"$stats\"" \
	$((600 + 2 * ROUNDS * (SETTLE + WINDOW + 180)))

python3 - "$T/results" "$WINDOW" <<'PY'
import statistics as st, sys
path, window = sys.argv[1:3]
win, errors = {}, []
for line in open(path):
    f = line.split()
    if f[1] == "sample":
        rnd, mode, jited = f[2], f[3], int(f[4])
        ns, runs, samples, table, fp, cut, kernel = (int(x) for x in f[5:12])
        if runs <= 0 or not 0 < samples <= runs or jited != (mode == "jit"):
            errors.append("%s round %s: %d runs, %d samples, JITed %d" % (mode, rnd, runs, samples, jited))
            continue
        frames = samples + table + fp
        win.setdefault(mode, {})[rnd] = dict(ns=ns / runs, frames=frames / samples, per_frame=ns / frames,
                                             rate=runs / float(f[12]), share=samples / runs,
                                             cut=cut / samples, kernel=kernel / samples)
    elif f[1] == "error":
        errors.append(" ".join(f[2:]))
jit, interp = win.get("jit", {}), win.get("interpreted", {})
both = sorted(set(jit) & set(interp), key=int)
if not both:
    print("bench/unwind-vm.sh: no round measured both: %s" % "; ".join(errors), file=sys.stderr)
    sys.exit(1)
for why in errors:
    print("# not measured: %s" % why, file=sys.stderr)
def med(v):
    v = sorted(v)
    return st.median(v), v[0], v[-1]
def ns(v):
    m, lo, hi = med(v)
    return "%s (%s–%s)" % tuple(format(round(x), ",") for x in (m, lo, hi))
def of(w, key):
    return [w[r][key] for r in both]
ratio = med(interp[r]["ns"] / jit[r]["ns"] for r in both)
print("| rounds (%s-s windows, interleaved) | BPF time per sample, JIT | interpreted | interpreted / JIT | user frames per sample, JIT / interpreted | BPF time per user frame, JIT | interpreted |" % window)
print("|---|---|---|---|---|---|---|")
print("| %d | %s ns | %s ns | %.2fx (%.2fx–%.2fx) | %.1f / %.1f | %s ns | %s ns |" % (
    len(both), ns(of(jit, "ns")), ns(of(interp, "ns")), *ratio,
    st.median(of(jit, "frames")), st.median(of(interp, "frames")),
    format(round(st.median(of(jit, "per_frame"))), ","), format(round(st.median(of(interp, "per_frame"))), ",")))
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
