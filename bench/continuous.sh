#!/usr/bin/env bash
# bench/continuous.sh - what always-on profiling costs, against what a
# user would otherwise run for the same always-on view.
#
# With `pgbench -S -c 2 -j 2` saturating both cores for DURATION seconds
# (default 60), ROUNDS times (default 3), interleaved:
#   vmtools: `serve --continuous` at 19 Hz, 10 s windows, in its steady
#            state: its --history-dir already holds an hour of windows
#            (read back before the round starts), so each new window also
#            drops the oldest, on disk and in memory, as it does after
#            the first hour; its cost is the
#            agent's CPU time (its threads' schedstat, in nanoseconds)
#            plus the run time of its BPF programs
#            (kernel.bpf_stats_enabled, bpftool prog show), as a share of
#            one CPU (target <= 0.1%)
#   perf:    `perf record -F 19 -a -g` in 10 s pieces, each converted with
#            `perf script` (what one would push), its CPU time (/usr/bin/time)
# The hour of windows is that of a first, unmeasured run's windows,
# repeated under names spread over the hour before each round.
# Then, once: an hour of history (the windows of the last vmtools round,
# spread the same way), the agent's RSS once it has read them (target <= 48
# MiB), and the time to answer GET /profile/cpu/history/profile?from=-1h
# (curl's time_total, median of 5; target < 200 ms).
# Needs root (BPF, bpf_stats), PostgreSQL 15, perf, bpftool, curl, python3.
. "$(dirname "$0")/lib/measure.sh"
. "$SRC/tests/lib/agent.sh"
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-60}

bench_prepare
[ -z "$(need_cmd curl)" ] || { echo "bench/continuous.sh: cannot run: needs curl" >&2; exit 1; }
bpf_stats_on

# bpf_ns PID: run time of the BPF programs PID holds (their ids from the
# fdinfo of its program and link descriptors), in nanoseconds.
bpf_ns() {
	bpftool prog show -j | python3 -c "
import glob, json, re, sys
ids = set()
for f in glob.glob('/proc/$1/fdinfo/*'):
    try:
        ids.update(int(m) for m in re.findall(r'^prog_id:\\s*(\\d+)', open(f).read(), re.M))
    except OSError:
        pass
print(sum(p.get('run_time_ns', 0) for p in json.load(sys.stdin) if p['id'] in ids))"
}
# cpu_us PID: CPU time PID's threads used so far, in microseconds, from
# their schedstat (nanoseconds: /proc/PID/stat counts 10-ms ticks, too
# coarse for the tens of milliseconds measured), each line "tid us".
cpu_us() {
	for t in /proc/"$1"/task/*; do
		echo "${t##*/} $(($(cut -d' ' -f1 "$t/schedstat") / 1000))"
	done
}
# cpu_ms_between A B: milliseconds (one decimal) used between readings A
# and B of cpu_us; "" when a thread ended in between (its time would be
# lost), for the caller to take /proc/PID/stat's ticks instead.
cpu_ms_between() {
	python3 - "$1" "$2" <<'PY'
import sys
a = dict(l.split() for l in open(sys.argv[1]))
b = dict(l.split() for l in open(sys.argv[2]))
if set(a) - set(b):
    print("")
else:
    print("%.1f" % (sum(int(b[t]) - int(a.get(t, 0)) for t in b) / 1000))
PY
}
# cpu_ms PID: CPU time PID used so far, in milliseconds (10-ms ticks).
cpu_ms() { awk -v t="$(getconf CLK_TCK)" '{print int(($14 + $15) * 1000 / t)}' "/proc/$1/stat"; }

# fill_hour SRC DST: the window files of SRC copied into DST under names
# spread over the last hour, 360 of them, the newest ending now.
fill_hour() {
	mkdir -p "$2"
	python3 - "$1" "$2" <<'PY'
import os, shutil, sys, time
src, dst = sys.argv[1:3]
files = sorted(f for f in os.listdir(src) if f.startswith("cpu-"))
now = int(time.time())
fmt = lambda t: time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t))
for i in range(360):
    start = now - 3600 + 10 * i
    shutil.copy(os.path.join(src, files[i % len(files)]),
                os.path.join(dst, "cpu-%s-%s.pb.gz" % (fmt(start), fmt(start + 10))))
PY
}
# wait_windows N: until the agent's history holds N windows (read back).
wait_windows() {
	for _ in $(seq 120); do
		n=$(curl -s "$AGENT_URL/profile/cpu/history" | python3 -c "import json,sys; print(len(json.load(sys.stdin).get('windows', [])))" 2>/dev/null)
		[ "${n:-0}" -ge "$1" ] && return 0
		sleep 1
	done
	echo "bench/continuous.sh: the agent read back ${n:-0} of $1 windows" >&2
	exit 1
}

# The seed: a minute of windows of this workload, not measured.
start_agent seed --no-setup --continuous --continuous-frequency 19 \
	--continuous-interval 10 --history-dir "$T/seed"
pg_bench 60 -S -c 2 -j 2 >/dev/null 2>&1
stop_agent

: >"$T/vm"
: >"$T/perf"
for r in $(seq "$ROUNDS"); do
	# vmtools: the agent runs first, so its start-up is not counted.
	rm -rf "$T/hist"
	fill_hour "$T/seed" "$T/hist"
	touch "$T/mark"
	start_agent "cont$r" --no-setup --continuous --continuous-frequency 19 \
		--continuous-interval 10 --history-dir "$T/hist"
	wait_windows 360
	sleep 2
	cpu_us "$AGENT_PID" >"$T/cpu0"
	c0=$(cpu_ms "$AGENT_PID") b0=$(bpf_ns "$AGENT_PID")
	pg_bench "$DURATION" -S -c 2 -j 2 >/dev/null 2>&1
	cpu_us "$AGENT_PID" >"$T/cpu1"
	c1=$(cpu_ms "$AGENT_PID") b1=$(bpf_ns "$AGENT_PID")
	agent_ms=$(cpu_ms_between "$T/cpu0" "$T/cpu1")
	echo "${agent_ms:-$((c1 - c0))} $(python3 -c "print('%.1f' % (($b1 - $b0) / 1e6))")" >>"$T/vm"
	stop_agent
	rm -rf "$T/hist-last"
	mkdir "$T/hist-last"
	find "$T/hist" -maxdepth 1 -name 'cpu-*' -newer "$T/mark" \
		-exec cp {} "$T/hist-last"/ \;

	# perf: 10 s pieces recorded and converted while pgbench runs.
	pieces=$(((DURATION + 9) / 10))
	(
		for p in $(seq "$pieces"); do
			/usr/bin/time -a -o "$T/perf.time" -f '%U %S' \
				perf record -q -F 19 -a -g -o "$T/piece.data" -- sleep 10 2>/dev/null
			/usr/bin/time -a -o "$T/perf.time" -f '%U %S' \
				sh -c "perf script -i '$T/piece.data' >'$T/piece.txt' 2>/dev/null"
		done
	) &
	perf_loop=$!
	: >"$T/perf.time"
	pg_bench "$DURATION" -S -c 2 -j 2 >/dev/null 2>&1
	wait "$perf_loop"
	awk '{ s += $1 + $2 } END { print int(s * 1000) }' "$T/perf.time" >>"$T/perf"
done

# An hour of history: the last round's windows, spread over the hour.
fill_hour "$T/hist-last" "$T/hour"
start_agent hour --no-setup --continuous --continuous-interval 10 \
	--history-dir "$T/hour"
sleep 1
rss=$(awk '/VmRSS/ {print $2}' "/proc/$AGENT_PID/status")
windows=$(curl -s "$AGENT_URL/profile/cpu/history" | python3 -c "import json,sys; print(len(json.load(sys.stdin)['windows']))")
: >"$T/merge"
for i in 1 2 3 4 5; do
	curl -s -o "$T/hour.pb" -w '%{time_total}\n' \
		"$AGENT_URL/profile/cpu/history/profile?from=-1h" >>"$T/merge"
done
rss_after=$(awk '/VmRSS/ {print $2}' "/proc/$AGENT_PID/status")
stop_agent

python3 - "$T/vm" "$T/perf" "$DURATION" "$rss" "$rss_after" "$windows" "$T/merge" <<'PY'
import statistics, sys
vm = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
perf = [int(l) for l in open(sys.argv[2])]
dur = float(sys.argv[3]) * 1000
rss, rss_after, windows = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
merge = [float(l) * 1000 for l in open(sys.argv[7])]
agent = statistics.median(c for c, b in vm)
bpf = statistics.median(b for c, b in vm)
p = statistics.median(perf)
print("| what (median of %d rounds, %d s of pgbench -S each) | vmtools --continuous 19 Hz | perf record -F 19 -a -g, 10 s pieces + perf script |" % (len(vm), dur / 1000))
print("|---|---|---|")
print("| CPU, share of one CPU (target <= 0.1%%) | %.3f%% (agent %.1f ms + BPF %.1f ms) | %.3f%% (%d ms) |"
      % (100 * (agent + bpf) / dur, agent, bpf, 100 * p / dur, p))
print("| RSS with an hour of history (%s windows; target <= 48 MiB) | %.1f MiB (%.1f MiB after 5 merges) | |"
      % (windows, rss / 1024, rss_after / 1024))
print("| GET history/profile?from=-1h, median of 5 (target < 200 ms) | %.1f ms | |" % statistics.median(merge))
PY
