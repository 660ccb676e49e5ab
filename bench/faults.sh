#!/usr/bin/env bash
# bench/faults.sh - what the faults profile costs at its default period
# (one sample every 64 page faults), against `perf record -e page-faults
# -c 64 -a -g`, the tool a user would otherwise run, with PostgreSQL 15
# under two loads of `pgbench -c 2 -j 2`:
#   select: `pgbench -S`, the issue's load: a steady state that seldom
#           faults (its pages are resident already)
#   sort:   a custom script sorting 50,000 rows of pgbench_accounts per
#           transaction, whose sort memory is malloc'd and given back each
#           time: it faults all the time
# For each load:
#   (a) the BPF time of our program (do_fault) per sample and per fault,
#       from the kernel's accounting (kernel.bpf_stats_enabled=1 while the
#       bench runs, then put back), over 3 s of a 10-s profile
#   (b) TPS for 5 s alone, while our faults profile runs and while perf
#       records, each started 3 s before pgbench (so that its start-up,
#       loading programs and reading tables, is not in the window) and
#       ending after it
# Runs are interleaved (one of each per round), medians reported, as a
# markdown table.
#
# usage: BUILD=build bash bench/faults.sh   (ROUNDS=5 TPS_ROUNDS=3)
. "$(dirname "$0")/lib/measure.sh"
bench_prepare
bpf_stats_on

echo "SELECT count(*) FROM (SELECT aid FROM pgbench_accounts WHERE aid <= 50000 ORDER BY abalance DESC, bid, aid DESC OFFSET 1) s;" >"$T/sort.sql"
chmod 644 "$T/sort.sql"
OURS="'$VMTOOLS_AGENT' profile --kind faults --seconds 10 --output $T/ours.pb"
PERF="perf record -q -e page-faults -c 64 -a -g -o $T/perf.data -- sleep 10"

# load_args LOAD: pgbench's arguments for LOAD.
load_args() { [ "$1" = select ] && echo "-S" || echo "-n -f $T/sort.sql"; }

for load in select sort; do
	args=$(load_args "$load")
	# shellcheck disable=SC2086
	pg_bench_bg $((ROUNDS * 12 + 30)) $args -c 2 -j 2
	sleep 2
	for _ in $(seq "$ROUNDS"); do
		bpf_run_time "bpf.$load" do_fault "$OURS"
	done
	pg_bench_stop
	for _ in $(seq "$TPS_ROUNDS"); do
		for who in none ours perf; do
			case $who in
			none) cmd="" ;;
			ours) cmd=$OURS ;;
			perf) cmd=$PERF ;;
			esac
			if [ -z "$cmd" ]; then
				# shellcheck disable=SC2086
				pg_bench 5 $args -c 2 -j 2 2>/dev/null
			else
				sh -c "$cmd" >/dev/null 2>&1 &
				prof=$!
				sleep 3
				# shellcheck disable=SC2086
				pg_bench 5 $args -c 2 -j 2 2>/dev/null
				wait "$prof"
			fi | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -n 1 >>"$T/tps.$load.$who"
		done
	done
done

python3 - "$T" "$ROUNDS" "$TPS_ROUNDS" <<'PY'
import os, statistics as st, sys
T, rounds, tps_rounds = sys.argv[1:4]
PERIOD = 64
print("| faults profile, default period (%d), pgbench -c 2 -j 2 (medians of %s and %s interleaved runs) | BPF time per sample | per fault | samples/s | TPS alone | TPS, ours | TPS, perf record -e page-faults -c 64 -a -g |" % (PERIOD, rounds, tps_rounds))
print("|---|---|---|---|---|---|---|")
for load, what in (("select", "pgbench -S"), ("sort", "a 50,000-row sort per transaction")):
    v = [tuple(map(float, l.split())) for l in open(os.path.join(T, "bpf." + load)) if l.strip()]
    ns = [a / b for a, b in v if b]
    cnt = st.median(b / 3 for a, b in v)
    tps = {w: st.median(float(l) for l in open(os.path.join(T, "tps.%s.%s" % (load, w))) if l.strip())
           for w in ("none", "ours", "perf")}
    per = "%.0f ns" % st.median(ns) if ns else "no samples"
    per_fault = "%.1f ns" % (st.median(ns) / PERIOD) if ns else ""
    print("| %s | %s | %s | %.0f | %.0f | %.0f (%.1f%% lost) | %.0f (%.1f%% lost) |" % (
        what, per, per_fault, cnt, tps["none"],
        tps["ours"], 100 * (tps["none"] - tps["ours"]) / tps["none"],
        tps["perf"], 100 * (tps["none"] - tps["perf"]) / tps["none"]))
PY
