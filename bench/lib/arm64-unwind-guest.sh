#!/bin/sh
# bench/lib/arm64-unwind-guest.sh - the guest half of bench/arm64-unwind.sh
# (busybox sh, in the arm64 guest): the VM's /init runs it as
# /usr/lib/vmtest/bench.  It starts `vmtools-agent serve` as a guest runs
# it; then, with kernel.bpf_stats_enabled=1, ROUNDS times, the order
# alternating from one round to the next, for each of the two builds of
# tests/programs/nofp.c the host cross-compiled (the same code, the same
# stacks: main -> nofp_outer -> nofp_middle -> nofp_recurse ten deep ->
# nofp_leaf):
#
#   fp      frame pointers and no unwind tables (its callers found by
#           frame pointer)
#   table   without frame pointers, with .eh_frame (its callers found by
#           the unwinder's arm64 rules)
#
# the build runs alone, a CPU profile of its pid is taken (POST
# /profile/cpu, 99 Hz), and SETTLE seconds after the sampling program
# do_sample began to run, what it adds over WINDOW seconds is read: its
# run_time_ns and run_cnt (bpftool), and the profiler's own counters (its
# per-CPU `stats` map summed: samples of the target, callers found by
# unwind table and by frame pointer, walks cut short).
#
# Settings from /etc/vmtest/bench.conf (STATS: the indexes in the `stats`
# map of SAMPLES, FRAMES_TABLE, FRAMES_FP and WALKS_CUT), helpers from
# /usr/lib/vmtest/vm-guest.sh (bench/lib/vm-guest.sh).  Results on the
# console, one per line:
#   VMBENCH sample ROUND MODE RUN_TIME_NS RUN_CNT SAMPLES BY_TABLE BY_FP CUT SECONDS
#   VMBENCH error NAME WHAT
#   VMBENCH info WHAT
. /usr/lib/vmtest/vm-guest.sh
URL=http://127.0.0.1:3080
bpf_stats_on || exit 1

# window ROUND MODE: the MODE build alone, profiled by pid.
window() {
	/usr/lib/vmtest/$2/nofp --seconds $((SETTLE + WINDOW + 600)) --comm "nofp-$2" >/dev/null 2>&1 &
	work=$!
	measure "$2" "wget -q -O /tmp/profile.pb --header 'Content-Type: application/json' --post-data '{\"timeout_seconds\": $((SETTLE + WINDOW + 5)), \"targets\": {\"pids\": [$work]}}' $URL/profile/cpu" &&
		say "sample $1 $2 $DELTA$SECS"
	kill "$work" 2>/dev/null
	wait "$work"
}
fp() { window "$1" fp; }
table() { window "$1" table; }

guest_info
say "info $(uname -m) $(sed -n 's/^Features[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
serve_start
# A first profile of each: tables built, symbols cached (not counted).
fp warm
table warm
rounds fp table
kill -TERM "$SERVE"
wait "$SERVE"
