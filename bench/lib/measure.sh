# shellcheck shell=bash
# bench/lib/measure.sh - measuring helpers the profiler benchmarks share, sourced
# after tests/lib/tap.sh and tests/lib/pg.sh (a cluster started).
#
#   measure NAME CMD      run CMD once under /usr/bin/time and append
#                         "wall_ms cpu_ms peak_rss_kib" to $T/NAME; on
#                         failure print the end of $T/NAME.err and return 1
#   tps CMD [LEAD]        pgbench -S TPS for 5 s, alone (CMD empty) or while
#                         CMD runs in the background, started LEAD seconds
#                         (default 1) before pgbench

measure() {
	local t0 t1 u s m
	t0=$(date +%s%N)
	/usr/bin/time -f '%U %S %M' -o "$T/time.out" sh -c "$2" || {
		echo "$(basename "$0"): $1 failed:" >&2
		tail -n 5 "$T/$1.err" 2>/dev/null >&2
		return 1
	}
	t1=$(date +%s%N)
	read -r u s m <"$T/time.out"
	echo "$(((t1 - t0) / 1000000)) $(python3 -c "print(int(($u + $s) * 1000))") $m" >>"$T/$1"
}

tps() {
	local prof=""
	if [ -n "$1" ]; then
		sh -c "$1" >/dev/null 2>&1 &
		prof=$!
		sleep "${2:-1}"
	fi
	pg_bench 5 -S -c 2 -j 2 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -n 1
	[ -n "$prof" ] && wait "$prof"
}
