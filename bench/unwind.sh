#!/usr/bin/env bash
# bench/unwind.sh - what complete stacks for code without frame pointers
# cost, on PostgreSQL 17 as most people build it (the npm
# @embedded-postgres build: no frame pointers) under `pgbench -S -c 2 -j 2`
# saturating both cores:
#
#   (a) BPF time per CPU sample (do_sample) and per context switch
#       (on_switch), from the kernel's own accounting
#       (kernel.bpf_stats_enabled=1 while the bench runs, then put back),
#       over 3 s of an 8-s profile: this agent (user stacks walked with
#       .eh_frame tables in BPF) against the agent before it (BASE_REV,
#       frame pointers through bpf_get_stack), built from git into $T;
#   (b) one 10-s CPU profile of the client backends at 99 Hz, answered:
#       this agent's `serve` with its caches warm (as in a guest: the CPU
#       its process used for one POST, over three in a row) and a new `profile` process
#       (sampling, symbolizing, encoding, all cold) against `perf record -F 99
#       --call-graph dwarf` of the same backends + `perf script`, the
#       tool a user would otherwise use: wall and CPU time (user+system,
#       /usr/bin/time), peak RSS, and the share of client-backend samples
#       whose stack reaches PostgresMain;
#   (c) the unwind table of PostgreSQL 17's postgres and of libc, built
#       cold and asked again from the cache (tests/programs/unwind-build.c);
#   (d) the BPF maps' memory (bpftool's memlock of the unwind maps) and
#       the agent's peak RSS.
#
# Runs are interleaved (one of each per round), medians reported, as
# markdown tables.
#
# usage: BUILD=build bash bench/unwind.sh   (ROUNDS=3; BASE_REV=ff4b08c)
. "$(dirname "$0")/lib/measure.sh"
BASE_REV=${BASE_REV:-ff4b08c}
for need in "$(pg_release_bin 17.10)/postgres" "$BUILD/programs/unwind-build"; do
	[ -x "$need" ] || { echo "bench/unwind.sh: cannot run: needs $need (ci/install-deps.sh, make tests)" >&2; exit 1; }
done
[ -z "$(need_cmd bpftool git)" ] || { echo "bench/unwind.sh: cannot run: $(need_cmd bpftool git)" >&2; exit 1; }

# PostgreSQL 17 where the postgres user can run it; Debian's pgbench.
chmod 755 "$T"
pg_copy_release 17.10 "$T/pg17"
[ -x "$T/pg17/bin/pgbench" ] || ln -s /usr/lib/postgresql/15/bin/pgbench "$T/pg17/bin/pgbench"
PG_BIN=$T/pg17/bin
bench_prepare

# The agent before the unwinder, for (a).
echo "# building the baseline agent ($BASE_REV) ..." >&2
git -C "$SRC" worktree add -q --detach "$T/base" "$BASE_REV" >&2 || exit 1
at_exit "git -C '$SRC' worktree remove --force '$T/base'"
make -C "$T/base" -s -j2 BUILD="$T/base/build" "$T/base/build/vmtools-agent" >"$T/base.log" 2>&1 ||
	{ tail -n 20 "$T/base.log" >&2; exit 1; }
BASE=$T/base/build/vmtools-agent

STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
at_exit "sysctl -q kernel.bpf_stats_enabled=$STATS_WAS"
sysctl -q kernel.bpf_stats_enabled=1

# unwind_maps NAME: the memlock of the unwind maps the loaded do_sample
# programs use (this agent's, while its programs are loaded; an idle
# `serve` keeps its store too, which is not counted twice), to
# $T/maps.NAME.
unwind_maps() {
	python3 -c '
import json, subprocess
def show(what):
    return json.loads(subprocess.run(["bpftool", "-j", what, "show"], capture_output=True, text=True).stdout or "[]")
ids = {i for p in show("prog") if p.get("name") == "do_sample" for i in p.get("map_ids", [])}
print(sum(m.get("bytes_memlock", 0) for m in show("map") if m["id"] in ids and m.get("name", "").startswith("unwind_")))' >>"$T/maps.$1"
}
BPF_RUN_HOOK=unwind_maps

# reach FILE: "samples reaching-PostgresMain" in folded FILE (a profile of
# the client backends only).
reach() {
	awk '{ n = $NF; all += n; if ($0 ~ /;PostgresMain;/) p += n }
	     END { printf "%d %d\n", all, p }' "$1"
}

# perf_reach FILE: the same over perf script's output (-F comm,ip,sym).
perf_reach() {
	python3 - "$1" <<'PY'
import sys
blocks = open(sys.argv[1], errors="replace").read().split("\n\n")
allb = reach = 0
for b in blocks:
    lines = b.strip().splitlines()
    if len(lines) < 2:
        continue
    allb += 1
    reach += any(l.split()[-1] == "PostgresMain" for l in lines[1:] if l.split())
print(allb, reach)
PY
}

# cpu_ms PID: the user+system time process PID has used, in ms.
cpu_ms() {
	awk '{ print ($14 + $15) * 1000 / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"
}

# The agent as it runs in a guest: `serve`, its caches warm after a first
# profile; what one more profile costs it.
PORT=$(pg_free_port)
"$VMTOOLS_AGENT" serve --no-setup --listen "127.0.0.1:$PORT" >"$T/serve.log" 2>&1 &
SERVE=$!
at_exit "kill $SERVE 2>/dev/null"
post() { # SECONDS PIDS OUT: a CPU profile of PIDS, folded
	local pids
	pids=$(echo "$2" | tr , ' ' | python3 -c 'import sys; print(",".join(sys.stdin.read().split()))')
	curl -sS -X POST -H 'Content-Type: application/json' --max-time 60 -o "$3" \
		-d '{"timeout_seconds": '"$1"', "format": "folded", "targets": {"pids": ['"$pids"']}}' \
		"http://127.0.0.1:$PORT/profile/cpu"
}

pg_bench_bg $((ROUNDS * 90 + 60)) -S -c 2 -j 2
sleep 2
backends() { pgrep -d, -P "$(head -n 1 "$T/pg/data/postmaster.pid")" -f 'postgres: postgres' || true; }
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
post 2 "$(backends)" "$T/warm.folded"
for ((i = 0; i < ROUNDS; i++)); do
	PIDS=$(backends)
	bpf_run_time cpu.new do_sample "'$VMTOOLS_AGENT' profile -c postgres --seconds 8 --output $T/a.pb"
	bpf_run_time cpu.base do_sample "'$BASE' profile -c postgres --seconds 8 --output $T/b.pb"
	bpf_run_time off.new on_switch "'$VMTOOLS_AGENT' profile --kind offcpu -c postgres --seconds 8 --output $T/c.pb"
	bpf_run_time off.base on_switch "'$BASE' profile --kind offcpu -c postgres --seconds 8 --output $T/d.pb"
	measure ours "'$VMTOOLS_AGENT' profile -p bpf $(echo "$PIDS" | sed 's/^/--pid /; s/,/ --pid /g') --seconds 10 -f folded --output $T/ours.folded 2>$T/ours.err" || exit 1
	reach "$T/ours.folded" >>"$T/reach.ours"
	# Three in a row: the kernel counts CPU time in 10-ms ticks.
	a=$(cpu_ms "$SERVE")
	t0=$(date +%s%N)
	for k in 1 2 3; do
		post 10 "$PIDS" "$T/serve.folded"
	done
	t1=$(date +%s%N)
	echo "$(((t1 - t0) / 3000000)) $((($(cpu_ms "$SERVE") - a) / 3)) $(awk '/VmHWM/ { print $2 }' "/proc/$SERVE/status")" >>"$T/serve"
	reach "$T/serve.folded" >>"$T/reach.serve"
	measure perf "perf record -q -F 99 --call-graph dwarf -p '$PIDS' -o $T/perf.data -- sleep 10 2>$T/perf.err && perf script -i $T/perf.data -F comm,ip,sym >$T/perf.txt 2>>$T/perf.err" || exit 1
	perf_reach "$T/perf.txt" >>"$T/reach.perf"
done
pg_bench_stop

for f in "$T/pg17/bin/postgres" /lib/x86_64-linux-gnu/libc.so.6; do
	for ((i = 0; i < ROUNDS; i++)); do
		"$BUILD/programs/unwind-build" "$f" >>"$T/build.$(basename "$f")" || exit 1
	done
done

python3 - "$T" "$ROUNDS" "$BASE_REV" <<'PY'
import os, statistics as st, sys
T, rounds, base = sys.argv[1:4]
def rows(name):
    return [[float(x) for x in l.split()] for l in open(os.path.join(T, name)) if l.strip()]
def per(name):
    v = rows(name)
    return st.median(ns / max(c, 1) for ns, c in v), st.median(c / 3 for ns, c in v)
print("| PostgreSQL 17 (no frame pointers), pgbench -S -c 2 -j 2, median of %s interleaved runs | this agent (.eh_frame tables in BPF) | before (%s: frame pointers) | ratio |" % (rounds, base))
print("|---|---|---|---|")
for label, k in (("BPF time per CPU sample (do_sample, 99 Hz)", "cpu"), ("BPF time per context switch (on_switch, every switch of the machine)", "off")):
    n, b = per(k + ".new"), per(k + ".base")
    print("| %s | %.0f ns (%.0f runs/s) | %.0f ns | %.2fx |" % (label, n[0], n[1], b[0], n[0] / max(b[0], 1)))
print()
o, p, sv = rows("ours"), rows("perf"), rows("serve")
ro, rp, rs = rows("reach.ours"), rows("reach.perf"), rows("reach.serve")
def share(v):
    a = sum(x[0] for x in v); r = sum(x[1] for x in v)
    return "%.1f%% (%d of %d)" % (100 * r / max(a, 1), r, a)
print("| one 10-s CPU profile of the client backends at 99 Hz, answered (median of %s) | wall | CPU (user+system) | peak RSS | samples reaching PostgresMain |" % rounds)
print("|---|---|---|---|---|")
print("| vmtools-agent serve, caches warm: POST /profile/cpu | %.2f s | %.0f ms | %.0f MiB | %s |" % (st.median(x[0] for x in sv) / 1e3, st.median(x[1] for x in sv), st.median(x[2] for x in sv) / 1024, share(rs)))
print("| vmtools-agent profile, a new process: BPF load, tables and symbols cold | %.2f s | %.0f ms | %.0f MiB | %s |" % (st.median(x[0] for x in o) / 1e3, st.median(x[1] for x in o), st.median(x[2] for x in o) / 1024, share(ro)))
print("| perf record -F 99 --call-graph dwarf + perf script | %.2f s | %.0f ms | %.0f MiB | %s |" % (st.median(x[0] for x in p) / 1e3, st.median(x[1] for x in p), st.median(x[2] for x in p) / 1024, share(rp)))
print("| perf's CPU / ours | | %.1fx (serve), %.1fx (profile) | | |" % (st.median(x[1] for x in p) / max(st.median(x[1] for x in sv), 1), st.median(x[1] for x in p) / max(st.median(x[1] for x in o), 1)))
print()
print("| unwind table (median of %s) | rows | built cold | from the cache | memory |" % rounds)
print("|---|---|---|---|---|")
for name, label in (("build.postgres", "PostgreSQL 17 postgres"), ("build.libc.so.6", "libc.so.6")):
    v = rows(name)
    print("| %s | %d | %.0f ms | %.3f ms | %.1f MiB |" % (label, v[0][0], st.median(x[1] for x in v), st.median(x[2] for x in v), v[0][3] / 2**20))
m = rows("maps.cpu.new")
print()
print("BPF maps of the unwinder (store of 1 Mi rows, per-process mappings, scratch): %.1f MiB locked." % (st.median(x[0] for x in m) / 2**20))
PY
