#!/usr/bin/env bash
# tests/integration/23-cross-arm64.sh - `make ARCH=arm64` builds
# vmtools-image for arm64 on this amd64 host (Debian's cross compiler, the
# arm64 development packages unpacked by tests/lib/cross-root.sh), and
# that arm64 program, run under qemu-aarch64, packs the arm64 kernel's
# image (22's input) into the same bytes as the amd64 build does.
. "$(dirname "$0")/../lib/tap.sh"

for c in aarch64-linux-gnu-gcc qemu-aarch64; do
	if ! command -v "$c" >/dev/null 2>&1; then
		skip "the arm64 build of vmtools-image" "$c is not installed (ci/install-deps.sh installs it)"
		exit 0
	fi
done
if ! eval "$(bash "$SRC/tests/lib/cross-root.sh" 2>"$T/cross.err")" ||
	! eval "$(VMTOOLS_KERNEL_ARCH=arm64 bash "$SRC/tests/lib/fetch-kernel.sh" 2>"$T/fetch.err")"; then
	skip "the arm64 build of vmtools-image" "cannot fetch the arm64 packages: $(tail -n 1 "$T/cross.err" "$T/fetch.err" 2>/dev/null | grep -v '^==' | tail -n 1)"
	exit 0
fi
LOADER=/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1
B=$T/arm64
check "make ARCH=arm64 CROSS_ROOT=... builds vmtools-image into its own build folder" \
	make -s -C "$SRC" ARCH=arm64 BUILD="$B" CROSS_ROOT="$CROSS_ROOT" "$B/vmtools-image"
check "file says it is an arm64 program" \
	bash -c "file -b '$B/vmtools-image' | grep -q 'ARM aarch64'"
# The arm64 program, its loader and libraries those of the cross root and
# toolchain, never the host's.
arm64() {
	qemu-aarch64 "$LOADER" --library-path \
		"$CROSS_ROOT/usr/lib/aarch64-linux-gnu:$CROSS_ROOT/lib/aarch64-linux-gnu:/usr/aarch64-linux-gnu/lib" \
		"$B/vmtools-image" "$@"
}
check "it runs under qemu-aarch64 (--help)" bash -c "$(declare -f arm64); LOADER='$LOADER' CROSS_ROOT='$CROSS_ROOT' B='$B'; arm64 --help | grep -q '^Usage: vmtools-image'"
args=(build --root "$KERNEL_ROOT" --sysroot "$KERNEL_SYSROOT" --source-date-epoch 1700000000)
t0=$(date +%s%N)
arm64 "${args[@]}" --output "$T/by-arm64.img" >"$T/arm64.out" 2>&1
st=$?
diag <<<"the arm64 build under qemu-aarch64 took $((($(date +%s%N) - t0) / 1000000)) ms"
check "the arm64 vmtools-image packs the arm64 kernel's image (status $st)" test "$st" = 0
"$VMTOOLS_IMAGE" "${args[@]}" --output "$T/by-amd64.img" >/dev/null 2>&1
check "into the same bytes as the amd64 vmtools-image (cmp)" cmp "$T/by-arm64.img" "$T/by-amd64.img"
