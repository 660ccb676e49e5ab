#!/usr/bin/env bash
# bench/offcpu-vm.sh - the off-CPU profiler against bcc's offcputime inside
# the qemu guest of tests/vm/10-end-to-end.sh, where bench/offcpu.sh cannot
# compare them on a host whose kernel has no kprobes: Debian 12's 6.1 cloud
# kernel has them, and the tools image carries its headers, which
# `vmtools-agent setup` links at /lib/modules/$(uname -r)/build in the
# guest, where bcc finds them, as a user of the product's image would.
#
# The guest boots (bench/lib/vm-bench.sh: tests/lib/vm/vm.sh, TCG) with an
# initramfs that also has python3, bcc's python module, libbcc with its
# LLVM/clang libraries, offcputime-bpfcc and bpftool
# (tests/lib/vm/initramfs.sh's EXTRA_LIST, built only here and cached), and
# 4 GiB of memory for them.  Its boot (tests/lib/vm/after-setup) starts
# PostgreSQL 15, then runs bench/lib/offcpu-vm-guest.sh instead of the VM
# test's load and agent:
#
#   (a) BPF program run time per context switch with
#       kernel.bpf_stats_enabled=1 under `pgbench -S -c 2 -j 2`: the
#       run_time_ns / run_cnt that our sched_switch program on_switch
#       (`vmtools-agent profile --kind offcpu`) and bcc's finish_task_switch
#       kprobe oncpu (`offcputime-bpfcc -u`, compiled in the guest) add over
#       WINDOW seconds from SETTLE seconds after it began to run, ROUNDS
#       times interleaved; and the CPU time of the profiler's process
#   (c) the floor in the same rounds: bench/lib/stack-cost.bpf.c's programs
#       (the target filter alone, with the kernel stack, the user stack,
#       both, of each switch out of a postgres thread), WINDOW seconds
#       each, as bench/offcpu.sh measures it on the host: what taking
#       exact stacks costs in this guest, whoever takes them
#   (b) pgbench -S TPS over 10 s alone, with ours and with bcc's running,
#       TPS_ROUNDS times interleaved
#
# and prints its figures on the console, which the host reads into a
# markdown table: medians, with the ratio bcc / ours.  The guest's CPUs are
# emulated, so the absolute figures are far above a real machine's; the
# ratio compares both programs in the same guest under the same load.
#
# usage: BUILD=build bash bench/offcpu-vm.sh   (ROUNDS=5 TPS_ROUNDS=3 WINDOW=5 SETTLE=5)
. "$(dirname "$0")/lib/vm-bench.sh"
WINDOW=${WINDOW:-5}
# Seconds between a program's first run and its window.
SETTLE=${SETTLE:-5}
# bcc compiles its program in the guest, under emulation: minutes.
LOAD_TIMEOUT=${LOAD_TIMEOUT:-900}

BCC_FILES=(/usr/bin/python3 /usr/lib/python3.11 /usr/lib/python3/dist-packages/bcc
	/usr/sbin/offcputime-bpfcc /usr/sbin/bpftool
	# loaded with ctypes, which ldd does not see
	/usr/lib/x86_64-linux-gnu/libbcc.so.0 /usr/lib/x86_64-linux-gnu/librt.so.1)
vm_bench_prepare "$SRC/bench/lib/offcpu-vm-guest.sh" "${BCC_FILES[@]}"
stack_cost_build || exit 1
install -m 755 "$T/stack-cost" "$T/stack-cost.bpf.o" "$VM_BENCH_GUEST/usr/lib/vmtest/"
# Boot and PostgreSQL take a few minutes under TCG; each bcc start compiles.
VM_MEMORY=4G
vm_bench_run "$(printf 'ROUNDS=%d TPS_ROUNDS=%d WINDOW=%d SETTLE=%d TPS_SECONDS=10 LOAD_TIMEOUT=%d' \
	"$ROUNDS" "$TPS_ROUNDS" "$WINDOW" "$SETTLE" "$LOAD_TIMEOUT")" \
	$((600 + (2 * ROUNDS + TPS_ROUNDS) * (LOAD_TIMEOUT / 3 + 60)))
sed -n 's/^VMBENCH load bcc \(.*\)/# bcc compiled and loaded in \1s/p' "$T/results" | head -n 1 >&2

python3 - "$T/results" "$ROUNDS" "$TPS_ROUNDS" "$WINDOW" <<'PY'
import statistics as st, sys
path, rounds, tps_rounds, window = sys.argv[1:5]
switch, tps, errors, floor = {}, {}, {}, {}
for line in open(path):
    f = line.split()
    if f[1] == "switch" and int(f[4]) > 0:
        switch.setdefault(f[2], []).append((int(f[3]) / int(f[4]), int(f[4]) / float(f[5]), int(f[6]) / float(f[5]) / 10))
    elif f[1] == "tps" and float(f[3]) > 0:
        tps.setdefault(f[2], []).append(float(f[3]))
    elif f[1] == "floor" and int(f[4]) > 0:
        floor.setdefault(f[2], []).append([int(x) for x in f[3:7]])
    elif f[1] == "error":
        errors.setdefault(f[2], " ".join(f[3:]))
def why(name):
    return "not measured: " + errors.get(name, "no result")
rows = (("vmtools-agent profile --kind offcpu (sched_switch raw tracepoint)", "ours"),
        ("bcc offcputime-bpfcc -u (finish_task_switch kprobe)", "bcc"))
print("| off-CPU profile in the qemu guest (TCG), pgbench -S -c 2 -j 2 (median of %s interleaved %s-s windows) | BPF time per switch | bcc / ours | switches/s | its process's CPU |" % (rounds, window))
print("|---|---|---|---|---|")
ours = st.median(v[0] for v in switch["ours"]) if "ours" in switch else None
for label, name in rows:
    if name not in switch:
        print("| %s | %s | | | |" % (label, why(name)))
        continue
    ns = st.median(v[0] for v in switch[name])
    ratio = "%.1fx" % (ns / ours) if ours else ""
    print("| %s | %.0f ns | %s | %.0f | %.1f%% of one vCPU |" % (label, ns, ratio, st.median(v[1] for v in switch[name]), st.median(v[2] for v in switch[name])))
print()
if "filter" in floor:
    base = [ns / c for ns, c, calls, fr in floor["filter"]]
    print("| the floor in the guest: raw tracepoint programs doing only this on sched_switch (median of %s interleaved %s-s windows) | BPF time per switch | bcc / this | one call of bpf_get_stack | frames per call |" % (rounds, window))
    print("|---|---|---|---|---|")
    bcc = st.median(v[0] for v in switch["bcc"]) if "bcc" in switch else None
    print("| target filter only (command name is postgres) | %.0f ns | | | |" % st.median(base))
    for label, name in (("filter + kernel stack of each postgres switch out", "kstack"),
                        ("filter + user stack of each postgres switch out", "ustack"),
                        ("filter + both stacks of each postgres switch out", "both")):
        if name not in floor:
            print("| %s | %s | | | |" % (label, why(name)))
            continue
        v = floor[name]
        ns = st.median(n / c for n, c, calls, fr in v)
        per_call = st.median((n / c - b) * c / max(calls, 1) for (n, c, calls, fr), b in zip(v, base))
        print("| %s | %.0f ns | %s | %.0f ns | %.1f |" % (label, ns, "%.1fx" % (bcc / ns) if bcc else "", per_call,
              st.median(fr / max(calls, 1) for n, c, calls, fr in v)))
    print()
print("| pgbench -S TPS in the guest (median of %s interleaved 10-s runs) | TPS | lost |" % tps_rounds)
print("|---|---|---|")
none = st.median(tps["none"]) if "none" in tps else None
print("| no profiler | %s | |" % ("%.0f" % none if none else why("none")))
for label, name in rows:
    if name not in tps:
        print("| %s | %s | |" % (label, why(name)))
        continue
    t = st.median(tps[name])
    print("| %s | %.0f | %s |" % (label, t, "%.1f%%" % (100 * (none - t) / none) if none else ""))
print()
print("Absolute times are under TCG emulation (qemu without KVM), so far larger than on hardware; the ratio compares both programs in the same guest under the same load.")
PY
