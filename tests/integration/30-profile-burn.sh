#!/usr/bin/env bash
# tests/integration/30-profile-burn.sh - `vmtools-agent profile` with the
# eBPF backend against a program with a known profile (tests/programs/burn:
# threads spending CPU time in burn_hot_a and burn_hot_b 3:1): the ratio
# comes out within 3 percentage points, the sample count matches the CPU
# time the burner used x frequency within 10%, go tool pprof reads every
# output without a warning, forks of a --pid target are followed, Ctrl-C
# ends a profile early and keeps it, and no BPF program stays loaded.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"

reason=$(need_bpf)
[ -z "$reason" ] && reason=$(need_cmd go python3 bpftool)
[ -z "$reason" ] && [ ! -x "$BURN" ] && reason="needs $BURN (make tests)"
if [ -n "$reason" ]; then
	skip "eBPF profile of a known workload" "$reason"
	exit 0
fi

export HOME=$T/home PPROF_TMPDIR=$T/pprof
mkdir -p "$HOME" "$PPROF_TMPDIR"

# --- 1. comm target, pprof, ratio and count --------------------------------
FREQ=499
COMM=burn$$
"$VMTOOLS_AGENT" profile --seconds 30 --frequency $FREQ --comm "$COMM" \
	--output "$T/burn.pb" 2>"$T/agent.err" &
AGENT=$!
at_exit "kill $AGENT"
sleep 0.5 # the agent attaches in milliseconds; leave it plenty
run_burn "$COMM" 6
wait "$BURN_WRAPPER"
kill -INT "$AGENT"
wait "$AGENT"
st=$?
if [ "$st" = 0 ] && [ -s "$T/burn.pb" ]; then
	ok "Ctrl-C ends a profile early and writes what was collected"
else
	not_ok "profile stopped by SIGINT: status $st"
	diag "$T/agent.err"
fi

check "go tool pprof -top reads the profile without a warning" pprof_ok "$T/burn.pb" -top
check "go tool pprof -traces reads the profile without a warning" pprof_ok "$T/burn.pb" -traces
check "go tool pprof -raw reads the profile without a warning" pprof_ok "$T/burn.pb" -raw

go tool pprof -raw "$T/burn.pb" >"$T/raw.txt" 2>/dev/null
check "the pprof has samples/count and cpu/nanoseconds, period 1e9/$FREQ" \
	bash -c "grep -q '^samples/count cpu/nanoseconds' '$T/raw.txt' &&
		grep -qx 'Period: $((1000000000 / FREQ))' '$T/raw.txt' &&
		grep -q 'PeriodType: cpu nanoseconds' '$T/raw.txt'"
check "samples carry pid, tid and comm labels" \
	bash -c "grep -q 'comm:\[$COMM\]' '$T/raw.txt' && grep -q 'pid:\[' '$T/raw.txt' && grep -q 'tid:\[' '$T/raw.txt'"
check "the burner's mapping carries its file name and GNU build id" \
	bash -c "id=\$(readelf -n '$BURN' | awk '/Build ID/ {print \$3}');
		[ -n \"\$id\" ] && grep -q \"$BURN\" '$T/raw.txt' && grep -q \"\$id\" '$T/raw.txt'"

check_burn_ratio_count "$T/burn.pb" "$COMM" "$FREQ"

# --- 2. folded + gzip -------------------------------------------------------
COMM2=fold$$
run_burn "$COMM2" 2
check "folded output names comm;...;burn_hot_a;spin_until" \
	bash -c "'$VMTOOLS_AGENT' profile --seconds 2 --frequency 99 --comm '$COMM2' --format folded --output '$T/burn.folded' &&
		grep -Eq '^$COMM2;.*;burn_hot_a;spin_until(;[^ ]+)* [0-9]+\$' '$T/burn.folded'"
wait "$BURN_WRAPPER"
run_burn "$COMM2" 2
check "--gzip writes a gzip that go tool pprof reads" \
	bash -c "'$VMTOOLS_AGENT' profile --seconds 1 --comm '$COMM2' --gzip --output '$T/burn.pb.gz' &&
		gzip -t '$T/burn.pb.gz' && HOME='$HOME' go tool pprof -top '$T/burn.pb.gz' 2>&1 | grep -q burn_hot"
wait "$BURN_WRAPPER"

# --- 3. --pid follows processes forked after the profile started ------------
COMM3=child$$
# The target forks and execs the burner once the profile runs.
python3 - "$BURN" "$COMM3" <<'PY' &
import os, sys, time
time.sleep(1.0)  # the profile is running by now
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "--threads", "1", "--seconds", "2",
                           "--comm", sys.argv[2]])
os.waitpid(pid, 0)
PY
PARENT=$!
at_exit "kill $PARENT"
check "--pid samples the children the process forks during the profile" \
	bash -c "'$VMTOOLS_AGENT' profile --seconds 4 --frequency 99 --pid $PARENT --format folded --output '$T/pid.folded' &&
		grep -q '^$COMM3;.*burn_hot' '$T/pid.folded'"
wait "$PARENT"
check_fails "--pid of a process that does not exist is refused" \
	"$VMTOOLS_AGENT" profile --seconds 1 --pid 999999999 --output "$T/none.pb"
check "and says which pid" \
	bash -c "'$VMTOOLS_AGENT' profile --seconds 1 --pid 999999999 --output '$T/none.pb' 2>&1 | grep -q 'no process with pid 999999999'"
check_fails "--frequency 0 is refused" "$VMTOOLS_AGENT" profile --frequency 0 --output "$T/x.pb"
check_fails "--frequency 1001 is refused" "$VMTOOLS_AGENT" profile --frequency 1001 --output "$T/x.pb"
check_fails "a missing --output is refused" "$VMTOOLS_AGENT" profile --seconds 1

# --- 4. nothing stays loaded ------------------------------------------------
"$VMTOOLS_AGENT" profile --seconds 2 --comm nosuchcomm$$ --output "$T/empty.pb" 2>/dev/null &
AGENT=$!
sleep 1
progs=$(grep -h '^prog_id:' /proc/$AGENT/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u)
wait "$AGENT"
# The kernel frees programs after an RCU grace period: allow it 5 s.
for _ in $(seq 50); do
	left=""
	for id in $progs; do
		bpftool prog show id "$id" >/dev/null 2>&1 && left="$left $id"
	done
	[ -z "$left" ] && break
	sleep 0.1
done
if [ -n "$progs" ] && [ -z "$left" ]; then
	ok "the agent's BPF programs ($(echo $progs)) are gone when the profile ends"
else
	not_ok "BPF programs of the agent: '$(echo $progs)' during, '$left' still loaded after"
fi
check "a profile with no matching process is still a valid pprof" pprof_ok "$T/empty.pb" -raw
