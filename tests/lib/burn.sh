# shellcheck shell=bash
# tests/lib/burn.sh - the known workload for profiler tests, sourced after
# tap.sh: tests/programs/burn under a python3 wrapper that records the CPU
# time it really used, so a test can compare a profile's sample count with
# CPU time x frequency, and `go tool pprof` as the judge of what we emit.
#
#   run_burn COMM SECONDS   start 2 burner threads named COMM in the
#                           background; BURN_WRAPPER is the wrapper's pid and
#                           $T/COMM.cpu gets the CPU seconds used when it ends
#   burn_bg COMM SECONDS    one burner thread named COMM in the background,
#                           not a job of the script, killed when it ends;
#                           BURN_PID is its pid (the API tests name it
#                           postgres, the agent's default target)
#   need_burn               why the burner cannot run (empty: it can)
#   pprof_ok FILE MODE      go tool pprof MODE (-top, -traces, -raw) reads
#                           FILE and prints nothing on stderr
#
# The 3:1 ratio is 30 ms : 10 ms: a cycle of 20 sampling periods at 499 Hz,
# so periodic sampling cannot alias with the workload (with 3 ms : 1 ms and
# 2 samples a cycle, an undisturbed thread phase-locks with the timer and the
# ratio drifts by several points).

BURN=$BUILD/programs/burn

run_burn() {
	python3 - "$BURN" "$1" "$2" "$T/$1.cpu" <<'PY' &
import resource, subprocess, sys
burn, comm, secs, out = sys.argv[1:5]
subprocess.run([burn, "--threads", "2", "--seconds", secs, "--ratio", "30:10",
                "--comm", comm], check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(out, "w").write("%f\n" % (r.ru_utime + r.ru_stime))
PY
	BURN_WRAPPER=$!
	at_exit "kill $BURN_WRAPPER"
}

burn_bg() {
	"$BURN" --comm "$1" --threads 1 --seconds "$2" >/dev/null &
	BURN_PID=$!
	disown "$BURN_PID"
	at_exit "kill -9 $BURN_PID"
}

need_burn() { [ -x "$BURN" ] || echo "needs $BURN (make tests)"; }

pprof_ok() {
	go tool pprof "$2" "$1" >"$T/pprof.out" 2>"$T/pprof.err" || return 1
	[ ! -s "$T/pprof.err" ] || { cat "$T/pprof.err"; return 1; }
	[ -s "$T/pprof.out" ]
}

# check_burn_ratio_count PROFILE COMM FREQ [PREFIX]: the profile of the
# burner run by `run_burn COMM` has burn_hot_a:burn_hot_b at 3:1 within 3
# points, and as many samples as its CPU time x FREQ within 10%, both as
# go tool pprof counts them.  PREFIX starts each line's description.
check_burn_ratio_count() {
	local pb=$1 comm=$2 freq=$3 pre=${4:-} total a b cpu
	go tool pprof -sample_index=samples -top -cum "$pb" >"$T/top.txt" 2>/dev/null
	total=$(sed -n 's/.*Total samples = \([0-9]*\).*/\1/p' "$T/top.txt")
	a=$(awk '$6 == "burn_hot_a" {print $4}' "$T/top.txt")
	b=$(awk '$6 == "burn_hot_b" {print $4}' "$T/top.txt")
	cpu=$(cat "$T/$comm.cpu" 2>/dev/null || echo 0)
	if python3 -c "import sys; a,b=${a:-0},${b:-0}; sys.exit(0 if a+b>0 and abs(a/(a+b)-0.75)<=0.03 else 1)"; then
		ok "${pre}burn_hot_a:burn_hot_b comes out 3:1 within 3 points ($a:$b samples)"
	else
		not_ok "${pre}burn_hot_a:burn_hot_b ratio: $a:$b samples (want 75% +- 3 in burn_hot_a)"
		diag "$T/top.txt"
	fi
	# The burner's CPU time x frequency is the number of samples it deserves.
	if python3 -c "import sys; t,c=${total:-0},$cpu*$freq; sys.exit(0 if c>0 and abs(t-c)/c<=0.10 else 1)"; then
		ok "${pre}sample count matches the burner's CPU time x frequency within 10% ($total samples, ${cpu}s x $freq Hz)"
	else
		not_ok "${pre}sample count: $total samples, burner used ${cpu}s x $freq Hz"
	fi
}
