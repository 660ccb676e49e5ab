#!/usr/bin/env bash
# bench/http-overhead.sh - what the REST layer adds to a profile.
#
# The same 2-second profile (bpf, 99 Hz, targets: postgres, i.e. the burn
# workload) taken RUNS times each way, interleaved:
#   http: curl -X POST /profile/cpu {"timeout_seconds": 2} to a running
#         `vmtools-agent serve` (curl's own time_total)
#   cli:  vmtools-agent profile --seconds 2 --output FILE (wall time)
# Each time minus the 2 s of sampling is the overhead; the table gives the
# medians and their difference, which must stay under 5 ms.  A third row
# isolates the HTTP layer inside the service: curl's time_total minus the
# session's own duration_ms from the agent's log (parse, connection thread,
# response transfer).
# Needs root (BPF), curl, python3 and $BUILD/programs/burn.
. "$(dirname "$0")/../tests/lib/tap.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/agent.sh"
RUNS=${RUNS:-10}

burn_bg postgres $((RUNS * 10 + 30))
start_agent agent --no-setup
URL=$AGENT_URL/profile/cpu

now() { date +%s%N; }
: >"$T/http"
: >"$T/cli"
for i in $(seq "$RUNS"); do
	t=$(curl -s -X POST -H 'Content-Type: application/json' \
		-d '{"profiler": {"BccProfile": null}, "sampling_frequency": 99, "timeout_seconds": 2}' \
		-o "$T/http.pb" -w '%{http_code} %{time_total}' "$URL")
	[ "${t%% *}" = 200 ] || { echo "POST failed: $t" >&2; exit 1; }
	echo "${t#* }" >>"$T/http"
	s=$(now)
	"$VMTOOLS_AGENT" profile --seconds 2 --frequency 99 --output "$T/cli.pb" 2>/dev/null ||
		{ echo "vmtools-agent profile failed" >&2; exit 1; }
	echo "$(($(now) - s))" | awk '{ printf "%.6f\n", $1 / 1e9 }' >>"$T/cli"
done

grep -o 'duration_ms=[0-9]*' "$AGENT_LOG" | grep -o '[0-9]*$' >"$T/session"
python3 - "$T/http" "$T/cli" "$RUNS" "$T/session" <<'PY'
import statistics, sys
http = [float(x) - 2 for x in open(sys.argv[1])]
cli = [float(x) - 2 for x in open(sys.argv[2])]
sess = [float(x) / 1000 - 2 for x in open(sys.argv[4])]
mh, mc = statistics.median(http), statistics.median(cli)
inner = statistics.median([h - s for h, s in zip(http, sess)])
print("| what (median of %s, interleaved) | wall time - 2 s |" % sys.argv[3])
print("|---|---|")
print("| `curl -X POST /profile/cpu` timeout_seconds=2 | %.1f ms |" % (mh * 1000))
print("| `vmtools-agent profile --seconds 2` | %.1f ms |" % (mc * 1000))
print("| HTTP layer overhead (difference; target < 5 ms) | %+.1f ms |" % ((mh - mc) * 1000))
print("| HTTP layer alone (curl time_total - session time in the agent) | %.1f ms |" % (inner * 1000))
PY
