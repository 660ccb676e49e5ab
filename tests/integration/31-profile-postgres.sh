#!/usr/bin/env bash
# tests/integration/31-profile-postgres.sh - the eBPF profile of a real
# PostgreSQL 15 under `pgbench -S`: PostgreSQL's own functions and kernel
# frames are named, backends that connected after the profile started are
# sampled, and samples carry the backend type from the process title.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"

reason=$(need_bpf)
[ -z "$reason" ] && reason=$(pg_reason)
[ -z "$reason" ] && reason=$(need_cmd go)
if [ -n "$reason" ]; then
	skip "eBPF profile of PostgreSQL under pgbench" "$reason"
	exit 0
fi
export HOME=$T/home PPROF_TMPDIR=$T/pprof
mkdir -p "$HOME" "$PPROF_TMPDIR"

check "a PostgreSQL 15 cluster starts" pg_start
check "pgbench initializes its tables" pg_bench_init 1
ls /proc | grep -E '^[0-9]+$' | sort -n >"$T/pids.before"

"$VMTOOLS_AGENT" profile --seconds 4 --frequency 199 --output "$T/pg.pb" 2>"$T/agent.err" &
AGENT=$!
at_exit "kill $AGENT"
sleep 0.5
# Its backends are forked after the profile started, and exit before it ends.
pg_bench_bg 2 -S -c 2
wait "$AGENT"
st=$?
wait "$PG_BENCH_PID"
if [ "$st" = 0 ] && [ -s "$T/pg.pb" ]; then
	ok "the default profile (comm postgres) is taken under pgbench -S"
else
	not_ok "profile of PostgreSQL: status $st"
	diag "$T/agent.err"
fi

go tool pprof -raw "$T/pg.pb" >"$T/raw.txt" 2>"$T/raw.err"
check "go tool pprof -raw reads it without a warning" test ! -s "$T/raw.err"
go tool pprof -top -nodecount=100000 "$T/pg.pb" >"$T/top.txt" 2>"$T/top.err"
check "go tool pprof -top reads it without a warning" test ! -s "$T/top.err"
check "PostgreSQL's own functions are named (PostgresMain, PortalRun, ExecutorRun...)" \
	bash -c "grep -qw PostgresMain '$T/top.txt' && grep -qw PortalRun '$T/top.txt' &&
		grep -Eqw '(standard_)?ExecutorRun' '$T/top.txt'"
# exec_simple_query is static: Debian's binary has it only in the separate
# debug file (postgresql-15-dbgsym, found by build id or debuglink).
pgid=$(readelf -n "$PG_BIN/postgres" | awk '/Build ID/ {print $3}')
if [ -f "/usr/lib/debug/.build-id/${pgid:0:2}/${pgid:2}.debug" ]; then
	check "static functions come from the debug file (exec_simple_query)" \
		grep -qw exec_simple_query "$T/top.txt"
else
	skip "static functions come from the debug file (exec_simple_query)" \
		"no debug file for postgres (postgresql-15-dbgsym is not in Debian's main archive)"
fi
check "kernel frames are named from kallsyms (entry_SYSCALL_64...)" \
	bash -c "grep -Eq 'entry_SYSCALL_64|do_syscall_64' '$T/top.txt' && grep -q 'kernel.kallsyms' '$T/raw.txt'"
check "samples are labelled with the backend type 'client backend'" \
	grep -q 'backend_type:\[client backend\]' "$T/raw.txt"
check "the postgres mapping carries its build id" \
	bash -c "id=\$(readelf -n '$PG_BIN/postgres' | awk '/Build ID/ {print \$3}');
		[ -n \"\$id\" ] && grep -q \"\$id\" '$T/raw.txt'"

# Backends forked after the profile started: pids that did not exist.
grep -o 'pid:\[[0-9]*\]' "$T/raw.txt" | tr -dc '0-9\n' | sort -u >"$T/pids.sampled"
new=$(comm -13 <(sort "$T/pids.before") <(sort "$T/pids.sampled") | wc -l)
if [ "$new" -ge 2 ]; then
	ok "backends that connected after the profile started are sampled ($new new pids)"
else
	not_ok "only $new pids born after the start were sampled"
	diag "$T/pids.sampled"
fi
# Backends that exited before the profile ended are symbolized from what
# was captured while they lived.
go tool pprof -traces "$T/pg.pb" >"$T/traces.txt" 2>/dev/null
gone=0
for pid in $(comm -13 <(sort "$T/pids.before") <(sort "$T/pids.sampled")); do
	[ -d /proc/$pid ] && continue
	awk -v pid="$pid" '/^-----/ {if (hit && named) found=1; hit=0; named=0}
		$1 == "pid:" && $2 == pid {hit=1} /PostgresMain/ {named=1}
		END {if (hit && named) found=1; exit !found}' "$T/traces.txt" && gone=$((gone + 1))
done
if [ "$gone" -ge 1 ]; then
	ok "backends that exited before the end are symbolized ($gone such pids with PostgresMain)"
else
	not_ok "no exited backend had named frames"
fi
