#!/usr/bin/env bash
# tests/integration/84-warm-postgres.sh - the warmer of `serve`: a real
# PostgreSQL 15's unwind tables and symbols are built before any profile
# asks (/healthz's unwind builds > 0 with no profile taken), the first
# profile then finds them (hits, no builds), a binary exec'd later is
# warmed within a few rescans, and --no-warm builds nothing before a
# profile.  And the BPF programs are loaded and verified once at start:
# /healthz says so before any profile, and the first profile borrows the
# preallocated maps that load made.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"
. "$SRC/tests/lib/agent.sh"
. "$SRC/tests/lib/burn.sh"

skip_unless "warming PostgreSQL's binaries" "$(need_bpf)" \
	"$(need_cmd curl python3)" "$(pg_reason)" "$(need_burn)"

if ! pg_start; then
	not_ok "PostgreSQL cluster starts"
	exit 0
fi

start_agent warm VMTOOLS_WARM_INTERVAL_MS=200 --no-setup --comm postgres \
	--comm vmt-warm-late
check "the warmer settles within 60 s" agent_warmed
builds=$(agent_health unwind.builds)
hits=$(agent_health unwind.hits)
diag_line="before any profile: warm.binaries=$(agent_health warm.binaries) unwind.builds=$builds unwind.hits=$hits symbols.binaries=$(agent_health symbols.binaries) last_pass_took_ms=$(agent_health warm.last_pass_took_ms)"
echo "# $diag_line"
check "/healthz says the warmer is on" test "$(agent_health warm.enabled)" = True
check "PostgreSQL's tables are built before any profile (unwind.builds > 0)" \
	test "${builds:-0}" -gt 0
check "and its symbols are read (symbols.binaries > 0)" \
	test "$(agent_health symbols.binaries)" -gt 0
echo "# the BPF programs loaded at start in $(agent_health bpf.programs.load_ms) ms"
check "the BPF programs were loaded and verified at start, before any profile" \
	test "$(agent_health bpf.programs.loaded_at_start)" = True

st=$(agent_post profile/cpu \
	'{"profiler": {"BccProfile": null}, "sampling_frequency": 99, "timeout_seconds": 2, "archive": false}' \
	"$T/first.pb")
check "the first profile: 200" test "$st" = 200
echo "# after the first profile: unwind.builds=$(agent_health unwind.builds) unwind.hits=$(agent_health unwind.hits)"
check "the first profile builds no table (unwind.builds unchanged)" \
	test "$(agent_health unwind.builds)" = "$builds"
check "the first profile finds the tables built (unwind.hits grew)" \
	test "$(agent_health unwind.hits)" -gt "$hits"
echo "# maps kept $(agent_health bpf.programs.maps_kept), lent $(agent_health bpf.programs.maps_reused)"
check "the first profile borrows the maps the load at start made (bpf.programs.maps_reused > 0)" \
	test "$(agent_health bpf.programs.maps_reused)" -gt 0

# A binary that appears after the agent started: a copy of the burner is
# another file (another inode), with a table of its own.
cp "$BURN" "$T/late"
chmod 755 "$T/late"
binaries=$(agent_health warm.binaries)
builds=$(agent_health unwind.builds)
"$T/late" --comm vmt-warm-late --threads 1 --seconds 60 >/dev/null &
late=$!
at_exit "kill $late"
warmed_late() {
	for ((i = 0; i < 300; i++)); do
		[ "$(agent_health warm.binaries)" -gt "$binaries" ] &&
			[ "$(agent_health unwind.builds)" -gt "$builds" ] && return 0
		sleep 0.1
	done
	return 1
}
check "a binary exec'd later is warmed by a later pass, no profile asked" \
	warmed_late
kill "$late"
stop_agent
check "the agent exits 0" test $? = 0

start_agent cold --no-setup --no-warm --comm postgres
sleep 1
check "--no-warm: /healthz says the warmer is off" \
	test "$(agent_health warm.enabled)" = False
check "--no-warm: no table is built before a profile" \
	test "$(agent_health unwind.builds)" = 0
stop_agent
