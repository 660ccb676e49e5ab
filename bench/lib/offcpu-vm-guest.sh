#!/bin/sh
# bench/lib/offcpu-vm-guest.sh - the guest half of bench/offcpu-vm.sh (busybox
# sh): the VM's /init runs it as /usr/lib/vmtest/bench once PostgreSQL 15
# runs with pgbench's tables and `vmtools-agent setup` has linked the tools
# image (so /lib/modules/$(uname -r)/build holds the kernel's headers, which
# bcc compiles against).  With kernel.bpf_stats_enabled=1:
#
#   ROUNDS times, interleaved, under `pgbench -S -c 2 -j 2`: start
#   `vmtools-agent profile --kind offcpu`, then bcc's `offcputime-bpfcc -u`;
#   SETTLE seconds after its BPF program (on_switch, oncpu) has begun to
#   run, the run_time_ns and run_cnt it adds over WINDOW seconds; then
#   stop it (SIGTERM)
#   in the same rounds, each program of /usr/lib/vmtest/stack-cost.bpf.o
#   (bench/lib/stack-cost.bpf.c: the floor) for WINDOW seconds
#   TPS_ROUNDS times, interleaved: pgbench -S TPS over TPS_SECONDS alone,
#   with ours running, with bcc's running (each started, and loaded, first)
#
# Settings come from /etc/vmtest/bench.conf (written by the host), helpers
# from /usr/lib/vmtest/vm-guest.sh (bench/lib/vm-guest.sh).  Results go to
# the console, one per line, for the host to read:
#   VMBENCH switch NAME RUN_TIME_NS RUN_CNT SECONDS CPU_MS
#                       (NAME: ours or bcc; CPU_MS: its process's own)
#   VMBENCH floor NAME RUN_TIME_NS RUN_CNT STACK_CALLS FRAMES
#                       (NAME: filter, kstack, ustack, both)
#   VMBENCH tps NAME TPS                              (NAME: none, ours, bcc)
#   VMBENCH error NAME WHAT
#   VMBENCH info WHAT             (facts of the guest, for the host's log)
#   VMBENCH load NAME SECONDS     (how long NAME took to start running)
. /usr/lib/vmtest/vm-guest.sh
OURS="vmtools-agent profile --kind offcpu --seconds 3600 --output /tmp/ours.pb"
BCC="offcputime-bpfcc -u -f 3600"

# bcc finds the headers where a Debian system has them.
build=/lib/modules/$(uname -r)/build
if [ ! -e "$build/Makefile" ]; then
	say "error bcc no kernel headers at $build ($(ls -la "/lib/modules/$(uname -r)" 2>&1 | tr '\n' ' '))"
fi
bpf_stats_on || exit 1

# per_switch NAME CMD PROG: what PROG adds over WINDOW seconds of CMD,
# SETTLE seconds after it started running (the profiler's own start-up
# work, such as reading the targets' symbols, is over by then), and the
# CPU time the profiler's process used in the window.
per_switch() {
	start "$1" "$2" "$3" || return
	sleep "$SETTLE"
	a=$(prog_stats "$3")
	c0=$(cpu_ticks "$PID")
	t0=$(uptime_s)
	sleep "$WINDOW"
	b=$(prog_stats "$3")
	c1=$(cpu_ticks "$PID")
	t1=$(uptime_s)
	stop
	say "switch $1 $((${b% *} - ${a% *})) $((${b#* } - ${a#* })) $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') $(((c1 - c0) * 10))"
}

# tps NAME [CMD PROG]: pgbench -S TPS over TPS_SECONDS, CMD running.
tps() {
	# What the previous run left (a profiler's exit) settles first.
	sleep 2
	if [ -n "${2:-}" ]; then
		start "$1" "$2" "$3" || return
	fi
	t=$(pgbench_as_pg -T "$TPS_SECONDS" postgres 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -n 1)
	[ -n "${2:-}" ] && stop
	say "tps $1 ${t:-0}"
}

guest_info
# The load, its clients connected and running before the first window.
load_start
r=0
while [ $r -lt "$ROUNDS" ]; do
	per_switch ours "$OURS" on_switch
	per_switch bcc "$BCC" oncpu
	for f in filter kstack ustack both; do
		if out=$(/usr/lib/vmtest/stack-cost /usr/lib/vmtest/stack-cost.bpf.o "$f" "$WINDOW" 2>&1); then
			say "floor $f $out"
		else
			say "error $f $(echo "$out" | tail -n 1)"
		fi
	done
	r=$((r + 1))
done
load_stop

r=0
while [ $r -lt "$TPS_ROUNDS" ]; do
	tps none
	tps ours "$OURS" on_switch
	tps bcc "$BCC" oncpu
	r=$((r + 1))
done
