#!/usr/bin/env bash
# tests/integration/89-continuous-memory.sh - the memory snapshots of
# `serve --continuous --memory-every 1` on a real PostgreSQL 15: a backend
# idle in a transaction opens one more cursor over a sort every beat, so
# its "Caller tuples" contexts grow snapshot after snapshot;
#   - GET /profile/memory/history lists the snapshots;
#   - GET /profile/memory/history/profile?at= answers the snapshot nearest
#     a time: the backend holds more at the end than at the start;
#   - GET /profile/memory/history/growth?from=&until= answers a pprof whose
#     values are the later snapshot minus the earlier per pid and context
#     path: the backend's most grown path ends in "Caller tuples", its
#     comment names the two snapshots compared; two times nearest one
#     snapshot are 404, a format other than pprof 422;
#   - each snapshot reaches tests/lib/pyroscope-standin.py, which files it
#     as Pyroscope does by its sample types: memory:inuse_space:bytes;
#   - /healthz and /metrics count the snapshots.
# Memory snapshots need no BPF: the CPU windows may fail to start here.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"
. "$SRC/tests/lib/agent.sh"
. "$SRC/tests/lib/pyroscope-standin.sh"

skip_unless "continuous memory snapshots of PostgreSQL" "$(need_root)" \
	"$(need_cmd curl go python3 protoc-c)" "$(pg_reason)"
pprof_home
RX=$T/rx

if ! pg_start; then
	not_ok "PostgreSQL cluster starts"
	exit 0
fi
pg_session grow
exec 7>"$T/grow.in"
at_exit "exec 7>&-"
echo "SELECT pg_backend_pid();" >&7
echo "SET work_mem = '64MB';" >&7
echo "BEGIN;" >&7
for _ in $(seq 100); do [ -s "$T/grow.out" ] && break; sleep 0.05; done
pid=$(head -1 "$T/grow.out")
check "the growing session has a backend ($pid)" test -n "$pid"

standin_start "$RX"
start_agent mem --no-setup --continuous --continuous-interval 2 \
	--memory-every 1 --push-url "http://127.0.0.1:$STANDIN_PORT/"
sleep 2.5
t0=$(date +%s)
# One more cursor held over a sort of 300,000 rows every beat.
for i in 1 2 3 4; do
	echo "DECLARE c$i CURSOR FOR SELECT g, md5(g::text) FROM generate_series(1, 300000) g ORDER BY 2;" >&7
	echo "FETCH 1 FROM c$i;" >&7
	echo "SELECT 'fetched $i';" >&7
	for _ in $(seq 300); do grep -q "fetched $i" "$T/grow.out" && break; sleep 0.1; done
	sleep 1
done
sleep 2
t1=$(date +%s)

curl -s "$AGENT_URL/profile/memory/history" >"$T/index.json"
n=$(python3 -c "import json; d = json.load(open('$T/index.json')); print(len(d['snapshots']) if d.get('continuous') and d.get('every_seconds') == 1 else 0)" 2>/dev/null)
diag <<<"GET /profile/memory/history: ${n:-0} snapshots; $(head -c 300 "$T/index.json")"
check "GET /profile/memory/history lists the snapshots, every 1 s (${n:-0})" test "${n:-0}" -ge 4

# bytes PB: the backend's bytes in a snapshot (go tool pprof -raw).
bytes() {
	go tool pprof -raw "$1" 2>/dev/null | awk -v pid="pid:[$pid]" '
		/^ +-?[0-9]+ +-?[0-9]+:/ { v = $1; next }
		/^ +pid:\[/ { if (index($0, pid)) sum += v }
		END { printf "%.0f\n", sum }'
}
st0=$(curl -s -o "$T/at0.pb" -w '%{http_code}' "$AGENT_URL/profile/memory/history/profile?at=$t0")
st1=$(curl -s -o "$T/at1.pb" -w '%{http_code}' "$AGENT_URL/profile/memory/history/profile?at=$t1")
b0=$(bytes "$T/at0.pb")
b1=$(bytes "$T/at1.pb")
diag <<<"backend $pid: $b0 bytes in the snapshot nearest $t0, $b1 nearest $t1"
check "GET .../profile?at=: 200 twice ($st0, $st1)" test "$st0$st1" = 200200
check "the backend holds more in the later snapshot ($b0 < $b1)" \
	test "${b0:-0}" -gt 0 -a "${b1:-0}" -gt "${b0:-0}"
check "the snapshot's comment says when it was taken" \
	sh -c "go tool pprof -comments '$T/at0.pb' 2>/dev/null | grep -q 'the snapshot taken at .*, the nearest to the time asked'"

st=$(curl -s -o "$T/growth.pb" -w '%{http_code}' "$AGENT_URL/profile/memory/history/growth?from=$t0&until=$t1")
check "GET .../growth?from=&until=: 200 ($st)" test "$st" = 200
go tool pprof -raw "$T/growth.pb" >"$T/growth.raw" 2>&1
# The backend's most grown path: its leaf frame and bytes.
top=$(python3 - "$T/growth.raw" "$pid" <<'PY'
import re, sys
names, samples, cur = {}, [], None
for line in open(sys.argv[1]):
    m = re.match(r"^ +(-?\d+) +(-?\d+): ([\d ]+)$", line.rstrip())
    if m:
        cur = [int(m.group(1)), m.group(3).split(), ""]
        samples.append(cur)
        continue
    m = re.match(r"^ +(\d+): 0x0 M=\d+ (.*) :0 s=0$", line.rstrip())
    if m:
        names[m.group(2 - 1)] = m.group(2)
    elif cur and "pid:[" in line:
        cur[2] = line
best = max((s for s in samples if "pid:[%s]" % sys.argv[2] in s[2]),
           key=lambda s: s[0], default=[0, ["?"], ""])
print("%s|%d" % (names.get(best[1][0], "?"), best[0]))
PY
)
diag <<<"growth of backend $pid: most grown path ends in ${top%|*}, ${top#*|} bytes"
check "the growth view's most grown path of the backend ends in Caller tuples (${top%|*})" \
	test "${top%|*}" = "Caller tuples"
check "it grew by more than three sorts' tuples (${top#*|} > 30000000)" \
	test "${top#*|}" -gt 30000000
check "the growth view's comment names the two snapshots compared" \
	sh -c "go tool pprof -comments '$T/growth.pb' 2>/dev/null | grep -q 'growth: the snapshot taken at .* (the nearest to from) subtracted from the one taken at .* (the nearest to until)'"
newest=$(python3 -c "import json; print(json.load(open('$T/index.json'))['newest'])")
st=$(curl -s -o "$T/one.json" -w '%{http_code}' "$AGENT_URL/profile/memory/history/growth?from=$((t1 + 100))&until=$((t1 + 200))")
check "growth between two times nearest one snapshot: 404 with a sentence ($st)" \
	sh -c "[ $st = 404 ] && grep -q 'one snapshot only' '$T/one.json'"
st=$(curl -s -o "$T/fmt.json" -w '%{http_code}' "$AGENT_URL/profile/memory/history/growth?from=$t0&format=folded")
check "growth as folded stacks: 422 ($st)" test "$st" = 422

for _ in $(seq 50); do
	grep -q '"profile_type": "memory:inuse_space:bytes", "status": 200' "$RX/requests.jsonl" 2>/dev/null && break
	sleep 0.1
done
mem=$(grep -c '"profile_type": "memory:inuse_space:bytes", "status": 200' "$RX/requests.jsonl" 2>/dev/null)
diag <<<"the stand-in filed ${mem:-0} pushes as memory:inuse_space:bytes; $(grep -c . "$RX/requests.jsonl" 2>/dev/null) requests in all"
check "the stand-in files the pushed snapshots as memory:inuse_space:bytes (${mem:-0})" \
	test "${mem:-0}" -ge 3
check "/healthz counts the snapshots" \
	sh -c "curl -s '$AGENT_URL/healthz' | python3 -c 'import json, sys; sys.exit(0 if json.load(sys.stdin)[\"continuous\"][\"memory\"][\"snapshots\"] >= 4 else 1)'"
check "/metrics counts the snapshots" \
	sh -c "curl -s '$AGENT_URL/metrics' | grep -q '^vmtools_continuous_memory_snapshots_total [1-9]'"
check "the agent stops cleanly" stop_agent
echo "ROLLBACK;" >&7
