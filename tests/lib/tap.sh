# tests/lib/tap.sh - sourced by every integration test script.
#
# A script prints TAP-style lines that tests/run.sh counts:
#   ok - what held            not ok - what failed          ok - what # SKIP why
# `check DESC CMD...` runs CMD and prints one of them, with CMD's output as
# "# " comment lines when it fails; `check_said` judges a command already
# run by its exit status and what it said.  `need_*` say why a test must be skipped
# (empty when it can run).  `run_as` is the one way a test runs a command
# as another user (postgres, nobody).  Each script gets its own temporary
# directory in $T, removed on exit.

set -u
SRC=${SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${BUILD:-$SRC/build}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
VMTOOLS_IMAGE=${VMTOOLS_IMAGE:-$BUILD/vmtools-image}
VMTOOLS_AGENT=${VMTOOLS_AGENT:-$BUILD/vmtools-agent}
VMTOOLS_CACHE=${VMTOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vmtools}
export SRC BUILD VMTOOLS_IMAGE VMTOOLS_AGENT VMTOOLS_CACHE

T=$(mktemp -d "${TMPDIR:-/tmp}/vmtools-test.XXXXXX")
TAP_CLEANUP=()
tap_on_exit() {
	local i
	for ((i = ${#TAP_CLEANUP[@]} - 1; i >= 0; i--)); do
		eval "${TAP_CLEANUP[i]}" >/dev/null 2>&1 || true
	done
	rm -rf "$T"
}
trap tap_on_exit EXIT
# at_exit CMD: run CMD (a string) when the script ends, last registered first.
at_exit() { TAP_CLEANUP+=("$1"); }

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; }
skip() { echo "ok - $1 # SKIP $2"; }

# Print a file (or stdin) as TAP comments, at most 40 lines.
diag() {
	if [ $# -gt 0 ]; then head -n 40 "$1"; else head -n 40; fi | sed 's/^/#   /'
}

# check DESC CMD [ARG]...: ok when CMD exits 0.
check() {
	local desc=$1 out=$T/.check.out
	shift
	if "$@" >"$out" 2>&1; then
		ok "$desc"
	else
		not_ok "$desc (exit $?: $*)"
		diag "$out"
	fi
}

# check_fails DESC CMD [ARG]...: ok when CMD exits non-zero.
check_fails() {
	local desc=$1 out=$T/.check.out
	shift
	if "$@" >"$out" 2>&1; then
		not_ok "$desc (unexpectedly succeeded: $*)"
		diag "$out"
	else
		ok "$desc"
	fi
}

# check_said STATUS WANT OUT DESC [PATTERN]...: a command exited STATUS
# with its output in the file OUT; ok when STATUS is WANT and OUT has a line
# matching each PATTERN (grep), else not ok with OUT shown.  STATUS comes
# first: give it $? right after the command, before any other expansion
# (a $(...) in DESC) can change it.
check_said() {
	local st=$1 want=$2 out=$3 desc=$4 p why=
	shift 4
	[ "$st" = "$want" ] || why="exit $st, want $want"
	for p; do
		[ -z "$why" ] || break
		grep -q -- "$p" "$out" || why="no line matches '$p'"
	done
	if [ -z "$why" ]; then
		ok "$desc"
	else
		not_ok "$desc ($why)"
		diag "$out"
		return 1
	fi
}

# skip_unless DESC REASON...: each REASON is what a need_* printed (empty:
# nothing missing); when one is not empty the script cannot run here, and
# says so as one skipped check, DESC, with the first reason, and exits.
skip_unless() {
	local desc=$1 r
	shift
	for r; do
		[ -n "$r" ] || continue
		skip "$desc" "$r"
		exit 0
	done
}

# Reasons a test cannot run here; empty output means it can.
need_root() { [ "$(id -u)" = 0 ] || echo "needs root"; }
need_bpf() {
	[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; return; }
	[ -e /sys/fs/bpf ] || [ -e /proc/sys/kernel/unprivileged_bpf_disabled ] ||
		echo "kernel without BPF"
}
# The perf backend: root, perf, and `perf record` able to sample cpu-clock.
need_perf() {
	[ "$(id -u)" = 0 ] || { echo "needs root for perf"; return; }
	command -v perf >/dev/null 2>&1 || { echo "needs perf"; return; }
	perf record -e cpu-clock -o /dev/null -q -- true 2>/dev/null ||
		echo "perf record -e cpu-clock does not work here"
}
need_loop() {
	[ "$(id -u)" = 0 ] || { echo "needs root for loop devices"; return; }
	[ -e /dev/loop-control ] || echo "no loop device support (/dev/loop-control missing)"
}
need_cmd() {
	local c
	for c; do command -v "$c" >/dev/null 2>&1 || { echo "needs $c"; return; }; done
}

# run_as USER DIR CMD [ARG]...: CMD as USER, from DIR, a directory USER
# can enter.  Run from the caller's (the checkout, which may be where only
# root may go, as /root is on Debian) psql warns on stderr that it cannot
# change to it; a program of the checkout or its build, USER may not be
# able to run at all: such a path among CMD and its arguments is refused
# here, wherever the checkout lives (copy it into $T).
run_as() {
	local user=$1 dir=$2 a
	shift 2
	for a; do
		case $a in
		"$SRC"/* | "$BUILD"/*)
			echo "run_as $user: $a is in the checkout, where $user may not go: copy it into \$T" >&2
			return 126
			;;
		esac
	done
	runuser -u "$user" -- env -C "$dir" "$@"
}

# pprof_home: HOME and PPROF_TMPDIR inside $T, so that go tool pprof keeps
# nothing (fetched profiles, its caches) outside the test.
pprof_home() {
	export HOME=$T/home PPROF_TMPDIR=$T/pprof
	mkdir -p "$HOME" "$PPROF_TMPDIR"
}
