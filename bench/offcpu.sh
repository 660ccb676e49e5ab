#!/usr/bin/env bash
# bench/offcpu.sh - the off-CPU profiler against bcc's offcputime, the tool
# a user would otherwise run, with PostgreSQL 15 under `pgbench -S`
# saturating both cores (tens of thousands of context switches a second,
# the program running on each):
#
#   (a) BPF program run time per context switch, from the kernel's own
#       accounting (kernel.bpf_stats_enabled=1 while the bench runs, then
#       put back): run_time_ns / run_cnt of our sched_switch program
#       (`vmtools-agent profile --kind offcpu`) vs bcc's finish_task_switch
#       kprobe (`offcputime-bpfcc -u`), read with bpftool over 3 s while
#       each runs (bcc's once it has compiled)
#   (c) the floor: what taking exact stacks costs on this kernel at the
#       least, whoever takes them.  bench/lib/stack-cost.bpf.c's programs,
#       one at a time on the same raw tracepoint for 3 s each in the same
#       rounds: the target filter alone, then with bpf_get_stack() of the
#       kernel stack, of the user stack, and of both on every switch out
#       of a postgres thread.  Their difference from the filter alone,
#       over the calls made, is what one call of the helper costs
#   (b) pgbench -S TPS for 5 s alone, while our off-CPU profile runs,
#       while offcputime-bpfcc runs, and while `perf record -e
#       sched:sched_switch -a -g` does (what perf offers where its
#       --off-cpu is not built in, as in Debian's 6.1); each started before
#       pgbench and ending after it (bcc 6 s before: it compiles first), so
#       the window sees their recording only
#
# bcc's offcputime attaches a kprobe: on a kernel without CONFIG_KPROBES
# it cannot run at all, and the table says so (ours needs no kprobe).
#
# Runs are interleaved (one of each per round), medians reported with
# ratios against ours, as a markdown table.  bcc compiles against Debian's
# 6.1 headers (bench/lib/measure.sh's bcc_command).
#
# usage: BUILD=build bash bench/offcpu.sh   (ROUNDS=5 TPS_ROUNDS=3)
. "$(dirname "$0")/lib/measure.sh"
bench_prepare
bpf_stats_on

BCC=""
NO_BCC="not run: $(bcc_command offcputime-bpfcc -u -f 12 2>&1 >/dev/null | sed 's/.*: //')"
if [ ! -e /sys/bus/event_source/devices/kprobe ]; then
	NO_BCC="cannot run here: this kernel has no kprobes (CONFIG_KPROBES), which offcputime needs"
else
	BCC=$(bcc_command offcputime-bpfcc -u -f 12)
fi
stack_cost_build || exit 1
FLOOR="filter kstack ustack both"

PERF="perf record -q -e sched:sched_switch -a -g -o $T/perf.data -- sleep 8"

pg_bench_bg $((ROUNDS * 30 + 30)) -S -c 2 -j 2
sleep 2
for ((i = 0; i < ROUNDS; i++)); do
	bpf_run_time ours on_switch "'$VMTOOLS_AGENT' profile --kind offcpu --seconds 8 --output $T/ours.pb"
	[ -n "$BCC" ] && bpf_run_time bcc oncpu "$BCC"
	for f in $FLOOR; do
		"$T/stack-cost" "$T/stack-cost.bpf.o" "$f" 3 >>"$T/floor.$f" || exit 1
	done
done
kill "$PG_BENCH_PID" 2>/dev/null
wait "$PG_BENCH_PID" 2>/dev/null

for ((i = 0; i < TPS_ROUNDS; i++)); do
	tps "" 1.5 >>"$T/tps.none"
	tps "'$VMTOOLS_AGENT' profile --kind offcpu --seconds 8 --output $T/t.pb" 1.5 >>"$T/tps.ours"
	[ -n "$BCC" ] && tps "$BCC" 6 >>"$T/tps.bcc"
	tps "$PERF" 1.5 >>"$T/tps.perf"
done

python3 - "$T" "$ROUNDS" "$TPS_ROUNDS" "$NO_BCC" <<'PY'
import os, statistics as st, sys
T, rounds, tps_rounds, no_bcc = sys.argv[1:5]
def per_switch(name):
    p = os.path.join(T, name)
    if not os.path.exists(p):
        return None
    v = [l.split() for l in open(p) if l.strip()]
    return st.median(float(ns) / max(float(c), 1) for ns, c in v), st.median(float(c) / 3 for ns, c in v)
def tps(name):
    p = os.path.join(T, "tps." + name)
    return st.median(float(l) for l in open(p) if l.strip()) if os.path.exists(p) else None
rows = (("vmtools-agent profile --kind offcpu (sched_switch raw tracepoint)", "ours"),
        ("bcc offcputime-bpfcc -u (finish_task_switch kprobe)", "bcc"))
ours = per_switch("ours")
print("| off-CPU profile, pgbench -S -c 2 -j 2 (median of %s interleaved runs) | BPF time per switch | vs ours | switches/s |" % rounds)
print("|---|---|---|---|")
for label, name in rows:
    r = per_switch(name)
    if r is None:
        print("| %s | %s | | |" % (label, no_bcc))
        continue
    print("| %s | %.0f ns | %.1fx | %.0f |" % (label, r[0], r[0] / max(ours[0], 1), r[1]))
print()
def floor(name):
    v = [[float(x) for x in l.split()] for l in open(os.path.join(T, "floor." + name)) if l.strip()]
    return v
base = [ns / max(c, 1) for ns, c, calls, fr in floor("filter")]
print("| the floor: raw tracepoint programs doing only this on sched_switch, pgbench -S -c 2 -j 2 (median of %s interleaved 3-s runs) | BPF time per switch | stack calls per switch | one call of bpf_get_stack | frames per call |" % rounds)
print("|---|---|---|---|---|")
print("| target filter only (command name is postgres) | %.0f ns | | | |" % st.median(base))
for label, name in (("filter + kernel stack of each postgres switch out", "kstack"),
                    ("filter + user stack of each postgres switch out", "ustack"),
                    ("filter + both stacks of each postgres switch out", "both")):
    v = floor(name)
    per = [ns / max(c, 1) for ns, c, calls, fr in v]
    per_call = [(ns / max(c, 1) - b) * c / max(calls, 1) for (ns, c, calls, fr), b in zip(v, base)]
    print("| %s | %.0f ns | %.2f | %.0f ns | %.1f |" % (label, st.median(per),
          st.median(calls / max(c, 1) for ns, c, calls, fr in v),
          st.median(per_call), st.median(fr / max(calls, 1) for ns, c, calls, fr in v)))
print()
none = tps("none")
print("| pgbench -S TPS (median of %s interleaved 5-s runs) | TPS | lost |" % tps_rounds)
print("|---|---|---|")
print("| no profiler | %.0f | |" % none)
for label, name in rows + (("perf record -e sched:sched_switch -a -g", "perf"),):
    t = tps(name)
    if t is None:
        print("| %s | %s | |" % (label, no_bcc))
    else:
        print("| %s | %.0f | %.1f%% |" % (label, t, 100 * (none - t) / none))
PY
