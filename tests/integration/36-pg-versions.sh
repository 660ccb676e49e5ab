#!/usr/bin/env bash
# tests/integration/36-pg-versions.sh - PostgreSQL's wait_event and
# query_id labels on every major version the agent has a table for: 15
# (Debian's), 16, 17 and 18 (the server builds tests/pg-versions pins,
# installed by ci/install-deps.sh).  For each, a real cluster of that
# version is started and
#   - the agent's table (agent/symbolize/pgwait_NN.c, printed by
#     tests/programs/pgwait-dump.c) is exactly what a backend of that
#     version answers when gdb asks it (tests/lib/pg-wait-events.sh):
#     every class, every event's number and name, where LWLocks of
#     extensions begin, and st_query_id's offset;
#   - an off-CPU profile of a backend waiting for an advisory lock gives it
#     the 2 s under wait_event=Lock:advisory and the query_id
#     pg_stat_activity shows for it.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"
. "$SRC/tests/lib/pg-wait-events.sh"
. "$SRC/tests/lib/pprof-raw.sh"

skip_unless "PostgreSQL 15 to 18: wait-event tables and labels" "$(need_bpf)" \
	"$(need_cmd gdb go awk)" "$(pg_reason)"
pprof_home
DUMP=$BUILD/programs/pgwait-dump
TOP=$T
chmod 755 "$TOP"

# version_bin V: the directory of PostgreSQL V's server programs.
version_bin() {
	if [ "$1" = 15 ]; then
		echo /usr/lib/postgresql/15/bin
	else
		echo "$BUILD/npm/pg/node_modules/pg$1/native/bin"
	fi
}

# session NAME: a psql session reading statements from fifo $T/NAME.in
# (written through fd 5 or 6 by the caller), printing to $T/NAME.out (its
# errors to $T/NAME.err), run from $T, where the postgres user may be.
session() {
	mkfifo "$T/$1.in"
	chmod 666 "$T/$1.in"
	(cd "$T" && pg_as psql -h "$PGHOST" -p "$PGPORT" -U postgres -X -q -At postgres \
		<"$T/$1.in" >"$T/$1.out" 2>"$T/$1.err") &
}

for v in 15 16 17 18; do
	T=$TOP/pg$v
	mkdir -p "$T"
	cd "$T" || exit 1
	PG_BIN=$(version_bin "$v")
	if [ ! -x "$PG_BIN/postgres" ]; then
		not_ok "PostgreSQL $v: its server is installed ($PG_BIN: run ci/install-deps.sh)"
		continue
	fi
	# The postgres user runs it: a copy where it cannot reach the build.
	if ! runuser -u postgres -- test -x "$PG_BIN/postgres"; then
		cp -a "$(dirname "$PG_BIN")" "$T/server"
		chmod -R a+rX "$T/server"
		PG_BIN=$T/server/bin
	fi
	if ! pg_start; then
		not_ok "PostgreSQL $v: a cluster starts"
		continue
	fi
	check "PostgreSQL $v: the cluster says it is $v" \
		test "$(pg_psql "SHOW server_version_num" | cut -c 1-2)" = "$v"

	if pg_wait_events "$T/facts"; then
		"$DUMP" "$v" 2>"$T/dump.err" | LC_ALL=C sort >"$T/table"
		diff "$T/table" "$T/facts" >"$T/table.diff"
		check "PostgreSQL $v: the agent's table is what the backend names ($(grep -c '^event' "$T/facts") events)" \
			test ! -s "$T/table.diff" -a -s "$T/table"
		diag "$T/table.diff"
	else
		not_ok "PostgreSQL $v: gdb asks a backend its wait events"
	fi

	pg_psql "ALTER SYSTEM SET compute_query_id = on" >/dev/null
	pg_psql "SELECT pg_reload_conf()" >/dev/null
	session holder
	exec 5>"$T/holder.in"
	session waiter
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
	check "PostgreSQL $v: pg_stat_activity shows the waiter ($waiter) under Lock:advisory, query_id $qid" \
		test "$(pg_psql "SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity WHERE pid = ${waiter:-0}")" = Lock:advisory -a -n "$qid"
	"$VMTOOLS_AGENT" profile --kind offcpu --seconds 2 --output "$T/lock.pb" 2>"$T/profile.err"
	check "PostgreSQL $v: an off-CPU profile is taken (no 'no table' complaint)" \
		sh -c "test -s '$T/lock.pb' && ! grep -q 'no table\|not known' '$T/profile.err'"
	diag "$T/profile.err"
	if read_raw "$T/lock.pb"; then
		blocked=$(raw_sum "$T/lock.pb.raw" "$waiter")
		advisory=$(raw_sum "$T/lock.pb.raw" "$waiter" 'wait_event:[Lock:advisory]')
		labelled=$(raw_sum "$T/lock.pb.raw" "$waiter" 'wait_event:[Lock:advisory]' "query_id:[$qid]")
		diag <<<"PostgreSQL $v: waiter blocked $blocked ns, $advisory under Lock:advisory, $labelled with query_id $qid"
		check "PostgreSQL $v: the waiter is blocked 2 s (within 5%)" within "$blocked" 2000000000 5
		check "PostgreSQL $v: at least 95% of it under wait_event=Lock:advisory" at_least "$advisory" "$blocked" 95
		check "PostgreSQL $v: ... and query_id=$qid" at_least "$labelled" "$blocked" 95
	else
		not_ok "PostgreSQL $v: go tool pprof reads the profile"
		diag "$T/lock.pb.err"
	fi
	exec 5>&- 6>&-
	pg_as "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null 2>&1
	wait 2>/dev/null
done
T=$TOP
cd "$TOP" || exit 1
