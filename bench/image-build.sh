#!/usr/bin/env bash
# bench/image-build.sh - wall time of `vmtools-image build` against
# `mke2fs -t ext4 -d` (what one would otherwise use) on the same staged
# Debian kernel tree, 5 runs each, interleaved; medians, their ratio, and
# the image sizes, printed as a markdown table.
#
# Both write into the same directory, with warm page caches (a first
# untimed run of each), each run into a new file.  mke2fs gets the same size as vmtools-image's auto
# size, grown in 5% steps until its journal and metadata fit (with
# -b 4096, the like-for-like block size, it needs more).
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

ours() { "$IMG" build --root "$KERNEL_ROOT" --no-perf --source-date-epoch 1700000000 --output "$W/ours.img"; }
ours_perf() { "$IMG" build --root "$KERNEL_ROOT" --source-date-epoch 1700000000 --output "$W/perf.img"; }
ours >/dev/null 2>&1
size=$(stat -c %s "$W/ours.img")
msize=$(((size + 1048575) / 1048576))
until mke2fs -q -t ext4 -d "$KERNEL_ROOT" -F "$W/mke2fs.img" "${msize}M" >/dev/null 2>&1; do
	msize=$((msize * 105 / 100 + 1))
done
mk() { mke2fs -q -t ext4 -d "$KERNEL_ROOT" -F "$W/mke2fs.img" "${msize}M"; }
# mke2fs picks 1 KiB blocks below 512 MiB; the image builder always uses
# 4 KiB, so the like-for-like run is measured too.
msize4=$msize
until mke2fs -q -t ext4 -b 4096 -d "$KERNEL_ROOT" -F "$W/mke2fs4.img" "${msize4}M" >/dev/null 2>&1; do
	msize4=$((msize4 * 105 / 100 + 1))
done
mk4() { mke2fs -q -t ext4 -b 4096 -d "$KERNEL_ROOT" -F "$W/mke2fs4.img" "${msize4}M"; }
ours_perf >/dev/null 2>&1

: >"$W/ours.t"
: >"$W/mk.t"
: >"$W/perf.t"
: >"$W/mk4.t"
for ((i = 0; i < RUNS; i++)); do
	time_of "$W/ours.img" ours >>"$W/ours.t"
	time_of "$W/mke2fs.img" mk >>"$W/mk.t"
	time_of "$W/perf.img" ours_perf >>"$W/perf.t"
	time_of "$W/mke2fs4.img" mk4 >>"$W/mk4.t"
done
o=$(median <"$W/ours.t")
m=$(median <"$W/mk.t")
p=$(median <"$W/perf.t")
m4=$(median <"$W/mk4.t")
mib() { echo "scale=1; $1 / 1048576" | bc; }
alloc() { du -B1 "$1" | cut -f1; }
files=$(find "$KERNEL_ROOT" -type f | wc -l)
load=$(cut -d' ' -f1-3 /proc/loadavg)

echo "Staged tree: Debian $KERNEL_RELEASE, $files files, $(mib "$(du -s --apparent-size -B1 "$KERNEL_ROOT" | cut -f1)") MiB; $RUNS interleaved runs, median; load average $load ($(nproc) CPUs)."
echo
echo "| command | median wall time | vs mke2fs -d | image size | allocated |"
echo "|---|---|---|---|---|"
printf '| `mke2fs -t ext4 -d ROOT -F FILE %sM` | %.2f s | 1.00x | %s MiB | %s MiB |\n' \
	"$msize" "$m" "$(mib "$(stat -c %s "$W/mke2fs.img")")" "$(mib "$(alloc "$W/mke2fs.img")")"
printf '| `mke2fs -t ext4 -b 4096 -d ROOT -F FILE %sM` | %.2f s | %.2fx | %s MiB | %s MiB |\n' \
	"$msize4" "$m4" "$(echo "$m / $m4" | bc -l)" "$(mib "$(stat -c %s "$W/mke2fs4.img")")" "$(mib "$(alloc "$W/mke2fs4.img")")"
printf '| `vmtools-image build --no-perf` (same tree) | %.2f s | %.1fx faster | %s MiB | %s MiB |\n' \
	"$o" "$(echo "$m / $o" | bc -l)" "$(mib "$(stat -c %s "$W/ours.img")")" "$(mib "$(alloc "$W/ours.img")")"
printf '| `vmtools-image build` (+ perf and its 27 libraries) | %.2f s | %.1fx faster | %s MiB | %s MiB |\n' \
	"$p" "$(echo "$m / $p" | bc -l)" "$(mib "$(stat -c %s "$W/perf.img")")" "$(mib "$(alloc "$W/perf.img")")"
