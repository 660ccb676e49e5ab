#!/usr/bin/env bash
# tests/integration/31-profile-postgres.sh - the eBPF profile of a real
# PostgreSQL 15 under `pgbench -S`, checked as every backend's is
# (tests/lib/profile-checks.sh, run for perf by 71-perf-postgres.sh): go
# tool pprof reads it without a warning, PostgreSQL's own functions and
# kernel frames are named, backends that connected after the profile
# started are sampled, backends that exited before it ended are still
# symbolized, and samples carry the backend type from the process title.
# Also: only postgres is sampled, the client backend label and postgres's
# build id are there, 12 s at 1000 Hz with both CPUs busy loses no stack,
# and a stripped PostgreSQL 17 (split with objcopy --only-keep-debug, found
# by .gnu_debuglink; tests/lib/profile-checks.sh's
# check_postgres_debug_file) has its static functions named from its debug
# file (ExecInterpExpr), postgres+0x... with the debug file put aside.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"
. "$SRC/tests/lib/profile-checks.sh"

skip_unless "eBPF profile of PostgreSQL under pgbench" "$(need_bpf)" \
	"$(pg_reason)" "$(need_cmd go readelf)"
pprof_home

check "a PostgreSQL 15 cluster starts" pg_start
check "pgbench initializes its tables" pg_bench_init 1
check_postgres_profile bpf 4
check_postgres_debug_file bpf

# No stack lost: each sample's stacks reach the agent whole (bpf/stacks.bpf.h)
# instead of a stack map that drops a stack whose hash slot is taken.  The
# busiest profile a request may ask for: 1000 Hz, with pgbench -S keeping
# both CPUs busy (4 clients, 2 threads).
pg_bench_bg 14 -S -c 4 -j 2
sleep 1
"$VMTOOLS_AGENT" profile --frequency 1000 --seconds 12 --format folded \
	--output "$T/busy.folded" 2>"$T/busy.err"
st=$?
wait "$PG_BENCH_PID"
busy=$(sed -n 's/.*: \([0-9]*\) samples (\([0-9]*\) lost).*/\1 \2/p' "$T/busy.err")
if [ "$st" = 0 ] && [ "${busy#* }" = 0 ] && [ "${busy% *}" -ge 2000 ] &&
	! grep -q 'lost_' "$T/busy.folded"; then
	ok "bpf: 12 s at 1000 Hz of pgbench -S on every CPU: ${busy% *} samples, none lost"
else
	not_ok "bpf: the busy profile lost stacks or failed (status $st; samples, lost: $busy)"
	diag "$T/busy.err"
fi
