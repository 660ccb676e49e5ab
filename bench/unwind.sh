#!/usr/bin/env bash
# bench/unwind.sh - what complete stacks cost (issue 24's benchmark), on
# PostgreSQL 17 (tests/pg-versions' 17.10: -O2, no frame pointers) under
# `pgbench -S -c 2 -j 2`, a 10-second CPU profile at 99 Hz of its two
# client backends taken three ways, one of each per round:
#
#   (a) vmtools-agent profile --profiler bpf --pid A --pid B
#   (b) vmtools-agent profile --profiler perf --pid A --pid B
#   (c) by hand: perf record --call-graph dwarf -F 99 -p A,B -- sleep 10,
#       then perf script (what a user would type to get the same stacks)
#
# For each: the wall time to answer beyond the 10 s, the CPU time spent
# (user+sys of the command and its children: the agent with its perf, or
# perf record + perf script), its peak RSS (the largest process's), and
# the share of the client backends' samples whose user stack reaches
# PostgresMain (tests/lib/pg-stacks.py).  For (a), the BPF program's run
# time per sample from the kernel's own accounting
# (kernel.bpf_stats_enabled=1 while the bench runs, then put back):
# run_time_ns / run_cnt of do_sample, read with bpftool over 8 s of the
# profile, as bench/offcpu.sh reads its program's.
#
# Runs are interleaved (one of each per round), medians reported, ratios
# against (c); prints a markdown table.
#
# usage: BUILD=build bash bench/unwind.sh   (ROUNDS=5)
. "$(dirname "$0")/lib/measure.sh"
[ -z "$(need_cmd bpftool)" ] || { echo "bench/unwind.sh: cannot run: needs bpftool" >&2; exit 1; }
PG_BIN=$BUILD/npm/pg/node_modules/pg17.10/native/bin
[ -x "$PG_BIN/postgres" ] || { echo "bench/unwind.sh: cannot run: needs $PG_BIN/postgres (ci/install-deps.sh)" >&2; exit 1; }
chmod 755 "$T"
if ! runuser -u postgres -- test -x "$PG_BIN/postgres"; then
	cp -a "$(dirname "$PG_BIN")" "$T/server"
	chmod -R a+rX "$T/server"
	PG_BIN=$T/server/bin
fi
bench_prepare
export HOME=$T/home
mkdir -p "$HOME"
STACKS=$SRC/tests/lib/pg-stacks.py

STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
at_exit "sysctl -q kernel.bpf_stats_enabled=$STATS_WAS"
sysctl -q kernel.bpf_stats_enabled=1

# prog_stats PROG: "run_time_ns run_cnt" of the BPF programs named PROG.
prog_stats() {
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
ns = cnt = 0
for p in json.load(sys.stdin):
    if p.get("name") == sys.argv[1]:
        ns += p.get("run_time_ns", 0); cnt += p.get("run_cnt", 0)
print(ns, cnt)' "$1"
}

pg_bench_bg $((ROUNDS * 60 + 30)) -S -c 2 -j 2
sleep 2
read -r A B < <(pg_psql "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench'" | tr '\n' ' ')
[ -n "$B" ] || { echo "bench/unwind.sh: pgbench's two backends not found" >&2; exit 1; }

BPF="'$VMTOOLS_AGENT' profile --profiler bpf --pid $A --pid $B --seconds 10 --frequency 99 --output $T/bpf.pb 2>$T/bpf.err"
PERFB="'$VMTOOLS_AGENT' profile --profiler perf --pid $A --pid $B --seconds 10 --frequency 99 --output $T/perfb.pb 2>$T/perfb.err"
HAND="perf record -q --call-graph dwarf -F 99 -p $A,$B -o $T/hand.data -- sleep 10 2>$T/hand.err && perf script -i $T/hand.data --no-inline -F comm,pid,tid,period,ip,sym,dso >$T/hand.txt 2>>$T/hand.err"

# reach NAME FILE: append the share of FILE's samples reaching PostgresMain.
reach() {
	local total reached
	read -r total reached < <(python3 "$STACKS" reach "$2" --pid "$A" --pid "$B" PostgresMain)
	echo "$total $reached" >>"$T/reach.$1"
}

for ((i = 0; i < ROUNDS; i++)); do
	measure bpf "$BPF" &
	m=$!
	for _ in $(seq 100); do
		a=$(prog_stats do_sample)
		[ "${a#* }" != 0 ] && break
		sleep 0.05
	done
	sleep 0.5
	a=$(prog_stats do_sample)
	sleep 8
	b=$(prog_stats do_sample)
	echo "$((${b% *} - ${a% *})) $((${b#* } - ${a#* }))" >>"$T/bpfstats"
	wait "$m" || exit 1
	go tool pprof -raw "$T/bpf.pb" >"$T/bpf.raw" 2>/dev/null && reach bpf "$T/bpf.raw"
	measure perfb "$PERFB" || exit 1
	go tool pprof -raw "$T/perfb.pb" >"$T/perfb.raw" 2>/dev/null && reach perfb "$T/perfb.raw"
	measure hand "$HAND" || exit 1
	reach hand "$T/hand.txt"
	rm -f "$T/hand.data" "$T/hand.txt"
done
pg_bench_stop

python3 - "$T" "$ROUNDS" <<'PY'
import os, statistics as st, sys
T, rounds = sys.argv[1], sys.argv[2]
def col(name, i):
    return st.median(float(l.split()[i]) for l in open(os.path.join(T, name)) if l.strip())
def reach(name):
    v = [[float(x) for x in l.split()] for l in open(os.path.join(T, "reach." + name)) if l.strip()]
    return st.median(100 * r / max(t, 1) for t, r in v), st.median(t for t, r in v)
bpf = [[float(x) for x in l.split()] for l in open(os.path.join(T, "bpfstats")) if l.strip()]
per_sample = st.median(ns / max(c, 1) for ns, c in bpf)
rows = (("(a) vmtools-agent profile --profiler bpf", "bpf"),
        ("(b) vmtools-agent profile --profiler perf", "perfb"),
        ("(c) perf record --call-graph dwarf + perf script", "hand"))
hand_cpu = col("hand", 1)
print("| PostgreSQL 17.10, pgbench -S -c 2 -j 2, 10-s CPU profile at 99 Hz of its 2 client backends (median of %s interleaved runs) | wall time to answer beyond 10 s | CPU time (user+sys) | vs (c) | peak RSS | samples reaching PostgresMain | BPF time per sample |" % rounds)
print("|---|---|---|---|---|---|---|")
for label, name in rows:
    share, n = reach(name)
    cpu = col(name, 1)
    ratio = "1x" if name == "hand" else ("%.1fx less" % (hand_cpu / cpu) if cpu > 0 else "-")
    bpfcol = "%.0f ns (%d samples in 8 s)" % (per_sample, st.median(c for ns, c in bpf)) if name == "bpf" else ""
    print("| %s | %d ms | %d ms | %s | %.1f MiB | %.1f%% of %d | %s |" % (
        label, col(name, 0) - 10000, cpu, ratio, col(name, 2) / 1024, share, n, bpfcol))
PY
