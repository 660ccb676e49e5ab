#!/usr/bin/env bash
# bench/first-profile.sh - the first profile of a fresh `serve` against
# the later ones, this checkout's agent against another commit's (REF,
# default main), both built from git.
#
# A 2-thread burner named vmt-burner runs throughout; each agent is
# `serve --no-setup --comm vmt-burner`, started afresh for each
# measurement and given WAIT seconds (default 5) before the first request,
# as an operator's first curl comes some time after the agent started.
# Per round (ROUNDS, default 5), the two agents interleaved:
#   wall: a 2 s profile (bpf, 99 Hz) over HTTP, curl's time_total minus
#         the 2 s, for the first profile of a fresh agent and for the
#         third (LATER profiles are taken; the last one counts)
#   cpu:  a 5 s profile at 99 Hz, the agent's CPU time (user + sys of all
#         its threads, those ended included: bench/lib/measure.sh's
#         cpu_cgroup) from the request to the
#         answer, first profile of a fresh agent and the third; also as
#         a share of one CPU over the 5 s
# The table gives medians and this checkout's over REF's ratios.
#
# usage: BUILD=build bash bench/first-profile.sh   (ROUNDS=5 WAIT=5 REF=main)
#   BASE_AGENT=PATH  REF's agent already built (skips the build)
# Needs root (BPF), curl, python3, git, make and $BUILD/programs/burn.
. "$(dirname "$0")/lib/measure.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/agent.sh"
ROUNDS=${ROUNDS:-5}
WAIT=${WAIT:-5}
REF=${REF:-main}
reason=$(need_bpf)
[ -z "$reason" ] && reason=$(need_cmd curl python3 git make)
[ -z "$reason" ] && reason=$(need_burn)
[ -z "$reason" ] || { echo "bench/first-profile.sh: cannot run: $reason" >&2; exit 1; }

NEW=$VMTOOLS_AGENT
OLD=${BASE_AGENT:-}
if [ -z "$OLD" ]; then
	# REF's tree exported from git and built apart: nothing of this
	# checkout's build is shared with it.
	mkdir "$T/ref"
	git -C "$SRC" archive "$REF" | tar -x -C "$T/ref" ||
		{ echo "bench/first-profile.sh: cannot export $REF" >&2; exit 1; }
	make -C "$T/ref" BUILD=build -j2 build/vmtools-agent >"$T/ref-build.log" 2>&1 ||
		{ tail -5 "$T/ref-build.log" >&2; exit 1; }
	OLD=$T/ref/build/vmtools-agent
fi

"$BURN" --comm vmt-burner --threads 2 --ratio 30:10 \
	--seconds $((ROUNDS * 120 + 60)) >/dev/null &
at_exit "kill $!"

cpu_cgroup
echo "# agent CPU from ${CPU_CGROUP:-/proc/PID/stat}"

# profile SECONDS: one bpf profile at 99 Hz; prints "wall_s cpu_ns".
profile() {
	local c0 t
	c0=$(cpu_cgroup_ns "$AGENT_PID")
	t=$(agent_post profile/cpu \
		"{\"profiler\": {\"BccProfile\": null}, \"sampling_frequency\": 99, \"timeout_seconds\": $1}" \
		"$T/p.pb" -w '%{http_code} %{time_total}')
	[ "${t%% *}" = 200 ] || { echo "bench/first-profile.sh: POST: $t" >&2; diag "$AGENT_LOG"; exit 1; }
	echo "${t#* } $(($(cpu_cgroup_ns "$AGENT_PID") - c0))"
}

# run WHO AGENT: a fresh agent for the 2 s profiles, another for the 5 s
# ones; appends "first_wall_ms later_wall_ms first_cpu_ms later_cpu_ms"
# to $T/WHO.
run() {
	local who=$1 w1 wl c1 cl r p
	VMTOOLS_AGENT=$2 start_agent "$who" --no-setup --comm vmt-burner
	cpu_cgroup_enter "$AGENT_PID"
	sleep "$WAIT"
	p=$(profile 2) || exit 1
	w1=${p% *}
	for _ in 1 2; do p=$(profile 2) || exit 1; done
	wl=${p% *}
	stop_agent
	VMTOOLS_AGENT=$2 start_agent "$who" --no-setup --comm vmt-burner
	cpu_cgroup_enter "$AGENT_PID"
	sleep "$WAIT"
	p=$(profile 5) || exit 1
	c1=${p#* }
	for _ in 1 2; do p=$(profile 5) || exit 1; done
	cl=${p#* }
	stop_agent
	r=$(python3 -c "print('%.1f %.1f %.1f %.1f' % (($w1 - 2) * 1000, ($wl - 2) * 1000, $c1 / 1e6, $cl / 1e6))")
	echo "$r" >>"$T/$who"
}

for i in $(seq "$ROUNDS"); do
	# Which goes first alternates: neither always finds caches warm.
	if ((i % 2)); then
		run new "$NEW"
		run old "$OLD"
	else
		run old "$OLD"
		run new "$NEW"
	fi
done

python3 - "$T" "$ROUNDS" "$REF" <<'PY'
import statistics, sys
t, rounds, ref = sys.argv[1:4]
def rows(n):
    return [[float(x) for x in l.split()] for l in open("%s/%s" % (t, n))]
new, old = rows("new"), rows("old")
med = lambda v, i: statistics.median(r[i] for r in v)
ratio = lambda a, b: "%.2f" % (a / b) if b else "-"
print("2-thread burner, `serve --no-setup --comm vmt-burner`, medians of %s rounds, interleaved" % rounds)
print("| | this checkout | %s | ratio |" % ref)
print("|---|---|---|---|")
for i, what in ((0, "extra wall time of a 2 s profile over HTTP, first profile"),
                (1, "the same, third profile")):
    a, b = med(new, i), med(old, i)
    print("| %s | %.1f ms | %.1f ms | %s |" % (what, a, b, ratio(a, b)))
for i, what in ((2, "agent CPU (user + sys, all threads) for a 5 s 99 Hz profile, first"),
                (3, "the same, third profile")):
    a, b = med(new, i), med(old, i)
    print("| %s | %.1f ms (%.2f%% of one CPU) | %.1f ms (%.2f%%) | %s |" % (what, a, a / 50, b, b / 50, ratio(a, b)))
PY
