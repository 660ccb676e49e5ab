#!/usr/bin/env bash
# bench/setup.sh - what `vmtools-agent setup` costs at boot, against what a
# boot script would otherwise do by hand.
#
# With a tools image built by `vmtools-image build` from Debian's cloud
# kernel, attached read-only through a loop device, in a private mount
# namespace over an overlay of /usr (as tests/integration/60-setup.sh), RUNS
# interleaved rounds of:
#   setup:        vmtools-agent setup (label scan, mount, manifest, links)
#   by hand:      mount -o ro,nodev,nosuid + ln -s of the same links
#                 (the device given, no label scan, no checks)
#   verify:       vmtools-agent setup --verify (every file re-hashed)
#   sha256sum -c: the same files checked by coreutils over the mount
# each followed by its undo (not timed).  Prints medians and ratios as a
# markdown table.  Needs root, loop devices, overlayfs, python3.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$SRC/build}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
RUNS=${RUNS:-5}

if [ "${1:-}" != inside ]; then
	if [ "$(id -u)" != 0 ] || [ ! -e /dev/loop-control ]; then
		echo "bench/setup.sh: skipped: needs root and loop devices" >&2
		exit 0
	fi
	T=$(mktemp -d "${TMPDIR:-/tmp}/vmtools-bench.XXXXXX")
	LOOP=
	cleanup() {
		[ -n "$LOOP" ] && losetup -d "$LOOP"
		rm -rf "$T"
	}
	trap cleanup EXIT
	eval "$(bash "$SRC/tests/lib/fetch-kernel.sh")"
	LABEL=vmtb-$$
	"$BUILD/vmtools-image" build --root "$KERNEL_ROOT" --label "${LABEL:0:15}" \
		--output "$T/tools.img" >/dev/null
	LOOP=$(losetup -r -f --show "$T/tools.img")
	unshare -m --propagation private bash "$0" inside "$T" "$LOOP" "${LABEL:0:15}" "$KERNEL_RELEASE"
	exit
fi

T=$2 LOOP=$3 LABEL=$4 REL=$5
A=$BUILD/vmtools-agent
MNT=$T/mnt BIN=$T/bin
mkdir -p "$T/upper" "$T/work"
mount -t overlay overlay -o "lowerdir=/usr,upperdir=$T/upper,workdir=$T/work" /usr
OPTS=(--label "$LABEL" --mountpoint "$MNT" --bindir "$BIN" --allow-kernel-mismatch -q)

# The links setup makes, for the by-hand variant: "path target" lines.
"$A" setup "${OPTS[@]}"
python3 - "$MNT/.vmtools/manifest.json" "$MNT" "$BIN" "$(uname -r)" "$REL" >"$T/links" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
mnt, bindir, run, rel = sys.argv[2:]
for l in m["links"]:
    print(l["path"], mnt + l["target"])
for t in m["tools"]:
    print(bindir + "/" + t["name"], mnt + t["path"])
print("/lib/modules/" + run, mnt + "/lib/modules/" + rel)
EOF
python3 - "$MNT/.vmtools/manifest.json" >"$T/sums" <<'EOF'
import json, sys
for path, h in json.load(open(sys.argv[1]))["files"].items():
    print(h + "  ." + path)
EOF
NFILES=$(wc -l <"$T/sums")
"$A" setup --undo --mountpoint "$MNT" >/dev/null

now() { date +%s%N; }
timed() { # timed FILE CMD...: append CMD's wall time in ms to FILE
	local f=$1 s
	shift
	s=$(now)
	"$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
	echo $((($(now) - s) / 1000000)) >>"$T/$f"
}
by_hand() {
	mkdir -p "$MNT" /lib/modules "$BIN"
	mount -o ro,nodev,nosuid "$LOOP" "$MNT"
	while read -r path target; do ln -s "$target" "$path"; done <"$T/links"
}
undo_by_hand() {
	while read -r path target; do rm -f "$path"; done <"$T/links"
	umount "$MNT"
	rmdir "$MNT" /lib/modules "$BIN"
}
sums() { (cd "$MNT" && sha256sum --quiet -c "$T/sums"); }

for _ in $(seq "$RUNS"); do
	timed setup "$A" setup "${OPTS[@]}"
	"$A" setup --undo --mountpoint "$MNT" >/dev/null
	timed hand by_hand
	undo_by_hand
	timed verify "$A" setup "${OPTS[@]}" --verify
	"$A" setup --undo --mountpoint "$MNT" >/dev/null
	by_hand
	timed sha256 sums
	undo_by_hand
done

python3 - "$T" "$RUNS" "$NFILES" <<'EOF'
import statistics, sys
t, runs, nfiles = sys.argv[1], sys.argv[2], sys.argv[3]
med = lambda f: statistics.median(int(x) for x in open(f"{t}/{f}"))
s, h, v, c = med("setup"), med("hand"), med("verify"), med("sha256")
print(f"| setup, {runs} interleaved runs, medians | ms | ratio |")
print("|---|---:|---:|")
print(f"| `vmtools-agent setup` (label scan, mount, manifest, links) | {s:.0f} | {s / h:.2f}x |")
print(f"| by hand: `mount -o ro,nodev,nosuid` + `ln -s` | {h:.0f} | 1 |")
print(f"| `vmtools-agent setup --verify` ({nfiles} files) | {v:.0f} | {v / c:.2f}x |")
print(f"| mount by hand + `sha256sum -c` of the same files | {c:.0f} | 1 |")
EOF
