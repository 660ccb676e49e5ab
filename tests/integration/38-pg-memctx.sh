#!/usr/bin/env bash
# tests/integration/38-pg-memctx.sh - the memory-context tree the agent
# reads from outside a PostgreSQL backend (agent/samples/pg_memctx_read.c,
# printed by tests/programs/memctx-dump.c) is the one the backend reports
# of itself, on PostgreSQL 15 (Debian's), 16.14, 17.2, 17.10 and 18.4
# (the pinned builds):
#   - a backend idle in a transaction holds a cursor over a sort of
#     2,000,000 rows in 256 MB of work_mem; pg_log_backend_memory_contexts
#     makes it write its tree to the server log, ending with "Grand
#     total: N bytes": the walk's total is within 1% of N, and the
#     heaviest context it reads is the one the log says holds the most;
#   - `profile --kind memory` of that backend says the same (folded), with
#     [shared memory] and [mapped files] beside the contexts; its pprof
#     has inuse_space/bytes then inuse_objects/count, and the heaviest
#     context's type (Generation before 17, Bump from 17) as a label;
#   - over every postgres process, the contexts and the three
#     pseudo-frames sum to their Pss within 1%, once what the comment says
#     the contexts hold beyond their anonymous memory is taken off;
#   - on 15, POST /profile/memory and GET /debug/pprof/heap answer it,
#     and /healthz still answers;
#   - on 15 and 17.10, a backend idle in a transaction after a PL/pgSQL
#     function looped 400,000 times through a BEGIN ... EXCEPTION block
#     that inserts a row (each block a subtransaction with its own
#     transaction id, kept until the commit: how a Neon backend grew to
#     47 GB): the walk's total within 1% of the log's Grand total, and the
#     heaviest context the log's (TopTransactionContext);
#   - a pgbench backend, busy, walked again and again while it runs: 200
#     times on 15, 1,000 times on 17.10; every walk ends (no crash, no
#     hang), the share of partial walks and the time a diagnostic.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"
. "$SRC/tests/lib/agent.sh"

skip_unless "memory contexts read from outside PostgreSQL 15 to 18" "$(need_root)" \
	"$(need_cmd awk python3 go)" "$(pg_reason)"
DUMP=$BUILD/programs/memctx-dump
TOP=$T
pprof_home
chmod 755 "$TOP"

# The heaviest context of a log dump: "NAME BYTES".
log_heaviest() {
	sed -n 's/.*level: [0-9]*; \([^:]*\): \([0-9]*\) total in .*/\2 \1/p' "$1" |
		sort -n | tail -1 | sed 's/^[0-9]* //'
}

# log_dump PID OUT: PID's tree as it writes it to the server log
# (pg_log_backend_memory_contexts), into OUT; prints its Grand total.
log_dump() {
	local lines
	lines=$(wc -l <"$T/pg/server.log")
	pg_psql "SELECT pg_log_backend_memory_contexts($1)" >/dev/null
	for _ in $(seq 100); do
		tail -n +"$((lines + 1))" "$T/pg/server.log" >"$2"
		grep -q "Grand total:" "$2" && break
		sleep 0.1
	done
	sed -n 's/.*Grand total: \([0-9]*\) bytes.*/\1/p' "$2" | tail -1
}

# exception_loop R MAJOR: the PL/pgSQL exception-block loop's backend,
# idle in its transaction, read from outside and by its own log dump.
exception_loop() {
	local r=$1 v=$2 pid want got heavy_log heavy_walk
	pg_session exc
	exec 8>"$T/exc.in"
	cat >&8 <<'SQL'
SELECT pg_backend_pid();
CREATE TABLE exc_rows (i int);
CREATE FUNCTION exc_loop(n int) RETURNS int LANGUAGE plpgsql AS $f$
DECLARE k int;
BEGIN
	FOR k IN 1..n LOOP
		BEGIN
			INSERT INTO exc_rows VALUES (k);
		EXCEPTION WHEN unique_violation THEN NULL;
		END;
	END LOOP;
	RETURN n;
END $f$;
BEGIN;
SELECT exc_loop(400000);
SELECT 'looped';
SQL
	for _ in $(seq 1200); do grep -q looped "$T/exc.out" 2>/dev/null && break; sleep 0.1; done
	pid=$(head -1 "$T/exc.out")
	"$DUMP" "$pid" "$v" >"$T/exc.walk" 2>&1
	want=$(log_dump "$pid" "$T/exc.log")
	got=$(awk '/^walk/ { print $3 }' "$T/exc.walk")
	heavy_log=$(log_heaviest "$T/exc.log")
	heavy_walk=$(awk '/^ctx/ { if ($4 + 0 > max) { max = $4 + 0; p = $0 } } END { n = split(p, a, ";"); print a[n] }' "$T/exc.walk")
	diag <<<"PostgreSQL $r: the exception-block loop's backend $pid: the walk reads $got bytes in $(awk '/^walk/ { print $5 }' "$T/exc.walk") contexts, the heaviest $heavy_walk; the log's Grand total is ${want:-missing}, its heaviest ${heavy_log:-none}"
	check "PostgreSQL $r: exception-block loop: the walk's total is the log's Grand total within 1% ($got, ${want:-none})" \
		awk -v g="${got:-0}" -v w="${want:-0}" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(w > 0 && d * 100 <= w) }'
	check "PostgreSQL $r: exception-block loop: the heaviest context is the log's ($heavy_walk, ${heavy_log:-none})" \
		test -n "$heavy_log" -a "$heavy_walk" = "$heavy_log"
	check "PostgreSQL $r: exception-block loop: that is TopTransactionContext, which holds the subtransactions' ids" \
		test "$heavy_walk" = TopTransactionContext
	echo "ROLLBACK;" >&8
	exec 8>&-
}

for r in 15 16.14 17.2 17.10 18.4; do
	v=${r%%.*}
	pg_release_dir "$r" "$TOP" || continue
	if ! pg_start; then
		not_ok "PostgreSQL $r: a cluster starts"
		continue
	fi
	pg_session sort
	exec 7>"$T/sort.in"
	echo "SELECT pg_backend_pid();" >&7
	echo "SET work_mem = '256MB';" >&7
	echo "BEGIN;" >&7
	echo "DECLARE c CURSOR FOR SELECT g, md5(g::text) FROM generate_series(1, 2000000) g ORDER BY 2;" >&7
	echo "FETCH 1 FROM c;" >&7
	echo "SELECT 'fetched';" >&7
	for _ in $(seq 600); do grep -q fetched "$T/sort.out" 2>/dev/null && break; sleep 0.1; done
	pid=$(head -1 "$T/sort.out")
	"$DUMP" "$pid" "$v" >"$T/walk" 2>&1
	check "PostgreSQL $r: the tree of backend $pid is read whole" \
		grep -q "^walk .* partial 0 cut 0 0 0 bad 0 " "$T/walk"
	want=$(log_dump "$pid" "$T/log")
	got=$(awk '/^walk/ { print $3 }' "$T/walk")
	diag <<<"PostgreSQL $r: the walk reads $got bytes in $(awk '/^walk/ { print $5 }' "$T/walk") contexts; the log's Grand total is ${want:-missing}"
	check "PostgreSQL $r: the walk's total is the log's Grand total within 1% ($got, ${want:-none})" \
		awk -v g="${got:-0}" -v w="${want:-0}" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(w > 0 && d * 100 <= w) }'
	heavy_log=$(log_heaviest "$T/log")
	heavy_walk=$(awk '/^ctx/ { if ($4 + 0 > max) { max = $4 + 0; p = $0 } } END { n = split(p, a, ";"); print a[n] }' "$T/walk")
	check "PostgreSQL $r: its heaviest context is the log's ($heavy_walk, ${heavy_log:-none})" \
		test -n "$heavy_log" -a "$heavy_walk" = "$heavy_log"
	# The memory kind: the same tree, beside what the kernel says.
	"$VMTOOLS_AGENT" profile --kind memory --pid "$pid" -f folded -o "$T/mem.folded" >"$T/mem.err" 2>&1
	check "PostgreSQL $r: profile --kind memory --pid $pid answers folded stacks" test -s "$T/mem.folded"
	ctx=$(awk '/;TopMemoryContext/ { s += $NF } END { printf "%.0f\n", s }' "$T/mem.folded")
	check "PostgreSQL $r: the memory profile's contexts hold the log's Grand total within 1% ($ctx, ${want:-none})" \
		awk -v g="${ctx:-0}" -v w="${want:-0}" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(w > 0 && d * 100 <= w) }'
	heavy_prof=$(awk '/;TopMemoryContext/ { if ($NF + 0 > max) { max = $NF + 0; l = $0 } } END { sub(/ [0-9]+$/, "", l); n = split(l, a, ";"); print a[n] }' "$T/mem.folded")
	# Folded stacks write a name's spaces as '_'.
	check "PostgreSQL $r: the memory profile's heaviest context is the log's ($heavy_prof)" \
		test "$heavy_prof" = "${heavy_log// /_}"
	for f in shared_memory mapped_files; do
		check "PostgreSQL $r: the profile has [$f]" grep -q "^[^;]*;\[$f\] " "$T/mem.folded"
	done
	"$VMTOOLS_AGENT" profile --kind memory --pid "$pid" -o "$T/mem.pb" >"$T/mem.err" 2>&1
	go tool pprof -raw "$T/mem.pb" >"$T/mem.raw" 2>&1
	check "PostgreSQL $r: the pprof's sample types are inuse_space/bytes, then inuse_objects/count" \
		grep -q "^inuse_space/bytes\\[dflt\\] inuse_objects/count" "$T/mem.raw"
	# The tuples of a sort are a Generation context in 15, Bump from 17.
	type=Generation
	[ "$v" -ge 17 ] && type=Bump
	check "PostgreSQL $r: the heaviest context's label says its type ($type)" \
		grep -q "context_type:\[$type\]" "$T/mem.raw"

	# Every postgres process: contexts and pseudo-frames sum to their
	# Pss, plus what the comment says the contexts hold beyond it.
	"$VMTOOLS_AGENT" profile --kind memory -o "$T/all.pb" >"$T/all.err" 2>&1
	pss=0
	for p in $(pgrep -x postgres); do
		pss=$((pss + $(awk '/^Pss:/ { print $2 * 1024 }' "/proc/$p/smaps_rollup")))
	done
	go tool pprof -raw "$T/all.pb" >"$T/all.raw" 2>&1
	go tool pprof -comments "$T/all.pb" >"$T/all.comments" 2>&1
	all=$(awk '/^ +[0-9]+ +[0-9]+:/ { s += $1 } END { printf "%.0f\n", s }' "$T/all.raw")
	beyond=$(sed -n 's/.*its contexts hold \([0-9]*\) bytes more than.*/\1/p' "$T/all.comments" | awk '{ s += $1 } END { printf "%.0f\n", s }')
	"$VMTOOLS_AGENT" profile --kind memory -f folded -o "$T/all.folded" >"$T/all.err" 2>&1
	check "PostgreSQL $r: some postgres process holds private memory outside its contexts" \
		grep -q "^[^;]*;\\[private_memory_outside_contexts\\] " "$T/all.folded"
	diag <<<"PostgreSQL $r: every postgres process: the profile sums to $all bytes, $beyond of them beyond their anonymous memory; their Pss is $pss"
	check "PostgreSQL $r: contexts and the three pseudo-frames of every postgres process sum to their Pss within 1% ($all - $beyond, $pss)" \
		awk -v g="$((all - beyond))" -v w="$pss" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(w > 0 && d * 100 <= w) }'
	# The API: POST /profile/memory and GET /debug/pprof/heap answer at once.
	if [ "$r" = 15 ]; then
		start_agent serve --no-setup
		code=$(agent_post profile/memory "{\"targets\": {\"pids\": [$pid]}, \"format\": \"folded\"}" "$T/api.folded")
		check "POST /profile/memory answers 200 with the backend's contexts ($code)" \
			grep -q "^[^;]*;TopMemoryContext;.*Caller_tuples [0-9]" "$T/api.folded"
		code=$(curl -s -o "$T/heap.pb.gz" -w '%{http_code}' "$AGENT_URL/debug/pprof/heap")
		check "GET /debug/pprof/heap answers 200 with a gzipped heap profile ($code)" \
			sh -c "go tool pprof -raw '$T/heap.pb.gz' 2>/dev/null | grep -q '^inuse_space/bytes'"
		check "GET /healthz still answers" curl -sf -o /dev/null --max-time 1 "$AGENT_URL/healthz"
		stop_agent
	fi
	echo "COMMIT;" >&7
	exec 7>&-

	# The exception-block loop, on one release of 15 and one of 17.
	if [ "$r" = 15 ] || [ "$r" = 17.10 ]; then
		exception_loop "$r" "$v"
	fi

	# A busy backend, walked again and again while it runs (on two
	# releases: the walk is the same on the others).
	if [ "$r" != 15 ] && [ "$r" != 17.10 ]; then
		pg_stop
		continue
	fi
	pg_bench_init 1
	pg_bench_bg 60 -c 1 -n
	bpid=""
	for _ in $(seq 300); do
		bpid=$(pg_psql "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench' AND state <> 'idle'" | head -1)
		[ -n "$bpid" ] && break
		sleep 0.1
	done
	check "PostgreSQL $r: a pgbench backend is busy (${bpid:-none})" test -n "$bpid"
	walks=200
	[ "$r" = 17.10 ] && walks=1000
	ended=0 partial=0 failed=0
	started=$(date +%s%N)
	for _ in $(seq "$walks"); do
		if timeout 10 "$DUMP" "$bpid" "$v" >"$T/busy" 2>"$T/busy.err"; then
			ended=$((ended + 1))
			grep -q "^walk .* partial 1 " "$T/busy" && partial=$((partial + 1))
		elif [ $? = 124 ]; then
			failed=$((failed + 1))
		else
			ended=$((ended + 1))
			failed=$((failed + 1))
		fi
	done
	ms=$((($(date +%s%N) - started) / 1000000))
	diag <<<"PostgreSQL $r: $walks walks of busy backend $bpid in $ms ms: $partial partial ($(awk -v p="$partial" -v n="$walks" 'BEGIN { printf "%.1f", 100 * p / n }')%), $failed failed ($(cat "$T/busy.err" 2>/dev/null | head -1))"
	check "PostgreSQL $r: $walks walks of a busy backend all end, most of them whole ($partial partial, $failed failed)" \
		test "$ended" = "$walks" -a "$failed" -lt $((walks / 10)) -a "$partial" -lt $((walks / 2))
	pg_bench_stop
	pg_stop
done
T=$TOP
cd "$TOP" || exit 1
