#!/usr/bin/env bash
# bench/symbolize.sh - what naming the frames of a long PostgreSQL profile
# costs, cold and warm, and the agent's memory, on PostgreSQL 15 under
# `pgbench -S -c 2 -j 2`:
#
#   cold: a fresh `vmtools-agent serve`'s first 30-s profile at 99 Hz
#         (POST /profile/cpu): nothing cached but what it read while
#         sampling (kallsyms at start, each binary as its process was
#         captured)
#   warm: the same agent's second 30-s profile (every binary cached)
#   the answer's wait beyond the 30 s (curl's time_total - 30: reading the
#   samples, symbolizing, encoding), and the agent's RSS after each and its
#   peak (VmHWM), against what a user would otherwise run: `perf script` of
#   a 30-s `perf record -F 99 -a -g` of the same load, with an empty
#   ~/.debug (cold) and again (warm).
#
# Runs are interleaved (one of each per round), medians reported; prints a
# markdown table.
#
# usage: BUILD=build bash bench/symbolize.sh   (ROUNDS=5; SECONDS_=30)
. "$(dirname "$0")/lib/measure.sh"
. "$SRC/tests/lib/agent.sh"
bench_prepare
SECS=${SECONDS_:-30}
export HOME=$T/home

pg_bench_bg $((ROUNDS * (3 * SECS + 20) + 30)) -S -c 2 -j 2
sleep 2

rss_kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }

post() { # NAME: one profile; appends "extra_ms rss_kib hwm_kib" to $T/NAME
	local t
	t=$(curl -s -X POST -H 'Content-Type: application/json' \
		-d "{\"sampling_frequency\": 99, \"timeout_seconds\": $SECS}" \
		-o "$T/$1.pb" -w '%{http_code} %{time_total}' "$AGENT_URL/profile/cpu")
	[ "${t%% *}" = 200 ] || { echo "bench/symbolize.sh: POST failed: $t" >&2; exit 1; }
	echo "$(python3 -c "print(int((${t#* } - $SECS) * 1000))") $(rss_kib "$AGENT_PID" VmRSS) $(rss_kib "$AGENT_PID" VmHWM)" >>"$T/$1"
}

for ((i = 0; i < ROUNDS; i++)); do
	start_agent "agent$i" --no-setup
	post cold
	post warm
	stop_agent

	rm -rf "$HOME" && mkdir -p "$HOME"
	perf record -q -F 99 -a -g -o "$T/perf.data" -- sleep "$SECS" 2>"$T/record.err" ||
		{ echo "bench/symbolize.sh: perf record failed" >&2; exit 1; }
	measure perfcold "perf script -i $T/perf.data >$T/perf.txt 2>$T/perfcold.err" || exit 1
	measure perfwarm "perf script -i $T/perf.data >$T/perf.txt 2>$T/perfwarm.err" || exit 1
done
kill "$PG_BENCH_PID" 2>/dev/null
wait "$PG_BENCH_PID" 2>/dev/null

python3 - "$T" "$ROUNDS" "$SECS" <<'PY'
import statistics as st, sys, os
T, rounds, secs = sys.argv[1], sys.argv[2], sys.argv[3]
def col(name, i):
    return st.median(float(l.split()[i]) for l in open(os.path.join(T, name)) if l.strip())
print("| %s-s profile of PostgreSQL at 99 Hz, pgbench -S running (median of %s interleaved rounds) | cold | warm | cold / warm | RSS after (cold, warm) | peak RSS |" % (secs, rounds))
print("|---|---|---|---|---|---|")
c, w = col("cold", 0), col("warm", 0)
print("| vmtools-agent serve: the answer's wait beyond the %s s | %d ms | %d ms | %.2fx | %.1f MiB, %.1f MiB | %.1f MiB |"
      % (secs, c, w, c / max(w, 1), col("cold", 1) / 1024, col("warm", 1) / 1024, col("warm", 2) / 1024))
pc, pw = col("perfcold", 0), col("perfwarm", 0)
print("| perf script of perf record -F 99 -a -g | %d ms | %d ms | %.2fx | | %.1f MiB |"
      % (pc, pw, pc / max(pw, 1), col("perfwarm", 2) / 1024))
print()
print("vmtools vs perf script: cold %.1fx less, warm %.1fx less" % (pc / max(c, 1), pw / max(w, 1)))
PY
