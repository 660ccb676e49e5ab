#!/usr/bin/env bash
# bench/image-build.sh - wall time of `vmtools-image build` against
# `mke2fs -t ext4 -d` (what one would otherwise use) on the same staged
# Debian kernel tree, 5 runs each, interleaved; medians, their ratios, and
# the image sizes, printed as a markdown table.
#
# The main figure is like for like: `mke2fs -t ext4 -b 4096 -d`, the same
# content into the same 4 KiB blocks vmtools-image writes; its ratio is
# also given round by round (each round runs every contender once, so a
# change in the machine's load hits them alike).  mke2fs's default for an
# image this size, 1 KiB blocks, is the second comparison.
#
# Both write into the same directory, with warm page caches (a first
# untimed run of each), each run into a new file.  mke2fs gets the same
# size as vmtools-image's auto size, grown in 5% steps until its journal
# and metadata fit (with -b 4096 it needs more).
# usage: BUILD=build bash bench/image-build.sh   (RUNS=5 by default)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$SRC/build}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
IMG=$BUILD/vmtools-image
RUNS=${RUNS:-5}
eval "$(bash "$SRC/tests/lib/fetch-kernel.sh")"
W=$(mktemp -d "${TMPDIR:-/tmp}/vmtools-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT

now() { date +%s.%N; }
# time_of OUT CMD...: seconds of wall time of CMD, output discarded.  The
# image file OUT of the previous run is removed first, untimed: every run
# writes a new file, as a pipeline does, and neither tool pays for freeing
# the old one (mke2fs discards its blocks, a rename frees them).
time_of() {
	local t0 t1
	rm -f "$1"
	shift
	t0=$(now)
	"$@" >/dev/null 2>&1 || { echo "bench: failed: $*" >&2; exit 1; }
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# ratios A B: A's times over B's, round by round (the files' lines).
ratios() { paste "$1" "$2" | awk '{ printf "%.6f\n", $1 / $2 }'; }

ours() { "$IMG" build --root "$KERNEL_ROOT" --no-perf --source-date-epoch 1700000000 --output "$W/ours.img"; }
ours_perf() { "$IMG" build --root "$KERNEL_ROOT" --source-date-epoch 1700000000 --output "$W/perf.img"; }
ours >/dev/null 2>&1
size=$(stat -c %s "$W/ours.img")
msize=$(((size + 1048575) / 1048576))
# Like for like: the 4 KiB blocks the image builder always writes.
msize4=$msize
until mke2fs -q -t ext4 -b 4096 -d "$KERNEL_ROOT" -F "$W/mke2fs4.img" "${msize4}M" >/dev/null 2>&1; do
	msize4=$((msize4 * 105 / 100 + 1))
done
mk4() { mke2fs -q -t ext4 -b 4096 -d "$KERNEL_ROOT" -F "$W/mke2fs4.img" "${msize4}M"; }
# mke2fs's own choice: 1 KiB blocks below 512 MiB.
until mke2fs -q -t ext4 -d "$KERNEL_ROOT" -F "$W/mke2fs.img" "${msize}M" >/dev/null 2>&1; do
	msize=$((msize * 105 / 100 + 1))
done
mk() { mke2fs -q -t ext4 -d "$KERNEL_ROOT" -F "$W/mke2fs.img" "${msize}M"; }
ours_perf >/dev/null 2>&1

: >"$W/ours.t"
: >"$W/mk.t"
: >"$W/perf.t"
: >"$W/mk4.t"
for ((i = 0; i < RUNS; i++)); do
	time_of "$W/mke2fs4.img" mk4 >>"$W/mk4.t"
	time_of "$W/ours.img" ours >>"$W/ours.t"
	time_of "$W/mke2fs.img" mk >>"$W/mk.t"
	time_of "$W/perf.img" ours_perf >>"$W/perf.t"
done
o=$(median <"$W/ours.t")
m=$(median <"$W/mk.t")
p=$(median <"$W/perf.t")
m4=$(median <"$W/mk4.t")
# Round by round, like for like: the lowest and highest ratio.
read -r rlo rhi < <(ratios "$W/mk4.t" "$W/ours.t" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo, hi }')
mib() { echo "scale=1; $1 / 1048576" | bc; }
alloc() { du -B1 "$1" | cut -f1; }
x() { printf '%.1fx' "$(echo "$1 / $2" | bc -l)"; }
files=$(find "$KERNEL_ROOT" -type f | wc -l)
load=$(cut -d' ' -f1-3 /proc/loadavg)

echo "Staged tree: Debian $KERNEL_RELEASE, $files files, $(mib "$(du -s --apparent-size -B1 "$KERNEL_ROOT" | cut -f1)") MiB; $RUNS interleaved runs, median; load average $load ($(nproc) CPUs)."
echo
echo "| command | median wall time | like for like: vs \`mke2fs -b 4096 -d\` | vs mke2fs's default (1 KiB blocks) | image size | allocated |"
echo "|---|---|---|---|---|---|"
printf '| `mke2fs -t ext4 -b 4096 -d ROOT -F FILE %sM` | %.2f s | 1.00x | | %s MiB | %s MiB |\n' \
	"$msize4" "$m4" "$(mib "$(stat -c %s "$W/mke2fs4.img")")" "$(mib "$(alloc "$W/mke2fs4.img")")"
printf '| `mke2fs -t ext4 -d ROOT -F FILE %sM` (1 KiB blocks) | %.2f s | | 1.00x | %s MiB | %s MiB |\n' \
	"$msize" "$m" "$(mib "$(stat -c %s "$W/mke2fs.img")")" "$(mib "$(alloc "$W/mke2fs.img")")"
printf '| `vmtools-image build --no-perf` (same tree) | %.2f s | **%s faster** (rounds: %.1fx to %.1fx) | %s faster | %s MiB | %s MiB |\n' \
	"$o" "$(x "$m4" "$o")" "$rlo" "$rhi" "$(x "$m" "$o")" "$(mib "$(stat -c %s "$W/ours.img")")" "$(mib "$(alloc "$W/ours.img")")"
printf '| `vmtools-image build` (+ perf and its 27 libraries) | %.2f s | %s faster | %s faster | %s MiB | %s MiB |\n' \
	"$p" "$(x "$m4" "$p")" "$(x "$m" "$p")" "$(mib "$(stat -c %s "$W/perf.img")")" "$(mib "$(alloc "$W/perf.img")")"
