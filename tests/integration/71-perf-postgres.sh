#!/usr/bin/env bash
# tests/integration/71-perf-postgres.sh - the perf backend's profile of a
# real PostgreSQL 15 under `pgbench -S`, checked as every backend's is
# (tests/lib/profile-checks.sh, run for bpf by 31-profile-postgres.sh): go
# tool pprof reads it without a warning, PostgreSQL's functions and kernel
# frames are named, backends forked after the profile started are sampled,
# backends that exited before it ended are still symbolized (their mappings
# come from perf's MMAP2 records), samples carry the backend type, and only
# postgres processes are in it although perf records system-wide.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"
. "$SRC/tests/lib/profile-checks.sh"

skip_unless "perf backend profile of PostgreSQL under pgbench" "$(need_perf)" \
	"$(pg_reason)" "$(need_cmd go readelf)"
pprof_home

check "a PostgreSQL 15 cluster starts" pg_start
check "pgbench initializes its tables" pg_bench_init 1
# A second longer than the eBPF backend's: perf's start-up is in it.
check_postgres_profile perf 5
check_postgres_debug_file perf
