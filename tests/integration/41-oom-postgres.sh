#!/usr/bin/env bash
# tests/integration/41-oom-postgres.sh - OOM reports (agent/oom/): a
# PostgreSQL 15 cluster whose postmaster runs in a memory cgroup of the
# test's own (cgroup v2's memory.max where the unified hierarchy has the
# memory controller, else v1's memory.limit_in_bytes) limited to 256 MiB;
# a backend asks for 900 MB (repeat('x', 900000000)) after counting 20
# million rows, during which pg_stat_activity gives its pid and query id,
# an on-demand memory profile takes its snapshot (the one kept) and the
# continuous profile (1 s windows) its CPU stacks, and the kernel's OOM
# killer takes it.  Five times:
#   - GET /oom lists a report of that pid, and GET /oom/ID names its
#     backend type (client backend) and the query id pg_stat_activity
#     showed, a memory snapshot taken at the kill or the one kept, with
#     its heaviest context (at the kill: holding at least 100 MB of the
#     900 MB asked), and the cgroup's version, limit and oom_kill event;
#   - how often the snapshot was taken at the kill and how often it was
#     the one kept is a # diagnostic; at least one report has the
#     backend's CPU stacks from the continuous profile's windows;
# then /healthz counts the reports and names the last, /metrics counts
# them by backend type, and an agent started again on the same --oom-dir
# serves the same reports.  An agent in a mount namespace without tracefs
# follows the victims all the same, tracefs mounted in a namespace of its
# own that nothing else sees.  The cgroup is removed at the end.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"
. "$SRC/tests/lib/agent.sh"
. "$SRC/tests/lib/memcg.sh"

skip_unless "OOM reports of PostgreSQL backends" "$(need_root)" "$(need_bpf)" \
	"$(need_cmd python3 curl findmnt)" "$(pg_reason)" "$(memcg_reason)"
KILLS=5
LIMIT=$((256 << 20))
QUERY="select (select count(*) from generate_series(1, 20000000)), length(repeat('x', 900000000))"

# jget FILE EXPR: EXPR (Python, over the document d) of the JSON in FILE.
jget() {
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

pg_ready() {
	for _ in $(seq 600); do
		[ "$(pg_psql 'select 1' 2>/dev/null)" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}

if ! pg_start; then
	not_ok "a PostgreSQL cluster starts"
	exit 1
fi
pg_psql "alter system set compute_query_id = on" >/dev/null
pg_psql "select pg_reload_conf()" >/dev/null
if ! memcg_make "$LIMIT"; then
	not_ok "a memory cgroup of 256 MiB is made ($MEMCG_VERSION)"
	exit 1
fi
memcg_add "$(head -1 "$PGDATA_DIR/postmaster.pid")"
start_agent agent --no-setup --oom-dir "$T/oom" --continuous --continuous-interval 1
check "/healthz says the OOM killer's victims are followed" \
	python3 -c 'import json, sys; sys.exit(not json.load(sys.stdin)["oom"]["watching"])' \
	< <(curl -s "$AGENT_URL/healthz")

at_kill=0 kept=0 with_stacks=0 ids=
for i in $(seq "$KILLS"); do
	if ! pg_ready; then
		not_ok "kill $i: PostgreSQL answers again after the last kill"
		break
	fi
	pg_psql "$QUERY" >"$T/q$i.out" 2>"$T/q$i.err" &
	q=$!
	line=$(pg_poll 100 "select pid, query_id, backend_type from pg_stat_activity where query = '${QUERY//\'/\'\'}' and state = 'active' and query_id is not null")
	IFS='|' read -r pid qid btype <<<"$line"
	if [ -z "$pid" ] || [ -z "$qid" ]; then
		not_ok "kill $i: pg_stat_activity shows the backend and its query id ($line)"
		wait "$q"
		continue
	fi
	code=$(agent_post profile/memory "{\"targets\": {\"pids\": [$pid]}, \"format\": \"folded\"}" "$T/snap$i")
	[ "$code" = 200 ] || { not_ok "kill $i: the on-demand memory profile of $pid answers ($code)"; diag "$T/snap$i"; }
	wait "$q"
	id=
	for _ in $(seq 300); do
		curl -s "$AGENT_URL/oom" >"$T/list$i.json"
		id=$(jget "$T/list$i.json" "next((r['id'] for r in d['reports'] if r['pid'] == $pid), '')")
		[ -n "$id" ] && break
		sleep 0.1
	done
	if [ -z "$id" ]; then
		not_ok "kill $i: GET /oom lists a report of backend $pid"
		diag "$T/q$i.err"
		diag < <(tail -5 "$AGENT_LOG")
		continue
	fi
	ids="$ids $id"
	code=$(curl -s -o "$T/report$i.json" -w '%{http_code}' "$AGENT_URL/oom/$id")
	src=$(jget "$T/report$i.json" "d['snapshot_source']")
	case $src in at_kill) at_kill=$((at_kill + 1)) ;; kept) kept=$((kept + 1)) ;; esac
	got=$(jget "$T/report$i.json" "'%s|%s|%s' % (d['pid'], d['backend_type'], d['query_id'])")
	check "kill $i: GET /oom/$id answers 200 and names backend $pid, its backend type ($btype) and query id $qid ($got)" \
		[ "$code|$got" = "200|$pid|$btype|$qid" ]
	heavy=$(jget "$T/report$i.json" "'%s|%s' % (d['heaviest_context'], d['heaviest_bytes'])")
	diag <<<"kill $i: snapshot $src, $(jget "$T/report$i.json" "d['snapshot'].get('taken_after_ms', d['snapshot'].get('age_ms'))") ms; heaviest context ${heavy%|*}: ${heavy#*|} bytes"
	if [ "$src" = at_kill ]; then
		check "kill $i: the snapshot taken at the kill has a context holding at least 100 MB of the 900 MB asked (${heavy#*|})" \
			[ "${heavy#*|}" -ge 100000000 ]
	else
		check "kill $i: the snapshot is the one kept (at the kill: $(jget "$T/report$i.json" "d['snapshot']['why_not_at_kill']")), with its heaviest context (${heavy%|*}) and its age" \
			[ "$src" = kept ] && [ "${heavy%|*}" != None ] &&
			[ "$(jget "$T/report$i.json" "d['snapshot']['age_ms'] > 0")" = True ]
	fi
	n_stacks=$(jget "$T/report$i.json" "len(d['cpu'].get('stacks', []))")
	[ "$n_stacks" -gt 0 ] && with_stacks=$((with_stacks + 1))
	diag <<<"kill $i: $n_stacks CPU stacks, the most sampled $(jget "$T/report$i.json" "(d['cpu'].get('stacks') or [{'frames': d['cpu'].get('why')}])[0]['frames'][-120:]")"
	cg=$(jget "$T/report$i.json" "'%s|%s|%s' % (d['cgroup']['version'], d['cgroup']['limit_bytes'], d['cgroup']['events'].get('oom_kill', 0) > 0)")
	check "kill $i: the report gives the cgroup's version, limit and oom_kill event ($cg)" \
		[ "$cg" = "$MEMCG_VERSION|$LIMIT|True" ]
done
echo "# the snapshot was taken at the kill in $at_kill of $KILLS kills, the one kept in $kept"
n=$(echo $ids | wc -w)
check "the reports give the backend's last CPU stacks from the continuous profile ($with_stacks of $n)" \
	[ "$with_stacks" -gt 0 ]
check "every kill has its report ($n of $KILLS)" [ "$n" = "$KILLS" ]

curl -s "$AGENT_URL/healthz" >"$T/health.json"
h=$(jget "$T/health.json" "'%s|%s' % (d['oom']['count'], d['oom']['last'])")
check "/healthz counts the reports and names the last ($h)" [ "$h" = "$n|${ids##* }" ]
curl -s "$AGENT_URL/metrics" >"$T/metrics"
check "/metrics counts the reports by backend type" \
	grep -qx "vmtools_oom_reports{backend_type=\"client backend\"} $n" "$T/metrics"

stop_agent
start_agent again --no-setup --oom-dir "$T/oom"
curl -s "$AGENT_URL/oom" >"$T/list-again.json"
again=$(jget "$T/list-again.json" "' '.join(r['id'] for r in d['reports'])")
check "an agent started again serves the same reports ($again)" [ " $again" = "$ids" ]
code=$(curl -s -o "$T/report-again.json" -w '%{http_code}' "$AGENT_URL/oom/${ids##* }")
check "and the last one whole ($code)" cmp "$T/report-again.json" "$T/report$KILLS.json"

# Without tracefs mounted, in a mount namespace of its own: the agent
# reads the tracepoint from a tracefs mounted where nobody sees it.
stop_agent
cat >"$T/no-tracefs" <<EOS
#!/bin/sh
exec unshare -m --propagation private sh -c 'umount /sys/kernel/tracing /sys/kernel/debug/tracing 2>/dev/null; grep -q " tracefs " /proc/self/mounts && exit 9; exec "\$0" "\$@"' "$VMTOOLS_AGENT" "\$@"
EOS
chmod +x "$T/no-tracefs"
VMTOOLS_AGENT=$T/no-tracefs start_agent no-tracefs --no-setup
curl -s "$AGENT_URL/healthz" >"$T/health-no-tracefs.json"
h=$(jget "$T/health-no-tracefs.json" "'%s|%s' % (d['oom']['watching'], d['oom']['tracefs'])")
check "without tracefs mounted, the agent follows the victims through one mounted privately ($h)" \
	[ "$h" = "True|tracefs mounted privately by the agent" ]
