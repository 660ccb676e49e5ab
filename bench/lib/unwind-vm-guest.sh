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

# sample_stats: "RUN_TIME_NS RUN_CNT SAMPLES BY_TABLE BY_FP CUT KERNEL" of
# do_sample now.
sample_stats() {
	s=$(prog_stats do_sample)
	m=""
	for id in $(bpftool prog show name do_sample 2>/dev/null | sed -n 's/.*map_ids \([0-9,]*\).*/\1/p' | tr , ' '); do
		bpftool map show id "$id" 2>/dev/null | grep -q ' name stats ' && m=$id && break
	done
	# With the program's BTF bpftool prints each key and per-CPU value.
	echo "$s $(bpftool map dump id "${m:-0}" 2>/dev/null | awk -v want="$STATS" '
		/"key":/ { k = $2 + 0 }
		/"value":/ { v[k] += $2 }
		END { n = split(want, w, " "); for (i = 1; i <= n; i++) printf "%.0f ", v[w[i]] }')"
}

# window ROUND MODE JIT: a profile loaded with bpf_jit_enable=JIT, and
# what its do_sample adds over WINDOW seconds from SETTLE seconds after it
# began to run.
window() {
	echo "$3" >/proc/sys/net/core/bpf_jit_enable || {
		say "error $2 cannot set net.core.bpf_jit_enable=$3"
		return
	}
	start "$2" "$POST" do_sample || return
	jited=1
	bpftool prog show name do_sample | grep -q 'not jited' && jited=0
	sleep "$SETTLE"
	a=$(sample_stats)
	t0=$(uptime_s)
	sleep "$WINDOW"
	b=$(sample_stats)
	secs=$(since "$t0")
	wait "$PID" || say "error $2 round $1: the profile failed: $(tail -n 3 "/tmp/$2.err" | tr '\n' ' ')"
	say "info $2 round $1: $({ gunzip -c /tmp/profile.pb 2>/dev/null || cat /tmp/profile.pb; } | strings | sed -n 's/.*vmtools: \(user stacks unwound with [^;]*\);.*/\1/p')"
	say "sample $1 $2 $jited $(echo "$a $b" | awk '{ for (i = 1; i <= 7; i++) printf "%.0f ", $(i + 7) - $i }')$secs"
}

guest_info
vmtools-agent serve --no-setup --listen 127.0.0.1:3080 >/tmp/serve.log 2>&1 &
SERVE=$!
i=0
until wget -q -O /dev/null "$URL/healthz" 2>/dev/null; do
	[ $i -lt 300 ] && kill -0 "$SERVE" 2>/dev/null || {
		say "error serve the agent does not answer: $(tail -n 3 /tmp/serve.log | tr '\n' ' ')"
		exit 1
	}
	sleep 1
	i=$((i + 1))
done
# The load, its clients connected and running before the first window.
load_start
start warm "$POST" do_sample && wait "$PID"
r=0
while [ $r -lt "$ROUNDS" ]; do
	if [ $((r % 2)) = 0 ]; then
		window $r jit 1
		window $r interpreted 0
	else
		window $r interpreted 0
		window $r jit 1
	fi
	r=$((r + 1))
done
load_stop
kill -TERM "$SERVE"
wait "$SERVE"
