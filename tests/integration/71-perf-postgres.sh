#!/usr/bin/env bash
# tests/integration/71-perf-postgres.sh - the perf backend's profile of a
# real PostgreSQL 15 under `pgbench -S`: go tool pprof reads it without a
# warning, PostgreSQL's functions and kernel frames are named, backends
# forked after the profile started are sampled, backends that exited before
# it ended are still symbolized (their mappings come from perf's MMAP2
# records), and samples carry the backend type.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"

reason=$(need_root)
[ -z "$reason" ] && reason=$(pg_reason)
[ -z "$reason" ] && reason=$(need_cmd go perf readelf)
[ -z "$reason" ] && ! perf record -e cpu-clock -o /dev/null -q -- true 2>/dev/null &&
	reason="perf record -e cpu-clock does not work here"
if [ -n "$reason" ]; then
	skip "perf backend profile of PostgreSQL under pgbench" "$reason"
	exit 0
fi
export HOME=$T/home PPROF_TMPDIR=$T/pprof
mkdir -p "$HOME" "$PPROF_TMPDIR"

check "a PostgreSQL 15 cluster starts" pg_start
check "pgbench initializes its tables" pg_bench_init 1
ls /proc | grep -E '^[0-9]+$' | sort -n >"$T/pids.before"

"$VMTOOLS_AGENT" profile --profiler perf --seconds 5 --frequency 199 \
	--output "$T/pg.pb" 2>"$T/agent.err" &
AGENT=$!
at_exit "kill $AGENT"
sleep 1.5 # perf's start-up takes a few hundred milliseconds
# Its backends are forked after the profile started, and exit before it ends.
pg_bench_bg 2 -S -c 2
wait "$AGENT"
st=$?
wait "$PG_BENCH_PID"
if [ "$st" = 0 ] && [ -s "$T/pg.pb" ]; then
	ok "the perf backend's default profile (comm postgres) is taken under pgbench -S"
else
	not_ok "perf profile of PostgreSQL: status $st"
	diag "$T/agent.err"
fi

go tool pprof -raw "$T/pg.pb" >"$T/raw.txt" 2>"$T/raw.err"
check "go tool pprof -raw reads it without a warning" test ! -s "$T/raw.err"
go tool pprof -top -nodecount=100000 "$T/pg.pb" >"$T/top.txt" 2>"$T/top.err"
check "go tool pprof -top reads it without a warning" test ! -s "$T/top.err"
go tool pprof -traces "$T/pg.pb" >"$T/traces.txt" 2>"$T/traces.err"
check "go tool pprof -traces reads it without a warning" test ! -s "$T/traces.err"
check "PostgreSQL's own functions are named (PostgresMain, PortalRun, ExecutorRun)" \
	bash -c "grep -qw PostgresMain '$T/top.txt' && grep -qw PortalRun '$T/top.txt' &&
		grep -Eqw '(standard_)?ExecutorRun' '$T/top.txt'"
check "kernel frames are named from kallsyms (entry_SYSCALL_64...)" \
	bash -c "grep -Eq 'entry_SYSCALL_64|do_syscall_64' '$T/top.txt' && grep -q 'kernel.kallsyms' '$T/raw.txt'"
check "the postgres mapping carries its build id" \
	bash -c "id=\$(readelf -n '$PG_BIN/postgres' | awk '/Build ID/ {print \$3}');
		[ -n \"\$id\" ] && grep -q \"\$id\" '$T/raw.txt'"
check "only postgres processes are in the profile (perf records system-wide)" \
	bash -c "! grep -o 'comm:\[[^]]*\]' '$T/raw.txt' | sort -u | grep -v 'comm:\[postgres\]'"

grep -o 'pid:\[[0-9]*\]' "$T/raw.txt" | tr -dc '0-9\n' | sort -u >"$T/pids.sampled"
new=$(comm -13 <(sort "$T/pids.before") <(sort "$T/pids.sampled") | wc -l)
if [ "$new" -ge 2 ]; then
	ok "backends that connected after the profile started are sampled ($new new pids)"
else
	not_ok "only $new pids born after the start were sampled"
	diag "$T/pids.sampled"
fi
gone=0 typed=0
for pid in $(comm -13 <(sort "$T/pids.before") <(sort "$T/pids.sampled")); do
	[ -d /proc/$pid ] && continue
	awk -v pid="$pid" '/^-----/ {if (hit && named) found=1; hit=0; named=0}
		$1 == "pid:" && $2 == pid {hit=1} /PostgresMain/ {named=1}
		END {if (hit && named) found=1; exit !found}' "$T/traces.txt" && gone=$((gone + 1))
	awk -v pid="$pid" '/^-----/ {if (hit && typed) found=1; hit=0; typed=0}
		$1 == "pid:" && $2 == pid {hit=1} /backend_type: +client backend/ {typed=1}
		END {if (hit && typed) found=1; exit !found}' "$T/traces.txt" && typed=$((typed + 1))
done
if [ "$gone" -ge 1 ]; then
	ok "backends that exited before the end are symbolized ($gone such pids with PostgresMain)"
else
	not_ok "no exited backend had named frames"
fi
if [ "$typed" -ge 1 ]; then
	ok "backends that exited before the end keep their backend type 'client backend' ($typed pids)"
else
	not_ok "no exited backend was labelled 'client backend'"
fi
