#!/usr/bin/env bash
# tests/integration/40-faults.sh - the faults profile (`profile --kind
# faults`, POST /profile/faults; docs/memory.md): page faults sampled from
# the page-fault software event by the eBPF profiler, with complete user
# stacks, values in bytes.
#   - tests/programs/faults-touch, running before the profile starts,
#     touches 256 MiB in touch_memory(): at least 90% of the profile's
#     bytes are under touch_memory, and as many reach main (the unwinder
#     walks the whole stack); the pprof has fault_space/bytes then
#     faults/count, a period of the default 64 faults in bytes, and
#     fault_mapping=anonymous on at least 90% of the bytes;
#   - bad periods and --profiler perf are refused with a sentence, on the
#     command line and by the API (422 naming period); `period` on another
#     kind is an unknown field; GET /profile/faults answers; a POST with a
#     period of 16 and format folded is the touch again;
#   - PostgreSQL 15 (Debian's) sorting 3,000,000 rows in 1 GB of work_mem:
#     the backend's growth is under the sort (ExecSort or tuplesort_*
#     frames hold at least half of its bytes) and its stacks reach
#     PostgresMain.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/agent.sh"
. "$SRC/tests/lib/pg.sh"

skip_unless "faults profiles" "$(need_bpf)" "$(need_cmd go python3 awk)"
pprof_home
TOUCH=$BUILD/programs/faults-touch
STACKS=$SRC/tests/lib/pg-stacks.py
COMM=ftouch$(($$ % 100000))

# faults-touch NAME, waiting for $T/NAME.go to be closed; TOUCH_PID.  The
# FIFO's writer is fd 8: what runs in the background meanwhile closes it
# (8>&-), or the touch would wait for that to end.
start_touch() {
	mkfifo "$T/$1.go"
	"$TOUCH" --comm "$1" --wait --hold 30 <"$T/$1.go" >"$T/$1.out" &
	TOUCH_PID=$!
	at_exit "kill -9 $TOUCH_PID"
	exec 8>"$T/$1.go"
}
release_touch() { exec 8>&-; }

# The share (percent, whole) of A in B.
share() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%d\n", (b > 0 ? a * 100 / b : 0) }'; }

# --- 1. 256 MiB touched in one function -------------------------------------
start_touch "$COMM"
"$VMTOOLS_AGENT" profile --kind faults --seconds 6 --comm "$COMM" \
	--output "$T/touch.pb" 2>"$T/touch.err" 8>&- &
AGENT=$!
# The agent captures the running target (its unwind tables) as it starts.
sleep 2
release_touch
wait "$AGENT"
check_said $? 0 "$T/touch.err" "profile --kind faults of a program touching 256 MiB" "samples"
go tool pprof -raw "$T/touch.pb" >"$T/touch.raw" 2>"$T/touch.raw.err"
check "go tool pprof reads the faults profile without a warning" \
	sh -c "! grep -qi 'warn\|error' '$T/touch.raw.err' && test -s '$T/touch.raw'"
check "its sample types are fault_space/bytes, then faults/count" \
	grep -q '^fault_space/bytes\[dflt\] *faults/count' "$T/touch.raw"
check "its period is 64 faults of a page, in bytes" \
	grep -qx "Period: $((64 * $(getconf PAGESIZE)))" "$T/touch.raw"
read -r total under <<<"$(python3 "$STACKS" reach "$T/touch.raw" touch_memory)"
read -r _ from_main <<<"$(python3 "$STACKS" reach "$T/touch.raw" main touch_memory)"
diag <<<"$((total / 1048576)) MiB of faults sampled, $((under / 1048576)) MiB under touch_memory ($(share "$under" "$total")%), $((from_main / 1048576)) MiB of them with main above ($(share "$from_main" "$total")%)"
check "at least 90% of the bytes are under touch_memory ($under of $total)" \
	test "$(share "$under" "$total")" -ge 90
check "at least 90% of the bytes have main above touch_memory: whole stacks ($from_main of $total)" \
	test "$(share "$from_main" "$total")" -ge 90
check "at least 230 MiB were sampled of the 256 touched ($((total / 1048576)))" \
	test "$total" -ge $((230 << 20))
anon=$(awk '/^ +[0-9]+ +[0-9]+:/ { v = $1 } /fault_mapping:\[anonymous\]/ { s += v } END { printf "%.0f\n", s }' "$T/touch.raw")
check "at least 90% of the bytes are labelled fault_mapping=anonymous ($anon of $total)" \
	test "$(share "$anon" "$total")" -ge 90

# --- 2. refusals on the command line -----------------------------------------
"$VMTOOLS_AGENT" profile --kind faults --period 0 --output "$T/p0.pb" >"$T/p0.err" 2>&1
check_said $? 2 "$T/p0.err" "--period 0 is refused, saying the range" "--period.*1.*1000000"
"$VMTOOLS_AGENT" profile --kind faults --profiler perf --output "$T/pf.pb" >"$T/pf.err" 2>&1
check_said $? 2 "$T/pf.err" "--kind faults --profiler perf is refused, saying why" "faults profiles are taken by the eBPF profiler only"

# --- 3. the API ------------------------------------------------------------
start_agent api
# refused PATH BODY PATTERN: POST BODY to PATH answers 422 with PATTERN.
n_refused=0
refused() {
	local out=$T/refused$((n_refused += 1)).json code
	code=$(agent_post "$1" "$2" "$out")
	echo "HTTP $code" >>"$out"
	check_said 0 0 "$out" "POST /$1 $2: 422 saying '$3'" "HTTP 422" "$3"
}
refused profile/faults '{"period": 0}' 'period must be a whole number from 1 to 1000000'
refused profile/faults '{"period": 1000001}' 'period must be a whole number from 1 to 1000000'
refused profile/faults '{"period": "64"}' 'period must be a whole number'
refused profile/cpu '{"period": 64}' 'unknown field .*period'
refused profile/faults '{"profiler": {"Perf": null}}' 'faults profiles are taken by the eBPF profiler only'
code=$(curl -s -o "$T/get.json" -w '%{http_code}' "$AGENT_URL/profile/faults")
check "GET /profile/faults answers 200 ($code)" test "$code" = 200
kill -9 "$TOUCH_PID" 2>/dev/null
wait "$TOUCH_PID" 2>/dev/null
start_touch "${COMM}b"
agent_post profile/faults "{\"timeout_seconds\": 5, \"period\": 16, \"format\": \"folded\", \"targets\": {\"comm\": [\"${COMM}b\"]}}" \
	"$T/api.folded" >"$T/api.code" 8>&- &
POST=$!
agent_running faults
sleep 1
release_touch
wait "$POST"
api_total=$(awk '{ s += $NF } END { printf "%.0f\n", s }' "$T/api.folded")
api_under=$(awk '/;touch_memory( |;)/ { s += $NF } END { printf "%.0f\n", s }' "$T/api.folded")
check "POST /profile/faults answers 200 with folded stacks in bytes, at least 90% under touch_memory ($api_under of $api_total)" \
	sh -c "test \"\$(cat '$T/api.code')\" = 200 && test $(share "$api_under" "$api_total") -ge 90"

# --- 4. PostgreSQL's growth under a big sort ---------------------------------
why=$(pg_reason)
if [ -n "$why" ]; then
	skip "PostgreSQL's growth under a sort" "$why"
	exit 0
fi
if ! pg_start; then
	not_ok "PostgreSQL 15: a cluster starts"
	exit 0
fi
pg_session sort
exec 7>"$T/sort.in"
echo "SELECT pg_backend_pid();" >&7
echo "SET work_mem = '1GB';" >&7
echo "SELECT 'ready';" >&7
for _ in $(seq 600); do grep -q ready "$T/sort.out" 2>/dev/null && break; sleep 0.1; done
pid=$(head -1 "$T/sort.out")
"$VMTOOLS_AGENT" profile --kind faults --seconds 20 --pid "$pid" \
	--output "$T/pg.pb" 2>"$T/pg.err" &
AGENT=$!
sleep 2
echo "SELECT count(*) FROM (SELECT g, md5(g::text) AS m FROM generate_series(1, 3000000) g ORDER BY m) s;" >&7
echo "SELECT 'sorted';" >&7
wait "$AGENT"
check_said $? 0 "$T/pg.err" "profile --kind faults of a PostgreSQL backend sorting" "samples"
grep -q sorted "$T/sort.out" || diag <<<"the sort had not ended when the profile did"
go tool pprof -raw "$T/pg.pb" >"$T/pg.raw" 2>/dev/null
# Bytes of the backend's samples, and of those under the sort.
python3 - "$T/pg.raw" >"$T/pg.shares" <<'PY'
import re, sys
samples, locs, cur = [], {}, None
section = None
for line in open(sys.argv[1]):
    if line.startswith("Samples:"): section = "s"; continue
    if line.startswith("Locations"): section = "l"; continue
    if line.startswith("Mappings"): section = None; continue
    if section == "s":
        m = re.match(r"\s+(\d+)\s+\d+:\s*(.*)", line)
        if m:
            samples.append((int(m.group(1)), m.group(2).split()))
    elif section == "l":
        m = re.match(r"\s+(\d+): \S+ (?:M=\d+ )?(\S+)", line)
        if m:
            cur = m.group(1); locs[cur] = [m.group(2)]
        elif cur and line.strip():
            locs[cur].append(line.split()[0])
total = sort = main = 0
for v, ids in samples:
    names = [n for i in ids for n in locs.get(i, [])]
    total += v
    if any(n == "ExecSort" or n.startswith("tuplesort_") for n in names):
        sort += v
    if "PostgresMain" in names:
        main += v
print(total, sort, main)
PY
read -r pg_total pg_sort pg_main <"$T/pg.shares"
diag <<<"backend $pid: $((pg_total / 1048576)) MiB of faults sampled, $((pg_sort / 1048576)) MiB under the sort ($(share "$pg_sort" "$pg_total")%), $((pg_main / 1048576)) MiB reaching PostgresMain ($(share "$pg_main" "$pg_total")%)"
check "the sorting backend's growth is under the sort: ExecSort or tuplesort_* hold at least half its bytes ($pg_sort of $pg_total)" \
	test "$(share "$pg_sort" "$pg_total")" -ge 50
check "the sorting backend's stacks reach PostgresMain (at least 90% of its bytes: $pg_main of $pg_total)" \
	test "$(share "$pg_main" "$pg_total")" -ge 90
