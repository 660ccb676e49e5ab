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
# Settings come from /etc/vmtest/bench.conf (written by the host).  Results
# go to the console, one per line, for the host to read:
#   VMBENCH switch NAME RUN_TIME_NS RUN_CNT SECONDS CPU_MS
#                       (NAME: ours or bcc; CPU_MS: its process's own)
#   VMBENCH floor NAME RUN_TIME_NS RUN_CNT STACK_CALLS FRAMES
#                       (NAME: filter, kstack, ustack, both)
#   VMBENCH tps NAME TPS                              (NAME: none, ours, bcc)
#   VMBENCH error NAME WHAT
#   VMBENCH info WHAT             (facts of the guest, for the host's log)
#   VMBENCH load NAME SECONDS     (how long NAME took to start running)
. /etc/vmtest/bench.conf
PGBIN=/usr/lib/postgresql/15/bin
PGBENCH="$PGBIN/pgbench -h /run/postgresql -U postgres -S -c 2 -j 2"
OURS="vmtools-agent profile --kind offcpu --seconds 3600 --output /tmp/ours.pb"
BCC="offcputime-bpfcc -u -f 3600"

say() { echo "VMBENCH $*"; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }

# bcc finds the headers where a Debian system has them.
build=/lib/modules/$(uname -r)/build
if [ ! -e "$build/Makefile" ]; then
	say "error bcc no kernel headers at $build ($(ls -la "/lib/modules/$(uname -r)" 2>&1 | tr '\n' ' '))"
fi
echo 1 >/proc/sys/kernel/bpf_stats_enabled || { say "error stats cannot set kernel.bpf_stats_enabled"; exit 1; }

# prog_stats PROG: "RUN_TIME_NS RUN_CNT" of the loaded BPF programs named
# PROG, summed (bpftool prints both on a program's first line).
prog_stats() {
	bpftool prog show 2>/dev/null | awk -v want="$1" '
		/^[0-9]+: / {
			n = ""; ns = 0; c = 0
			for (i = 1; i < NF; i++) {
				if ($i == "name") n = $(i + 1)
				if ($i == "run_time_ns") ns = $(i + 1)
				if ($i == "run_cnt") c = $(i + 1)
			}
			if (n == want) { tns += ns; tc += c }
		}
		END { printf "%.0f %.0f\n", tns, tc }'
}

# start NAME CMD PROG: run CMD in the background (PID in $PID) and return
# once its BPF program PROG has run (bcc compiles first: up to
# LOAD_TIMEOUT seconds); 1 with an error line when it does not.
start() {
	sh -c "exec $2" >"/tmp/$1.out" 2>"/tmp/$1.err" &
	PID=$!
	t0=$(uptime_s)
	i=0
	while [ $i -lt $((LOAD_TIMEOUT * 2)) ]; do
		s=$(prog_stats "$3")
		[ "${s#* }" != 0 ] && {
			say "load $1 $(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }')"
			return 0
		}
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.5
	done
	say "error $1 $3 did not run within ${LOAD_TIMEOUT}s: $(tail -n 3 "/tmp/$1.err" | tr '\n' ' ')"
	stop
	return 1
}
stop() {
	kill -TERM "$PID" 2>/dev/null
	wait "$PID"
}

# cpu_ticks PID: user + system CPU time of process PID, in clock ticks
# (USER_HZ, 100 a second on x86).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

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

# pgbench_as_pg ARGS: pgbench as postgres (busybox su execs, no fork: the
# caller's $! is pgbench).
pgbench_as_pg() { su postgres -s /bin/sh -c "exec $PGBENCH $*"; }

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

# run_time_ns is read with sched_clock, the TSC here when the kernel trusts it.
say "info bpf_jit_enable=$(cat /proc/sys/net/core/bpf_jit_enable) cpus=$(nproc) clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) $(dmesg | grep -m 1 -i 'tsc.*unstable' | cut -c 16-)"
# The load, its clients connected and running before the first window:
# pgbench's first progress line (-P) says so.
pgbench_as_pg -P 2 -T 100000 postgres >/tmp/load.log 2>&1 &
LOAD=$!
i=0
while ! grep -q '^progress: ' /tmp/load.log && [ $i -lt 300 ]; do
	sleep 1
	i=$((i + 1))
done
say "info load $(grep '^progress: ' /tmp/load.log | head -n 1)"
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
kill -TERM "$LOAD"
wait "$LOAD"

r=0
while [ $r -lt "$TPS_ROUNDS" ]; do
	tps none
	tps ours "$OURS" on_switch
	tps bcc "$BCC" oncpu
	r=$((r + 1))
done
