# shellcheck shell=sh
# bench/lib/vm-guest.sh - what the guest halves of the VM benchmarks share
# (bench/lib/offcpu-vm-guest.sh, bench/lib/unwind-vm-guest.sh; busybox sh):
# bench/lib/vm-bench.sh installs it as /usr/lib/vmtest/vm-guest.sh beside
# the guest half, which sources it.  Sourcing it reads the settings the
# host wrote to /etc/vmtest/bench.conf (LOAD_TIMEOUT among them).
#
#   say WHAT              print "VMBENCH WHAT" on the console, where the
#                         host reads it
#   uptime_s              seconds since boot, with hundredths
#   since T0              seconds from uptime T0 to now, one decimal
#   bpf_stats_on          kernel.bpf_stats_enabled=1, else an error line
#                         and 1
#   guest_info            an info line: the JIT, the CPUs, the clocksource
#   prog_stats PROG       "RUN_TIME_NS RUN_CNT" of the loaded BPF programs
#                         named PROG, summed
#   start NAME CMD PROG   once no program PROG that has run is loaded (a
#                         previous one may still be being unloaded), run
#                         CMD in the background (PID in $PID) and return
#                         once its BPF program PROG has run (a "load NAME
#                         SECONDS" line); 1 with an error line when either
#                         takes more than LOAD_TIMEOUT seconds
#   stop                  end what start started (SIGTERM) and wait for it
#   sample_stats          "RUN_TIME_NS RUN_CNT" of do_sample now, then the
#                         profiler's counters STATS names (indexes in its
#                         per-CPU `stats` map, summed over the CPUs)
#   serve_start           `vmtools-agent serve` on 127.0.0.1:3080 as a
#                         guest runs it (SERVE its pid), answering when
#                         this returns; else an error line and exit 1
#   measure NAME CMD [THEN]  start NAME CMD do_sample (then run THEN,
#                         while the program is loaded); SETTLE seconds later,
#                         what sample_stats adds over WINDOW seconds (in
#                         DELTA, SECS the seconds it took); then wait for
#                         CMD (an error line when it failed); 1 when it
#                         did not start
#   rounds A B            ROUNDS rounds of `A ROUND` and `B ROUND`, the
#                         order alternating from one round to the next
#   cpu_ticks PID         user + system CPU time of process PID, in clock
#                         ticks (USER_HZ, 100 a second on x86)
#   pgbench_as_pg ARGS    $PGBENCH (pgbench -S -c 2 -j 2) as postgres
#   load_start            pgbench -S -c 2 -j 2 in the background until
#                         load_stop, its clients connected and running
#                         (its first progress line) when this returns
#   load_stop             end it
. /etc/vmtest/bench.conf
PGBIN=/usr/lib/postgresql/15/bin
PGBENCH="$PGBIN/pgbench -h /run/postgresql -U postgres -S -c 2 -j 2"

say() { echo "VMBENCH $*"; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }'; }

bpf_stats_on() {
	echo 1 >/proc/sys/kernel/bpf_stats_enabled && return 0
	say "error stats cannot set kernel.bpf_stats_enabled"
	return 1
}

# run_time_ns is read with sched_clock, the TSC here when the kernel trusts it.
guest_info() {
	say "info bpf_jit_enable=$(cat /proc/sys/net/core/bpf_jit_enable) cpus=$(nproc) clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) $(dmesg | grep -m 1 -i 'tsc.*unstable' | cut -c 16-)"
}

# bpftool prints both figures on a program's first line.
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

start() {
	i=0
	while [ "$(prog_stats "$3")" != "0 0" ]; do
		[ $i -lt $((LOAD_TIMEOUT * 2)) ] || {
			say "error $1 a previous $3 is still loaded after ${LOAD_TIMEOUT}s"
			return 1
		}
		sleep 0.5
		i=$((i + 1))
	done
	sh -c "exec $2" >"/tmp/$1.out" 2>"/tmp/$1.err" &
	PID=$!
	t0=$(uptime_s)
	i=0
	while [ $i -lt $((LOAD_TIMEOUT * 2)) ]; do
		s=$(prog_stats "$3")
		[ "${s#* }" != 0 ] && {
			say "load $1 $(since "$t0")"
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

serve_start() {
	vmtools-agent serve --no-setup --listen 127.0.0.1:3080 >/tmp/serve.log 2>&1 &
	SERVE=$!
	i=0
	until wget -q -O /dev/null http://127.0.0.1:3080/healthz 2>/dev/null; do
		[ $i -lt 600 ] && kill -0 "$SERVE" 2>/dev/null || {
			say "error serve the agent does not answer: $(tail -n 3 /tmp/serve.log | tr '\n' ' ')"
			exit 1
		}
		sleep 1
		i=$((i + 1))
	done
}

measure() {
	start "$1" "$2" do_sample || return 1
	[ -z "${3:-}" ] || $3
	sleep "$SETTLE"
	a=$(sample_stats)
	t0=$(uptime_s)
	sleep "$WINDOW"
	b=$(sample_stats)
	SECS=$(since "$t0")
	DELTA=$(echo "$a" "$b" | awk '{ n = NF / 2; for (i = 1; i <= n; i++) printf "%.0f ", $(i + n) - $i }')
	wait "$PID" || say "error $1: the profile failed: $(tail -n 3 "/tmp/$1.err" | tr '\n' ' ')"
}

rounds() {
	r=0
	while [ $r -lt "$ROUNDS" ]; do
		if [ $((r % 2)) = 0 ]; then
			"$1" $r
			"$2" $r
		else
			"$2" $r
			"$1" $r
		fi
		r=$((r + 1))
	done
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# busybox su execs, no fork: the caller's $! is pgbench.
pgbench_as_pg() { su postgres -s /bin/sh -c "exec $PGBENCH $*"; }

load_start() {
	pgbench_as_pg -P 2 -T 100000 postgres >/tmp/load.log 2>&1 &
	LOAD=$!
	i=0
	while ! grep -q '^progress: ' /tmp/load.log && [ $i -lt 300 ]; do
		sleep 1
		i=$((i + 1))
	done
	say "info load $(grep '^progress: ' /tmp/load.log | head -n 1)"
}
load_stop() {
	kill -TERM "$LOAD"
	wait "$LOAD"
}
