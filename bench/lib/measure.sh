# shellcheck shell=bash
# bench/lib/measure.sh - what the profiler benchmarks share: sourcing it
# brings tests/lib/tap.sh and tests/lib/pg.sh, and ROUNDS (default 5) and
# TPS_ROUNDS (default 3) from the environment.
#
#   bench_prepare         exit 1 saying why when the benchmark cannot run here
#                         (root for BPF, PostgreSQL 15, perf, /usr/bin/time,
#                         python3); else start a cluster with pgbench's
#                         tables at scale 10
#   measure NAME CMD      run CMD once under /usr/bin/time and append
#                         "wall_ms cpu_ms peak_rss_kib" to $T/NAME; on
#                         failure print the end of $T/NAME.err and return 1
#   tps CMD [LEAD]        pgbench -S TPS for 5 s, alone (CMD empty) or while
#                         CMD runs in the background, started LEAD seconds
#                         (default 1) before pgbench
#   bcc_command TOOL ARGS...  prints the command that runs bcc's TOOL with
#                         ARGS (output in $T/bcc.out, errors in $T/bcc.err)
#                         against Debian's 6.1 headers (the running kernel
#                         has none here: tests/lib/fetch-kernel.sh's are
#                         overlaid in a private mount namespace and given
#                         with BCC_KERNEL_SOURCE, debugfs mounted there too
#                         for bcc's kprobe blacklist, the host is not
#                         modified); prints nothing and says why on stderr
#                         when it cannot
#   bpf_stats_on          exit 1 saying why when bpftool is missing; else
#                         kernel.bpf_stats_enabled=1 until the script ends
#                         (then put back as it was)
#   prog_stats PROG       "run_time_ns run_cnt" of the BPF programs bpftool
#                         names PROG, summed (kernel.bpf_stats_enabled=1)
#   bpf_run_time NAME PROG CMD  run CMD (a profile of 8 s once loaded) in
#                         the background; once PROG is loaded, append the
#                         "run_time_ns run_cnt" it adds over 3 s to $T/NAME,
#                         and call $BPF_RUN_HOOK NAME (when set) while it is
#                         still loaded
#   cpu_cgroup            a cgroup made for the benchmark (removed at its
#                         end) that counts CPU time: cpuacct's (cgroup v1,
#                         ns) or cgroup v2's (us); CPU_CGROUP empty when
#                         none can be made here
#   cpu_cgroup_enter PID  move PID, all its threads, into it (nothing
#                         without one)
#   cpu_cgroup_wrap PROG  prints the path of a program that enters the
#                         cgroup and runs PROG with its arguments: its CPU
#                         counted from its start (PROG itself without one)
#   cpu_cgroup_ns PID     the CPU time (user + sys, ns) the cgroup's
#                         processes used so far, every thread's, those
#                         ended included (a session's threads end with
#                         it); without a cgroup, PID's from /proc/PID/stat
#                         (clock ticks, 10 ms)
#   stack_cost_build      build bench/lib/stack-cost.bpf.c and its loader
#                         into $T/stack-cost.bpf.o and $T/stack-cost (the
#                         off-CPU benchmarks' floor); 1 saying why when it
#                         cannot

. "$(dirname "${BASH_SOURCE[0]}")/../../tests/lib/tap.sh"
. "$SRC/tests/lib/pg.sh"

ROUNDS=${ROUNDS:-5}
TPS_ROUNDS=${TPS_ROUNDS:-3}

bench_prepare() {
	local reason
	reason=$(need_bpf)
	[ -z "$reason" ] && reason=$(pg_reason)
	[ -z "$reason" ] && reason=$(need_cmd perf /usr/bin/time python3)
	if [ -n "$reason" ]; then
		echo "bench/$(basename "$0"): cannot run: $reason" >&2
		exit 1
	fi
	pg_start >/dev/null && pg_bench_init 10 || exit 1
}

measure() {
	local t0 t1 u s m
	t0=$(date +%s%N)
	/usr/bin/time -f '%U %S %M' -o "$T/time.out" sh -c "$2" || {
		echo "$(basename "$0"): $1 failed:" >&2
		tail -n 5 "$T/$1.err" 2>/dev/null >&2
		return 1
	}
	t1=$(date +%s%N)
	read -r u s m <"$T/time.out"
	echo "$(((t1 - t0) / 1000000)) $(python3 -c "print(int(($u + $s) * 1000))") $m" >>"$T/$1"
}

tps() {
	local prof=""
	if [ -n "$1" ]; then
		sh -c "$1" >/dev/null 2>&1 &
		prof=$!
		sleep "${2:-1}"
	fi
	pg_bench 5 -S -c 2 -j 2 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -n 1
	[ -n "$prof" ] && wait "$prof"
}

bcc_command() {
	local tool=$1 hdr common
	shift
	command -v "$tool" >/dev/null || { echo "$(basename "$0"): no $tool (bpfcc-tools)" >&2; return 0; }
	if ! eval "$(bash "$SRC/tests/lib/fetch-kernel.sh" 2>"$T/fetch.err")"; then
		echo "$(basename "$0"): no kernel headers for bcc: $(tail -n 1 "$T/fetch.err")" >&2
		return 0
	fi
	hdr=$KERNEL_ROOT/usr/src/linux-headers-$KERNEL_RELEASE
	common=$(ls -d "$KERNEL_ROOT"/usr/src/linux-headers-*-common | head -n 1)
	mkdir -p "$T/kernel-src"
	echo "unshare -m sh -c 'mount --make-rprivate / && { mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug; } && mount -t overlay overlay -o lowerdir=$hdr:$common $T/kernel-src && BCC_KERNEL_SOURCE=$T/kernel-src exec $tool $* >$T/bcc.out 2>$T/bcc.err'"
}

stack_cost_build() {
	local lib
	lib=$(dirname "${BASH_SOURCE[0]}")
	if ! clang -g -O2 -Wall -Werror -target bpf -I"/usr/include/$(gcc -dumpmachine)" \
		-c "$lib/stack-cost.bpf.c" -o "$T/stack-cost.bpf.o" 2>"$T/stack-cost.err" ||
		! cc -O2 -Wall -Wextra -Werror -o "$T/stack-cost" "$lib/stack-cost.c" -lbpf 2>>"$T/stack-cost.err"; then
		echo "$(basename "$0"): cannot build bench/lib/stack-cost:" >&2
		tail -n 5 "$T/stack-cost.err" >&2
		return 1
	fi
}

bpf_stats_on() {
	[ -z "$(need_cmd bpftool)" ] || { echo "bench/$(basename "$0"): cannot run: needs bpftool" >&2; exit 1; }
	at_exit "sysctl -q kernel.bpf_stats_enabled=$(sysctl -n kernel.bpf_stats_enabled)"
	sysctl -q kernel.bpf_stats_enabled=1
}

prog_stats() {
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
ns = cnt = 0
for p in json.load(sys.stdin):
    if p.get("name") == sys.argv[1]:
        ns += p.get("run_time_ns", 0); cnt += p.get("run_cnt", 0)
print(ns, cnt)' "$1"
}

bpf_run_time() {
	local pid a b
	sh -c "$3" >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 300); do
		a=$(prog_stats "$2")
		[ "${a#* }" != 0 ] && break
		sleep 0.1
	done
	sleep 0.5
	a=$(prog_stats "$2")
	sleep 3
	b=$(prog_stats "$2")
	echo "$((${b% *} - ${a% *})) $((${b#* } - ${a#* }))" >>"$T/$1"
	[ -z "${BPF_RUN_HOOK:-}" ] || "$BPF_RUN_HOOK" "$1"
	wait "$pid"
}

cpu_cgroup() {
	local d
	CPU_CGROUP=
	for d in /sys/fs/cgroup/cpuacct /sys/fs/cgroup; do
		if { [ -f "$d/cpuacct.usage" ] || [ -f "$d/cgroup.controllers" ]; } &&
			mkdir "$d/vmtools-bench-$$" 2>/dev/null; then
			CPU_CGROUP=$d/vmtools-bench-$$
			at_exit "for i in \$(seq 50); do rmdir $CPU_CGROUP && break; sleep 0.1; done"
			return 0
		fi
	done
}

cpu_cgroup_enter() {
	[ -z "$CPU_CGROUP" ] || echo "$1" >"$CPU_CGROUP/cgroup.procs"
}

cpu_cgroup_wrap() {
	[ -n "$CPU_CGROUP" ] || { echo "$1"; return; }
	printf '#!/bin/sh\necho $$ >%s/cgroup.procs\nexec %s "$@"\n' \
		"$CPU_CGROUP" "$1" >"$T/in-cgroup"
	chmod 755 "$T/in-cgroup"
	echo "$T/in-cgroup"
}

cpu_cgroup_ns() {
	if [ -f "$CPU_CGROUP/cpuacct.usage" ]; then
		cat "$CPU_CGROUP/cpuacct.usage"
	elif [ -n "$CPU_CGROUP" ]; then
		awk '/^usage_usec/ { print $2 * 1000 }' "$CPU_CGROUP/cpu.stat"
	else
		awk -v hz="$(getconf CLK_TCK)" '{ printf "%d\n", ($14 + $15) * 1e9 / hz }' "/proc/$1/stat"
	fi
}
