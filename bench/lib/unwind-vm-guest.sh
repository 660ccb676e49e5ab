#!/bin/sh
# bench/lib/unwind-vm-guest.sh - the guest half of bench/unwind-vm.sh
# (busybox sh): the VM's /init runs it as /usr/lib/vmtest/bench once
# PostgreSQL 15 runs with pgbench's tables.  It starts `vmtools-agent
# serve` as a guest runs it and takes a first profile (its tables and
# symbols then cached); then, with kernel.bpf_stats_enabled=1, under
# `pgbench -S -c 2 -j 2`, ROUNDS times, the order alternating from one
# round to the next:
#
#   a CPU profile (POST /profile/cpu: 99 Hz, the postgres processes)
#   loaded with net.core.bpf_jit_enable=1, and one loaded with it 0 (each
#   profile loads its programs, and the kernel JITs a program when it is
#   loaded); SETTLE seconds after its sampling program do_sample has begun
#   to run, what do_sample adds over WINDOW seconds: its run_time_ns and
#   run_cnt (bpftool), and the profiler's own counters (its per-CPU
#   `stats` map, summed over the CPUs: samples of the targets, callers
#   found by unwind tables and by frame pointer, walks cut short, stacks
#   left to bpf_get_stack)
#
# One agent serves every profile: it finds where the kernel keeps user
# registers once, at its first profile, with a program on the sys_enter
# tracepoint.  (A `vmtools-agent profile` process a window does that every
# time; under TCG the guest's CPUs then hung for good, both spinning at the
# tracepoint's patched jump in syscall_trace_enter, on the third start.)
#
# bpf_jit_enable is put back as it was however this ends.  Settings come
# from /etc/vmtest/bench.conf (written by the host; STATS: the indexes in
# the `stats` map of the five counters, in that order), helpers from
# /usr/lib/vmtest/vm-guest.sh (bench/lib/vm-guest.sh).  Results go to the
# console, one per line, for the host to read:
#   VMBENCH sample ROUND MODE JITED RUN_TIME_NS RUN_CNT SAMPLES BY_TABLE BY_FP CUT KERNEL SECONDS
#                       (MODE: jit or interpreted; JITED: 1 when bpftool
#                       says do_sample was JITed, else 0)
#   VMBENCH error NAME WHAT
#   VMBENCH info WHAT             (facts of the guest, for the host's log)
#   VMBENCH load NAME SECONDS     (how long NAME took to start running)
. /usr/lib/vmtest/vm-guest.sh
URL=http://127.0.0.1:3080
# The profile outlasts the window: bpftool takes about a second a read here.
POST="wget -q -O /tmp/profile.pb --header 'Content-Type: application/json' --post-data '{\"timeout_seconds\": $((SETTLE + WINDOW + 5))}' $URL/profile/cpu"

JIT_WAS=$(cat /proc/sys/net/core/bpf_jit_enable)
trap 'echo "$JIT_WAS" >/proc/sys/net/core/bpf_jit_enable' EXIT
trap 'exit 1' INT TERM HUP
bpf_stats_on || exit 1

# window ROUND MODE JIT: a profile loaded with bpf_jit_enable=JIT, and
# what its do_sample adds over WINDOW seconds from SETTLE seconds after it
# began to run.
window() {
	echo "$3" >/proc/sys/net/core/bpf_jit_enable || {
		say "error $2 cannot set net.core.bpf_jit_enable=$3"
		return
	}
	measure "$2" "$POST" jited_now || return
	say "info $2 round $1: $({ gunzip -c /tmp/profile.pb 2>/dev/null || cat /tmp/profile.pb; } | strings | sed -n 's/.*vmtools: \(user stacks unwound with [^;]*\);.*/\1/p')"
	say "sample $1 $2 $jited $DELTA$SECS"
}
# jited_now: whether the kernel JITed the loaded do_sample (jited 1 or 0).
jited_now() {
	jited=1
	bpftool prog show name do_sample | grep -q 'not jited' && jited=0
}
jit() { window "$1" jit 1; }
interpreted() { window "$1" interpreted 0; }

guest_info
serve_start
# The load, its clients connected and running before the first window.
load_start
start warm "$POST" do_sample && wait "$PID"
rounds jit interpreted
load_stop
kill -TERM "$SERVE"
wait "$SERVE"
