#!/usr/bin/env bash
# tests/integration/70-perf-burn.sh - `vmtools-agent profile --profiler perf`
# against the burner (tests/programs/burn: burn_hot_a and burn_hot_b 3:1):
# the ratio within 3 points, the sample count = CPU time x frequency within
# 10%, go tool pprof reads it without a warning, the burner's mapping has
# its build id (from perf's MMAP2 records), --pid follows forks, Ctrl-C
# keeps what was collected, and neither perf nor its perf.data outlives the
# profile.  Then what goes wrong, with stand-in perf binaries on PATH: no
# perf, perf refused by perf_event_paranoid, perf writing garbage, perf
# dying while recording: each a clear message carrying perf's own words.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"

reason=$(need_root)
[ -z "$reason" ] && reason=$(need_cmd go python3 perf readelf)
[ -z "$reason" ] && [ ! -x "$BURN" ] && reason="needs $BURN (make tests)"
[ -z "$reason" ] && ! perf record -e cpu-clock -o /dev/null -q -- true 2>/dev/null &&
	reason="perf record -e cpu-clock does not work here"
if [ -n "$reason" ]; then
	skip "perf backend profile of a known workload" "$reason"
	exit 0
fi

export HOME=$T/home PPROF_TMPDIR=$T/pprof TMPDIR=$T/tmp
mkdir -p "$HOME" "$PPROF_TMPDIR" "$TMPDIR"

perf_children() { pgrep -P "$1" -x perf; }

# --- 1. comm target: ratio, count, pprof, build id, Ctrl-C ------------------
FREQ=299
COMM=pburn$$
"$VMTOOLS_AGENT" profile --profiler perf --seconds 30 --frequency $FREQ \
	--comm "$COMM" --output "$T/burn.pb" 2>"$T/agent.err" &
AGENT=$!
at_exit "kill $AGENT"
for ((i = 0; i < 100; i++)); do
	PERF=$(perf_children "$AGENT")
	[ -n "$PERF" ] && break
	sleep 0.05
done
sleep 1 # perf's start-up
if [ -n "$PERF" ] && [ -z "$(ls -A "$TMPDIR")" ]; then
	ok "perf runs as the agent's child, its perf.data already unlinked (nothing in \$TMPDIR)"
else
	not_ok "perf child '$PERF', \$TMPDIR holds: $(ls -A "$TMPDIR")"
fi
run_burn "$COMM" 6
wait "$BURN_WRAPPER"
kill -INT "$AGENT"
wait "$AGENT"
st=$?
if [ "$st" = 0 ] && [ -s "$T/burn.pb" ]; then
	ok "Ctrl-C ends a perf profile early and writes what was collected"
else
	not_ok "perf profile stopped by SIGINT: status $st"
	diag "$T/agent.err"
fi
check "perf is gone with the profile" bash -c "! kill -0 ${PERF:-999999999} 2>/dev/null"

# An agent killed outright (SIGKILL: no cleanup of its own) must not leave
# perf recording the machine: perf gets SIGINT from the kernel (its
# parent-death signal) and exits, removing its own temporary files.
"$VMTOOLS_AGENT" profile --profiler perf --seconds 60 --comm "$COMM" \
	--output "$T/killed.pb" 2>"$T/killed.err" &
AGENT=$!
at_exit "kill -9 $AGENT"
PERF=
for ((i = 0; i < 100; i++)); do
	PERF=$(perf_children "$AGENT")
	[ -n "$PERF" ] && break
	sleep 0.05
done
sleep 1
kill -9 "$AGENT"
wait "$AGENT" 2>/dev/null
gone=no
for ((i = 0; i < 100; i++)); do
	kill -0 "${PERF:-999999999}" 2>/dev/null || { gone=yes; break; }
	sleep 0.1
done
check "perf (pid ${PERF:-none}) exits within 10 s when the agent is killed with SIGKILL" \
	test -n "$PERF" -a "$gone" = yes
check "and leaves no file behind (\$TMPDIR, the output)" \
	bash -c "[ -z \"\$(ls -A '$TMPDIR')\" ] && [ ! -e '$T/killed.pb' ]"
check "nothing is left in \$TMPDIR" test -z "$(ls -A "$TMPDIR")"

check "go tool pprof -top reads the perf profile without a warning" pprof_ok "$T/burn.pb" -top
check "go tool pprof -traces reads it without a warning" pprof_ok "$T/burn.pb" -traces
check "go tool pprof -raw reads it without a warning" pprof_ok "$T/burn.pb" -raw
go tool pprof -raw "$T/burn.pb" >"$T/raw.txt" 2>/dev/null
check "samples carry comm $COMM and pid labels" \
	bash -c "grep -q 'comm:\[$COMM\]' '$T/raw.txt' && grep -q 'pid:\[' '$T/raw.txt'"
check "the burner's mapping carries its file name and GNU build id (from MMAP2)" \
	bash -c "id=\$(readelf -n '$BURN' | awk '/Build ID/ {print \$3}');
		[ -n \"\$id\" ] && grep -q \"$BURN\" '$T/raw.txt' && grep -q \"\$id\" '$T/raw.txt'"

check_burn_ratio_count "$T/burn.pb" "$COMM" "$FREQ" "perf: "

# --- 2. --pid follows processes forked after the profile started ------------
COMM3=pchild$$
python3 - "$BURN" "$COMM3" <<'PY' &
import os, sys, time
time.sleep(1.5)  # perf is recording by now
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "--threads", "1", "--seconds", "2",
                           "--comm", sys.argv[2]])
os.waitpid(pid, 0)
PY
PARENT=$!
at_exit "kill $PARENT"
check "perf: --pid samples the children the process forks during the profile" \
	bash -c "'$VMTOOLS_AGENT' profile --profiler perf --seconds 4 --frequency 99 --pid $PARENT --format folded --output '$T/pid.folded' &&
		grep -q '^$COMM3;.*burn_hot' '$T/pid.folded'"
wait "$PARENT"

# --- 3. what goes wrong -----------------------------------------------------
# Stand-in perfs, found on PATH as the real one would be.
mkdir -p "$T/none" "$T/paranoid" "$T/garbage" "$T/dies"
cat >"$T/paranoid/perf" <<'EOF'
#!/bin/sh
echo "Error: Access to performance monitoring and observability operations is limited." >&2
echo "Consider adjusting /proc/sys/kernel/perf_event_paranoid setting." >&2
exit 255
EOF
# Both of these speak perf's --control protocol, then misbehave.
cat >"$T/garbage/perf" <<'EOF'
#!/bin/bash
while [ $# -gt 0 ]; do case $1 in --control) c=${2#fd:}; shift ;; -o) o=$2; shift ;; esac; shift; done
echo "not a perf.data file" >"$o"
read -r _ <&"${c%,*}"; echo ack >&"${c#*,}"
trap 'echo "fake perf: stopped" >&2; exit 0' INT
while :; do /bin/sleep 0.1; done
EOF
cat >"$T/dies/perf" <<'EOF'
#!/bin/bash
while [ $# -gt 0 ]; do case $1 in --control) c=${2#fd:}; shift ;; esac; shift; done
read -r _ <&"${c%,*}"; echo ack >&"${c#*,}"
/bin/sleep 0.3
echo "fake perf: failed to mmap with 12 (Cannot allocate memory)" >&2
exit 1
EOF
chmod +x "$T"/*/perf

# run_with DIR: the CLI with only DIR on PATH for perf; output in $T/DIR.err
run_with() {
	PATH="$T/$1:/usr/sbin:/sbin" "$VMTOOLS_AGENT" profile --profiler perf \
		--seconds 1 --comm nosuch --output "$T/$1.pb" 2>"$T/$1.err"
}
if [ -e /run/vm-tools/.vmtools/manifest.json ]; then
	skip "no perf anywhere is a clear error" "a tools image is mounted at /run/vm-tools"
else
	check "no perf anywhere: fails, says perf is not available and what to do" \
		bash -c "! PATH='$T/none' '$VMTOOLS_AGENT' profile --profiler perf --seconds 1 --output '$T/none.pb' 2>'$T/none.err' &&
			grep -q 'perf is not available' '$T/none.err' && grep -q -- '--perf' '$T/none.err'"
fi
export -f run_with
export T VMTOOLS_AGENT
check "perf refused by perf_event_paranoid: fails with perf's own message" \
	bash -c "! run_with paranoid && grep -q 'perf_event_paranoid' '$T/paranoid.err' &&
		grep -q 'before it started recording' '$T/paranoid.err'"
check "perf writing a bad perf.data: fails naming the problem, with perf's words" \
	bash -c "! run_with garbage && grep -q 'PERFILE2' '$T/garbage.err' &&
		grep -q 'fake perf: stopped' '$T/garbage.err'"
check "perf dying while recording: fails with its exit status and message" \
	bash -c "! run_with dies && grep -q 'exited with status 1 while recording' '$T/dies.err' &&
		grep -q 'Cannot allocate memory' '$T/dies.err'"
check "--perf PATH runs that perf rather than PATH's" \
	bash -c "! '$VMTOOLS_AGENT' profile --profiler perf --perf '$T/paranoid/perf' --seconds 1 \
		--comm nosuch --output '$T/override.pb' 2>'$T/override.err' &&
		grep -q 'perf_event_paranoid' '$T/override.err'"
check "--perf with a relative path is refused (exit 2)" \
	bash -c "'$VMTOOLS_AGENT' profile --profiler perf --perf perf --output '$T/rel.pb' 2>'$T/rel.err'; [ \$? = 2 ] &&
		grep -q 'must be the absolute path' '$T/rel.err'"
check "no output file is left by a failed profile" \
	bash -c "[ ! -e '$T/garbage.pb' ] && [ ! -e '$T/dies.pb' ]"
check "nothing is left in \$TMPDIR after the failures" test -z "$(ls -A "$TMPDIR")"
