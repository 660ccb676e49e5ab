#!/usr/bin/env bash
# tests/integration/22-image-arm64.sh - vmtools-image packs an arm64
# kernel's tools image on this amd64 host: Debian 12's arm64 cloud kernel,
# its headers, kbuild and perf, and the arm64 packages of the libraries
# perf needs in a sysroot of their own (tests/lib/fetch-kernel.sh with
# VMTOOLS_KERNEL_ARCH=arm64), never the host's.
# Checked: without --sysroot the build is refused, naming the loader it
# lacks; with it, e2fsck -fn, verify, a byte-identical rebuild, inspect
# saying aarch64; the launcher, perf, its loader and every library are
# arm64 ELF files, each library byte-identical to the sysroot's; depmod's
# modules.dep of the arm64 modules; perf runs from the bundle alone under
# qemu-user (perf --version); an x86-64 --binary is refused.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/image.sh"

IMG=$VMTOOLS_IMAGE
EPOCH=1700000000
if ! eval "$(VMTOOLS_KERNEL_ARCH=arm64 bash "$SRC/tests/lib/fetch-kernel.sh" 2>"$T/fetch.err")"; then
	skip "vmtools-image of an arm64 kernel" "cannot fetch the arm64 packages: $(tail -n 1 "$T/fetch.err")"
	exit 0
fi
R=$KERNEL_ROOT
REL=$KERNEL_RELEASE
S=$KERNEL_SYSROOT

"$IMG" build --root "$R" --source-date-epoch $EPOCH --output "$T/nosys.img" >"$T/nosys.out" 2>&1
st=$?
if [ $st -ne 0 ] && grep -q "needs the loader /lib/ld-linux-aarch64.so.1, which the sysroot $R does not have" "$T/nosys.out" &&
	[ ! -e "$T/nosys.img" ]; then
	ok "without --sysroot the arm64 perf is refused: the root has no arm64 loader (said, no image left)"
else
	not_ok "without --sysroot (status $st)"
	diag "$T/nosys.out"
fi

image_built_clean "the arm64 kernel's image with its perf, libraries from the sysroot" \
	"$T/a.img" --root "$R" --sysroot "$S" --source-date-epoch $EPOCH
"$IMG" inspect "$T/a.img" >"$T/inspect" 2>&1
if grep -q "^arch: *aarch64$" "$T/inspect" && grep -q "kernel release: $REL" "$T/inspect" &&
	grep -q '^  perf  *\/bin\/perf' "$T/inspect"; then
	ok "inspect says aarch64, the arm64 release and the perf tool"
else
	not_ok "inspect of the arm64 image"
	diag "$T/inspect"
fi

# What the guest runs: the launcher, perf, its loader and libraries.
mkdir -p "$T/x"
debugfs -R "dump /bin/perf $T/x/launcher" "$T/a.img" >/dev/null 2>&1
debugfs -R "rdump /lib/vmtools/perf $T/x" "$T/a.img" >/dev/null 2>&1
check "the launcher at /bin/perf is a static arm64 program" \
	bash -c "file -b '$T/x/launcher' | grep -q 'ARM aarch64.*statically linked'"
n=0 bad=
for f in "$T/x/perf/perf" "$T/x/perf/lib"/*; do
	n=$((n + 1))
	file -b "$f" | grep -q '^ELF 64-bit LSB .*ARM aarch64' || bad="$bad $(basename "$f")"
done
check "perf and its $((n - 1)) libraries and loader are arm64 ELF files" test -z "$bad" -a "$n" -gt 10
[ -z "$bad" ] || diag <<<"not arm64:$bad"
differ=
for f in "$T/x/perf/lib"/*; do
	name=$(basename "$f")
	src=$(find "$S/lib" "$S/usr/lib" -name "$name" \( -type f -o -type l \) 2>/dev/null | head -n 1)
	if [ -z "$src" ] || ! cmp -s "$f" "$(readlink -f "$src")"; then
		differ="$differ $name"
	fi
done
check "every library and the loader is the sysroot's, byte for byte (none from the host)" test -z "$differ"
[ -z "$differ" ] || diag <<<"not as in the sysroot:$differ"
debugfs -R "cat /lib/modules/$REL/modules.dep" "$T/a.img" 2>/dev/null >"$T/modules.dep"
check "depmod's modules.dep of the arm64 modules names xfs and what it needs" \
	grep -Eq '^kernel/fs/xfs/xfs\.ko(\.xz)?: .+' "$T/modules.dep"
if command -v qemu-aarch64 >/dev/null 2>&1; then
	(cd "$T/x/perf" && timeout 60 qemu-aarch64 ./lib/ld-linux-aarch64.so.1 --inhibit-cache \
		--library-path ./lib ./perf --version) >"$T/perf.out" 2>&1
	check "the bundled arm64 perf runs from its bundle alone (qemu-aarch64): $(head -c 60 "$T/perf.out")" \
		grep -q '^perf version 6\.1' "$T/perf.out"
else
	skip "the bundled arm64 perf runs" "qemu-aarch64 (package qemu-user) is not installed"
fi

"$IMG" build --root "$R" --sysroot "$S" --binary /usr/bin/env --source-date-epoch $EPOCH \
	--output "$T/mixed.img" >"$T/mixed.out" 2>&1
st=$?
if [ $st -ne 0 ] && grep -q -- "--binary /usr/bin/env is built for another architecture" "$T/mixed.out" &&
	[ ! -e "$T/mixed.img" ]; then
	ok "an x86-64 --binary in the arm64 image is refused, and says what to bundle"
else
	not_ok "an x86-64 --binary in the arm64 image (status $st)"
	diag "$T/mixed.out"
fi
