# shellcheck shell=bash
# tests/lib/pprof-raw.sh - reading an off-CPU or wall profile's samples with
# `go tool pprof -raw`, for the tests of PostgreSQL's labels (34-, 36-).
# Sourced after tap.sh.
#
#   read_raw PB            -raw into PB.raw; fails on a warning or an error
#   raw_sum RAW PID [LABEL [LABEL2]]
#                          the nanoseconds (second value) of pid's samples
#                          in RAW, only those with the labels given (as
#                          -raw prints them: 'wait_event:[Lock:advisory]')
#   within A B PCT         A is within PCT percent of B
#   at_least A B PCT       A is at least PCT percent of B

read_raw() {
	go tool pprof -raw "$1" >"$1.raw" 2>"$1.err" && ! grep -qi 'warn\|error' "$1.err"
}

raw_sum() {
	awk -v pid="pid:[$2]" -v want="${3:-}" -v want2="${4:-}" '
		/^ +[0-9]+ +[0-9]+:/ { v = $2; sub(":", "", v); labels = ""; next }
		/^ +[a-z_]+:\[/ { labels = labels " " $0
			if ($0 ~ /pid:\[/) {
				if (index(labels, pid) && (want == "" || index(labels, want)) &&
				    (want2 == "" || index(labels, want2)))
					sum += v
			}
		}
		END { printf "%.0f\n", sum }' "$1"
}

within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= b * p / 100) }'; }
at_least() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { exit !(b > 0 && a >= b * p / 100) }'; }
