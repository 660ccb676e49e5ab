# tests/lib/burn.sh - the known workload for profiler tests, sourced after
# tap.sh: tests/programs/burn under a python3 wrapper that records the CPU
# time it really used, so a test can compare a profile's sample count with
# CPU time x frequency, and `go tool pprof` as the judge of what we emit.
#
#   run_burn COMM SECONDS   start 2 burner threads named COMM in the
#                           background; BURN_WRAPPER is the wrapper's pid and
#                           $T/COMM.cpu gets the CPU seconds used when it ends
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

pprof_ok() {
	go tool pprof "$2" "$1" >"$T/pprof.out" 2>"$T/pprof.err" || return 1
	[ ! -s "$T/pprof.err" ] || { cat "$T/pprof.err"; return 1; }
	[ -s "$T/pprof.out" ]
}
