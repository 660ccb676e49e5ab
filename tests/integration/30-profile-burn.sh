#!/usr/bin/env bash
# tests/integration/30-profile-burn.sh - `vmtools-agent profile` with the
# eBPF backend against a program with a known profile (tests/programs/burn:
# threads spending CPU time in burn_hot_a and burn_hot_b 3:1).  The checks
# every backend must pass (tests/lib/profile-checks.sh, run for perf by
# 70-perf-burn.sh): the ratio comes out within 3 percentage points, the
# sample count matches the CPU time the burner used x frequency within 10%,
# go tool pprof reads every output without a warning, forks of a --pid
# target are followed, Ctrl-C ends a profile early and keeps it, bad
# arguments are refused.  Then the eBPF backend's own: no BPF program stays
# loaded.
# The shared checks also cover sample types and period, labels, the build
# id, folded and gzip output.  A profile with no matching process is still a
# valid pprof.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/profile-checks.sh"

skip_unless "eBPF profile of a known workload" "$(need_bpf)" \
	"$(need_cmd go python3 bpftool readelf)" "$(need_burn)"
pprof_home

# --- 1. what every backend does ------------------------------------------
FREQ=499
COMM=burn$$
profile_bg bpf burn --seconds 30 --frequency $FREQ --comm "$COMM"
run_burn "$COMM" 6
wait "$BURN_WRAPPER"
check_interrupted bpf burn
check_burn_profile bpf "$T/burn.pb" "$COMM" $FREQ
check_folded_gzip bpf
check_pid_follows_forks bpf
check_cli_refusals bpf

# --- 1b. a target taking turns on one CPU with a longer-named process ----
# The program fills one record per CPU for every sample: a command name
# shorter than the previous sample's must still match its target.
SHORT=b$(($$ % 10000))
taskset -c 0 "$BURN" --comm "$SHORT" --threads 1 --seconds 4 >/dev/null &
SHORT_PID=$!
at_exit "kill -9 $SHORT_PID"
taskset -c 0 "$BURN" --comm "longer-name$(($$ % 10000))" --threads 1 --seconds 4 >/dev/null &
at_exit "kill -9 $!"
"$VMTOOLS_AGENT" profile --seconds 3 --frequency $FREQ --comm "$SHORT" --output "$T/short.pb" 2>"$T/short.err"
n=$(go tool pprof -sample_index=samples -top "$T/short.pb" 2>/dev/null | sed -n 's/.*Total samples = \([0-9]*\).*/\1/p')
n=${n:-0}
# Half of CPU 0 for 3 s at FREQ is ~750; a third of that is plenty of room.
if [ "$n" -ge $((3 * FREQ / 6)) ]; then
	ok "a target sharing its CPU with a longer-named process keeps its samples ($n in 3 s at $FREQ Hz)"
else
	not_ok "a target sharing its CPU with a longer-named process: $n samples in 3 s at $FREQ Hz, expected about $((3 * FREQ / 2))"
fi

# --- 2. nothing stays loaded ------------------------------------------------
# A command name no process has, within the 15 characters a name may have.
"$VMTOOLS_AGENT" profile --seconds 2 --comm "nocomm$(($$ % 100000))" --output "$T/empty.pb" 2>/dev/null &
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
