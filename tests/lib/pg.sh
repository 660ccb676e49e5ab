# tests/lib/pg.sh - a real PostgreSQL cluster for a test, sourced after
# tap.sh: Debian's 15, or another release with PG_BIN.  The cluster lives
# in $T/pg, runs as the postgres user on a free loopback port with its
# socket in $T/pg, and is stopped when the script ends (at_exit), whatever
# happens.  Whatever runs as the postgres user runs from $T/pg (run_as), so
# that no test depends on the checkout being a place it may enter.
#
#   pg_reason            why PostgreSQL cannot run here (empty: it can)
#   pg_release_bin R     the server programs of release R: 15 is Debian's,
#                        the others (15.10, 16.14, 17.2, 17.10, 18.4) the
#                        builds tests/pg-versions pins, which
#                        ci/install-deps.sh installs into $BUILD/npm/pg
#   pg_copy_release R DIR  release R's install tree (bin/, lib/, share/)
#                        copied to DIR, readable and runnable by all
#   pg_use_release R DIR  PG_BIN set to release R's server programs where
#                        the postgres user can run them wherever the
#                        checkout lives: Debian's in place, a build of
#                        $BUILD copied to DIR; says why and fails when R is
#                        not installed
#   pg_release_dir R TOP  T set to TOP/pgR, made and entered, PG_BIN to
#                        release R's server copied there (pg_use_release);
#                        says not ok and fails when R is not installed
#   pg_start             initdb + start; sets PGHOST, PGPORT, PGUSER
#   pg_stop              stop the cluster now (immediate)
#   pg_as CMD [ARG]...   CMD as the postgres user, from $PGHOST (/ before
#                        pg_start)
#   pg_bench_init [SCALE]  pgbench -i into database postgres
#   pg_bench SECONDS [ARG]...  run pgbench in the foreground
#   pg_bench_bg SECONDS [ARG]... run pgbench in the background; PG_BENCH_PID
#   pg_bench_stop        stop it: pgbench itself (runuser's child, which a
#                        kill of PG_BENCH_PID alone leaves running), then
#                        wait until its backends have left pg_stat_activity
#   pg_psql SQL          run one statement, print the result unaligned
#                        (psql's complaints go to stderr, never into it)
#   pg_poll TRIES SQL    run SQL every 0.05 s until it prints something
#                        (at most TRIES times); print that
#   pg_session NAME      a psql session in the background reading
#                        statements from the FIFO $T/NAME.in (the caller
#                        opens it for writing), its results in $T/NAME.out,
#                        its complaints in $T/NAME.err
#   pg_idle_sessions N   the server restarted to take N + 50 connections,
#                        then N idle client backends: sessions idle1 to
#                        idleN, each after one statement, kept open until
#                        the script ends
#
# pgbench is the server's own, else Debian's 15 (the server builds of
# tests/pg-versions carry none; its -i and -S work against 16 to 18).

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

pg_bench_bin() {
	if [ -x "$PG_BIN/pgbench" ]; then echo "$PG_BIN/pgbench"; else echo /usr/lib/postgresql/15/bin/pgbench; fi
}

pg_reason() {
	[ -x "$PG_BIN/postgres" ] || { echo "needs PostgreSQL 15 ($PG_BIN/postgres)"; return; }
	[ "$(id -u)" = 0 ] || { echo "needs root to run PostgreSQL as the postgres user"; return; }
	id postgres >/dev/null 2>&1 || echo "needs the postgres user"
}

pg_free_port() {
	python3 - <<'PY'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

pg_release_bin() {
	if [ "$1" = 15 ]; then
		echo /usr/lib/postgresql/15/bin
	else
		echo "$BUILD/npm/pg/node_modules/pg$1/native/bin"
	fi
}

pg_copy_release() {
	local from
	from=$(dirname "$(pg_release_bin "$1")")
	rm -rf "$2"
	cp -a "$from" "$2" && chmod -R a+rX "$2"
}

pg_use_release() {
	PG_BIN=$(pg_release_bin "$1")
	[ -x "$PG_BIN/postgres" ] || { echo "$PG_BIN/postgres is not there: run ci/install-deps.sh"; return 1; }
	case $PG_BIN in
	"$SRC"/* | "$BUILD"/*)
		pg_copy_release "$1" "$2" || { echo "$PG_BIN could not be copied to $2"; return 1; }
		PG_BIN=$2/bin
		;;
	esac
}

pg_release_dir() {
	T=$2/pg$1
	mkdir -p "$T"
	cd "$T" || return 1
	pg_use_release "$1" "$T/server" >"$T/release.why" && return 0
	not_ok "PostgreSQL $1: its server is installed ($(cat "$T/release.why"))"
	return 1
}

pg_as() {
	local dir=/
	[ -d "${PGHOST:-}" ] && dir=$PGHOST
	run_as postgres "$dir" "$@"
}

pg_start() {
	PGDATA_DIR=$T/pg/data
	chmod 755 "$T"
	mkdir -p "$T/pg"
	chown postgres: "$T/pg"
	PGPORT=$(pg_free_port)
	PGHOST=$T/pg
	PGUSER=postgres
	export PGPORT PGHOST PGUSER
	pg_as "$PG_BIN/initdb" -D "$PGDATA_DIR" -A trust -U postgres >"$T/pg/initdb.log" 2>&1 ||
		{ cat "$T/pg/initdb.log" >&2; return 1; }
	at_exit "pg_as '$PG_BIN/pg_ctl' -D '$PGDATA_DIR' -m immediate -w stop"
	pg_as "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -w -t 60 -l "$T/pg/server.log" \
		-o "-p $PGPORT -k $T/pg -c listen_addresses='' -c shared_buffers=64MB" start >/dev/null ||
		{ cat "$T/pg/server.log" >&2; return 1; }
}

pg_stop() {
	pg_as "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null 2>&1
	wait 2>/dev/null
}

pg_psql() { pg_as psql -h "$PGHOST" -p "$PGPORT" -U postgres -X -A -t -c "$1" postgres; }

pg_poll() {
	local out= n
	for ((n = 0; n < $1; n++)); do
		out=$(pg_psql "$2" 2>/dev/null)
		[ -n "$out" ] && break
		sleep 0.05
	done
	printf '%s\n' "$out"
}

pg_session() {
	mkfifo "$T/$1.in"
	chmod 666 "$T/$1.in"
	pg_as psql -h "$PGHOST" -p "$PGPORT" -U postgres -X -q -At postgres \
		<"$T/$1.in" >"$T/$1.out" 2>"$T/$1.err" &
}

pg_idle_sessions() {
	local i fd
	pg_psql "ALTER SYSTEM SET max_connections = $(($1 + 50))" >/dev/null
	pg_as "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -w -t 60 -l "$T/pg/server.log" restart >/dev/null || return 1
	for i in $(seq "$1"); do
		pg_session "idle$i"
		exec {fd}>"$T/idle$i.in"
		echo "SELECT 1;" >&"$fd"
	done
}

pg_bench_init() {
	pg_as "$(pg_bench_bin)" -h "$PGHOST" -p "$PGPORT" -U postgres -i -s "${1:-1}" -q postgres >"$T/pg/pgbench-init.log" 2>&1 ||
		{ cat "$T/pg/pgbench-init.log" >&2; return 1; }
}

pg_bench() {
	local secs=$1
	shift
	pg_as "$(pg_bench_bin)" -h "$PGHOST" -p "$PGPORT" -U postgres -T "$secs" "$@" postgres
}

pg_bench_bg() {
	local secs=$1
	shift
	pg_bench "$secs" "$@" >"$T/pg/pgbench.log" 2>&1 &
	PG_BENCH_PID=$!
	at_exit "pg_bench_stop"
}

pg_bench_stop() {
	local p tree=$PG_BENCH_PID kids=$PG_BENCH_PID
	while [ -n "$kids" ]; do
		kids=$(for p in $kids; do pgrep -P "$p"; done)
		tree="$tree $kids"
	done
	# shellcheck disable=SC2086
	kill $tree 2>/dev/null
	wait "$PG_BENCH_PID" 2>/dev/null
	for _ in $(seq 100); do
		[ "$(pg_psql "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgbench'" 2>/dev/null)" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}
