#!/usr/bin/env bash
# tests/integration/31-profile-postgres.sh - the eBPF profile of a real
# PostgreSQL 15 under `pgbench -S`, checked as every backend's is
# (tests/lib/profile-checks.sh, run for perf by 71-perf-postgres.sh): go
# tool pprof reads it without a warning, PostgreSQL's own functions and
# kernel frames are named, backends that connected after the profile
# started are sampled, backends that exited before it ended are still
# symbolized, and samples carry the backend type from the process title.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"
. "$SRC/tests/lib/profile-checks.sh"

skip_unless "eBPF profile of PostgreSQL under pgbench" "$(need_bpf)" \
	"$(pg_reason)" "$(need_cmd go readelf)"
pprof_home

check "a PostgreSQL 15 cluster starts" pg_start
check "pgbench initializes its tables" pg_bench_init 1
check_postgres_profile bpf 4
