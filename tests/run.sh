#!/usr/bin/env bash
# tests/run.sh - runs the test suites and prints the one summary line CI reads:
#   N passed, N failed, N skipped
#
# usage: tests/run.sh all|unit|asan|fuzz|integration|vm
#   unit         cmocka binaries in $BUILD/tests (TAP output)
#   asan         the same, built with ASan+UBSan in $BUILD/asan/tests
#   fuzz         libFuzzer targets in $BUILD/fuzz/fuzz-bin, $FUZZ_SECONDS each
#   integration  tests/integration/*.sh against the real binaries
#   vm           tests/vm/*.sh (boots qemu)
# Every suite prints TAP lines; a script that dies without saying so counts
# as one failure.  Logs of each script go to $BUILD/test-logs/.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
export SRC BUILD
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
LOGS=$BUILD/test-logs
mkdir -p "$LOGS"

passed=0 failed=0 skipped=0

# tally NAME LOG STATUS: count the TAP lines of LOG.
tally() {
	local name=$1 log=$2 status=$3 p f s
	# cmocka reports a skipped test as `not ok N # SKIP`: a skip either way.
	local so sn
	so=$(grep -cE '^ok .*# (SKIP|skip)' "$log")
	sn=$(grep -cE '^not ok .*# (SKIP|skip)' "$log")
	s=$((so + sn))
	p=$(($(grep -cE '^ok( |$)' "$log") - so))
	f=$(($(grep -cE '^not ok( |$)' "$log") - sn))
	if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $name exited with status $status (log: $log)"
		tail -n 20 "$log" | sed 's/^/#   /'
		f=1
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	printf '# %s: %d passed, %d failed, %d skipped\n' "$name" "$p" "$f" "$s"
}

run_cmocka() {
	local dir=$1 tag=$2 t log
	[ -d "$dir" ] || return 0
	for t in "$dir"/test_*; do
		[ -x "$t" ] || continue
		log=$LOGS/$tag-$(basename "$t").log
		echo "# $tag: $(basename "$t")"
		CMOCKA_MESSAGE_OUTPUT=TAP timeout 300 "$t" >"$log" 2>&1
		local st=$?
		sed -e '/^ok\|^not ok/!s/^/#   /' "$log" | grep -E '^(not )?ok|^#' | grep -vE '^#   *$' |
			sed -e "s/^\(\(not \)\?ok [0-9]*\) - /\1 - $tag $(basename "$t"): /"
		tally "$tag $(basename "$t")" "$log" "$st"
	done
}

run_fuzz() {
	local dir=$BUILD/fuzz/fuzz-bin t name log corpus
	[ -d "$dir" ] || return 0
	for t in "$dir"/fuzz_*; do
		[ -x "$t" ] || continue
		name=$(basename "$t")
		log=$LOGS/$name.log
		corpus=$BUILD/fuzz/corpus/$name
		mkdir -p "$corpus"
		seeds=()
		[ -d "$SRC/tests/fuzz/seeds/$name" ] && seeds+=("$SRC/tests/fuzz/seeds/$name")
		[ -d "$BUILD/fuzz/fuzz-seeds/$name" ] && seeds+=("$BUILD/fuzz/fuzz-seeds/$name")
		# An allocation past 256 MiB fails, as under a memory limit, and
		# the code must cope: libdw asks for 1.5 GiB for a register
		# number in 9 KiB of hostile .eh_frame (tests/fuzz/seeds/fuzz_unwind),
		# which ASan's shadow and quarantine would turn into RSS.
		if ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_mb=256" \
			timeout $((FUZZ_SECONDS + 120)) "$t" -max_total_time="$FUZZ_SECONDS" \
			-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
			"$corpus" "${seeds[@]}" >"$log" 2>&1; then
			echo "ok - fuzz $name: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs in ${FUZZ_SECONDS}s, no crash" >>"$log"
			echo "ok - fuzz $name ran ${FUZZ_SECONDS}s without a crash"
		else
			echo "not ok - fuzz $name found a crash (log: $log)" >>"$log"
			echo "not ok - fuzz $name found a crash (log: $log)"
			grep -A 15 'ERROR:\|runtime error' "$log" | head -n 30 | sed 's/^/#   /'
		fi
		tally "fuzz $name" "$log" 0 >/dev/null
		: "${name}"
	done
}

run_scripts() {
	local dir=$1 tag=$2 t log st
	[ -d "$dir" ] || return 0
	for t in "$dir"/*.sh; do
		[ -f "$t" ] || continue
		log=$LOGS/$tag-$(basename "$t" .sh).log
		echo "# $tag: $(basename "$t")"
		timeout --kill-after=30 "${TEST_TIMEOUT:-1800}" bash "$t" </dev/null >"$log" 2>&1
		st=$?
		grep -E '^(not )?ok|^#' "$log"
		tally "$tag $(basename "$t")" "$log" "$st"
	done
}

mode=${1:-all}
case $mode in
unit) run_cmocka "$BUILD/tests" unit ;;
asan) run_cmocka "$BUILD/asan/tests" asan ;;
fuzz) run_fuzz ;;
integration) run_scripts "$SRC/tests/integration" integration ;;
vm) run_scripts "$SRC/tests/vm" vm ;;
all)
	run_cmocka "$BUILD/tests" unit
	run_cmocka "$BUILD/asan/tests" asan
	run_fuzz
	run_scripts "$SRC/tests/integration" integration
	run_scripts "$SRC/tests/vm" vm
	;;
*)
	echo "usage: $0 all|unit|asan|fuzz|integration|vm" >&2
	exit 2
	;;
esac

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
