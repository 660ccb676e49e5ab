#!/usr/bin/env bash
# tests/integration/36-pg-versions.sh - PostgreSQL's wait_event and
# query_id labels on every major version the agent has a table for, and on
# two minor releases of two of them: 15 as Debian installed it (whatever
# its minor release) and 15.10, 16.14, 17.10 and 17.2, 18.4 (the server
# builds tests/pg-versions pins, installed by ci/install-deps.sh).  For
# each, a real cluster of that release is started and
#   - the agent reads the release from the server executable, and its
#     table of that major version (agent/symbolize/pgwait_NN.c, printed by
#     tests/programs/pgwait-dump.c as that release names its events:
#     a few names changed between minor releases) is right for it
#     (tests/lib/pg-wait-compare.py): every class, event number and name,
#     where LWLocks of extensions begin that the server executable of that
#     release names when asked (tests/lib/pg-wait-events.sh), and
#     st_query_id's offset in a backend of it, is the table's; the extra
#     events, if any, come after that release's last number in their
#     class (a later minor release's, never reported by this one);
#   - an off-CPU profile of a backend waiting for an advisory lock gives it
#     the 2 s under wait_event=Lock:advisory and the query_id
#     pg_stat_activity shows for it.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"
. "$SRC/tests/lib/pg-wait-events.sh"
. "$SRC/tests/lib/pprof-raw.sh"

skip_unless "PostgreSQL 15 to 18, two minor releases of 15 and 17: wait-event tables and labels" "$(need_bpf)" \
	"$(need_cmd go awk nm python3)" "$(pg_reason)"
pprof_home
DUMP=$BUILD/programs/pgwait-dump
TOP=$T
chmod 755 "$TOP"

for r in 15 15.10 16.14 17.10 17.2 18.4; do
	v=${r%%.*}
	T=$TOP/pg$r
	mkdir -p "$T"
	cd "$T" || exit 1
	if ! pg_use_release "$r" "$T/server" >"$T/release.why"; then
		not_ok "PostgreSQL $r: its server is installed ($(cat "$T/release.why"))"
		continue
	fi
	if ! pg_start; then
		not_ok "PostgreSQL $r: a cluster starts"
		continue
	fi
	# 150018 is 15.18: Debian's 15 is whichever minor release it has.
	num=$(pg_psql "SHOW server_version_num")
	release=$((num / 10000)).$((num % 10000))
	if [ "$r" = 15 ]; then
		r="$release (Debian's)"
		check "PostgreSQL $r: the cluster says it is 15" test "${release%%.*}" = 15
	else
		check "PostgreSQL $r: the cluster says it is $r" test "$release" = "$r"
	fi

	check "PostgreSQL $r: the agent reads its release from the executable ($release)" \
		test "$("$DUMP" --release-of "$PG_BIN/postgres" "$v")" = "$release"
	if pg_wait_events "$T/facts"; then
		# The table as this release names its events (a few names
		# changed between minor releases: pgwait.h's renames).
		"$DUMP" "$release" 2>"$T/dump.err" | LC_ALL=C sort >"$T/table"
		rc=0
		python3 "$SRC/tests/lib/pg-wait-compare.py" "$T/table" "$T/facts" >"$T/compare" || rc=$?
		check "PostgreSQL $r: the agent's $v table as $release names them ($(grep -c '^event' "$T/table") events) is right for it ($(grep -c '^event' "$T/facts") events)" \
			test "$rc" = 0 -a -s "$T/table"
		diag "$T/compare"
	else
		not_ok "PostgreSQL $r: its server names its wait events and a backend's query id is found"
	fi

	pg_psql "ALTER SYSTEM SET compute_query_id = on" >/dev/null
	pg_psql "SELECT pg_reload_conf()" >/dev/null
	pg_session holder
	exec 5>"$T/holder.in"
	pg_session waiter
	exec 6>"$T/waiter.in"
	echo "SELECT pg_advisory_lock(42); SELECT 'locked';" >&5
	for _ in $(seq 100); do
		grep -q locked "$T/holder.out" 2>/dev/null && break
		sleep 0.05
	done
	echo "SELECT pg_backend_pid(); SELECT pg_advisory_lock(42);" >&6
	waiter=
	for _ in $(seq 100); do
		waiter=$(head -n 1 "$T/waiter.out" 2>/dev/null)
		[ -n "$waiter" ] && [ "$(pg_psql "SELECT wait_event FROM pg_stat_activity WHERE pid = $waiter")" = advisory ] && break
		sleep 0.05
	done
	qid=$(pg_psql "SELECT query_id FROM pg_stat_activity WHERE pid = ${waiter:-0}")
	check "PostgreSQL $r: pg_stat_activity shows the waiter ($waiter) under Lock:advisory, query_id $qid" \
		test "$(pg_psql "SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity WHERE pid = ${waiter:-0}")" = Lock:advisory -a -n "$qid"
	"$VMTOOLS_AGENT" profile --kind offcpu --seconds 2 --output "$T/lock.pb" 2>"$T/profile.err"
	check "PostgreSQL $r: an off-CPU profile is taken (no 'no table' complaint)" \
		sh -c "test -s '$T/lock.pb' && ! grep -q 'no table\|not known' '$T/profile.err'"
	diag "$T/profile.err"
	if read_raw "$T/lock.pb"; then
		blocked=$(raw_sum "$T/lock.pb.raw" "$waiter")
		advisory=$(raw_sum "$T/lock.pb.raw" "$waiter" 'wait_event:[Lock:advisory]')
		labelled=$(raw_sum "$T/lock.pb.raw" "$waiter" 'wait_event:[Lock:advisory]' "query_id:[$qid]")
		diag <<<"PostgreSQL $r: waiter blocked $blocked ns, $advisory under Lock:advisory, $labelled with query_id $qid"
		check "PostgreSQL $r: the waiter is blocked 2 s (within 5%)" within "$blocked" 2000000000 5
		check "PostgreSQL $r: at least 95% of it under wait_event=Lock:advisory" at_least "$advisory" "$blocked" 95
		check "PostgreSQL $r: ... and query_id=$qid" at_least "$labelled" "$blocked" 95
	else
		not_ok "PostgreSQL $r: go tool pprof reads the profile"
		diag "$T/lock.pb.err"
	fi
	exec 5>&- 6>&-
	pg_as "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null 2>&1
	wait 2>/dev/null
done
T=$TOP
cd "$TOP" || exit 1
