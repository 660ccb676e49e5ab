#!/usr/bin/env bash
# tests/integration/70-perf-burn.sh - `vmtools-agent profile --profiler perf`
# against the burner (tests/programs/burn: burn_hot_a and burn_hot_b 3:1).
# The checks every backend must pass (tests/lib/profile-checks.sh, run for
# bpf by 30-profile-burn.sh): the ratio within 3 points, the sample count =
# CPU time x frequency within 10%, go tool pprof reads it without a warning,
# the burner's mapping has its build id (from perf's MMAP2 records), --pid
# follows forks, Ctrl-C keeps what was collected, bad arguments are
# refused.  Then perf's own: neither perf nor its perf.data outlives the
# profile, even when the agent is killed, and what goes wrong, with
# stand-in perf binaries on PATH: no perf, perf refused by
# perf_event_paranoid, perf writing garbage, perf dying while recording:
# each a clear message carrying perf's own words.
# perf runs as the agent's child with its perf.data already unlinked, and is
# gone with the profile, also when the agent is killed with SIGKILL, leaving
# no file; stand-ins come from tests/lib/fake-perf.sh; --perf PATH wins over
# PATH, and a relative one is refused.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/profile-checks.sh"
. "$SRC/tests/lib/fake-perf.sh"

skip_unless "perf backend profile of a known workload" "$(need_perf)" \
	"$(need_cmd go python3 readelf)" "$(need_burn)"
pprof_home
export TMPDIR=$T/tmp
mkdir -p "$TMPDIR"

# --- 1. what every backend does, and perf's lifetime -----------------------
FREQ=299
COMM=pburn$$
profile_bg perf burn --seconds 30 --frequency $FREQ --comm "$COMM"
if [ -n "$PERF_PID" ] && [ -z "$(ls -A "$TMPDIR")" ]; then
	ok "perf runs as the agent's child, its perf.data already unlinked (nothing in \$TMPDIR)"
else
	not_ok "perf child '$PERF_PID', \$TMPDIR holds: $(ls -A "$TMPDIR")"
fi
run_burn "$COMM" 6
wait "$BURN_WRAPPER"
check_interrupted perf burn
check "perf is gone with the profile" bash -c "! kill -0 ${PERF_PID:-999999999} 2>/dev/null"

# An agent killed outright (SIGKILL: no cleanup of its own) must not leave
# perf recording the machine: perf gets SIGINT from the kernel (its
# parent-death signal) and exits, removing its own temporary files.
profile_bg perf killed --seconds 60 --comm "$COMM"
kill -9 "$PROFILE_PID"
wait "$PROFILE_PID" 2>/dev/null
gone=no
for ((i = 0; i < 100; i++)); do
	kill -0 "${PERF_PID:-999999999}" 2>/dev/null || { gone=yes; break; }
	sleep 0.1
done
check "perf (pid ${PERF_PID:-none}) exits within 10 s when the agent is killed with SIGKILL" \
	test -n "$PERF_PID" -a "$gone" = yes
check "and leaves no file behind (\$TMPDIR, the output)" \
	bash -c "[ -z \"\$(ls -A '$TMPDIR')\" ] && [ ! -e '$T/killed.pb' ]"
check "nothing is left in \$TMPDIR" test -z "$(ls -A "$TMPDIR")"

check_burn_profile perf "$T/burn.pb" "$COMM" $FREQ
check_folded_gzip perf
check_pid_follows_forks perf
check_cli_refusals perf

# --- 2. what goes wrong -----------------------------------------------------
# Stand-in perfs, found on PATH as the real one would be.
make_fake_perfs

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
