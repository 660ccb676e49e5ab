#!/usr/bin/env bash
# tests/integration/23-cross-arm64.sh - `make ARCH=arm64` builds both
# binaries, the BPF programs and the unit tests for arm64 on this amd64
# host (Debian's cross compiler, the arm64 development packages unpacked
# by tests/lib/cross-root.sh), into $BUILD/arm64.  Under qemu-aarch64:
# the arm64 vmtools-image packs the arm64 kernel's image (22's input)
# into the same bytes as the amd64 build does; the arm64 agent answers
# --help and checks the arm64 kernel's config; the unit tests that need
# no BPF (the unwinder's, with its arm64 rules, and the symbolizer's)
# pass.  The BPF programs are compiled for arm64's registers: the
# perf_event program's context is arm64's struct user_pt_regs.
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
B=$BUILD/arm64
UNITS=(test_unwind_steps test_unwind test_unwind_arm64 test_elf test_symbolize)
t0=$(date +%s%N)
check "make ARCH=arm64 CROSS_ROOT=... builds both binaries and the unit tests into their own build folder" \
	make -s -C "$SRC" -j2 ARCH=arm64 BUILD="$B" CROSS_ROOT="$CROSS_ROOT" \
	"$B/vmtools-image" "$B/vmtools-agent" "${UNITS[@]/#/$B/tests/}"
diag <<<"the arm64 build took $((($(date +%s%N) - t0) / 1000000)) ms"
for f in vmtools-image vmtools-agent "${UNITS[@]/#/tests/}"; do
	check "file says $f is an arm64 program" \
		bash -c "file -b '$B/$f' | grep -q 'ARM aarch64'"
done
for o in profile offcpu; do
	check "the BPF program $o.bpf.o reads arm64's registers (struct user_pt_regs)" \
		bash -c "bpftool btf dump file '$B/bpf/$o.bpf.o' | grep -q \"STRUCT 'user_pt_regs'\""
done
# An arm64 program, its loader and libraries those of the cross root and
# toolchain, never the host's.
LIBS="$CROSS_ROOT/usr/lib/aarch64-linux-gnu:$CROSS_ROOT/lib/aarch64-linux-gnu:/usr/aarch64-linux-gnu/lib"
run_arm64() {
	qemu-aarch64 "$LOADER" --library-path "$LIBS" "$@"
}
arm64() { run_arm64 "$B/vmtools-image" "$@"; }
export LOADER LIBS
export -f run_arm64
check "vmtools-image runs under qemu-aarch64 (--help)" bash -c "run_arm64 '$B/vmtools-image' --help | grep -q '^Usage: vmtools-image'"
check "vmtools-agent runs under qemu-aarch64 (--help)" bash -c "run_arm64 '$B/vmtools-agent' --help | grep -q '^Usage: vmtools-agent'"
kconfig=$(ls "$KERNEL_ROOT"/boot/config-* 2>/dev/null | head -n 1)
if [ -n "$kconfig" ]; then
	run_arm64 "$B/vmtools-agent" check-kernel --config "$kconfig" >"$T/kcheck.out" 2>&1
	st=$?
	check "the arm64 agent checks the arm64 kernel's config and gives its verdict (status $st)" \
		bash -c "test $st -le 1 && grep -q '^Verdict: ' '$T/kcheck.out'"
	[ "$st" -le 1 ] || diag "$T/kcheck.out"
else
	skip "the arm64 agent checks the arm64 kernel's config" "the arm64 kernel's tree has no boot/config-*"
fi
run_arm64 "$B/vmtools-agent" check-kernel --config "$T/no-such-config" >"$T/kmissing.out" 2>&1
st=$?
check "a config that is not there: status 2 and a sentence naming it (status $st)" \
	bash -c "test $st = 2 && grep -q '$T/no-such-config' '$T/kmissing.out'"
for u in "${UNITS[@]}"; do
	(cd "$T" && CMOCKA_MESSAGE_OUTPUT=TAP run_arm64 "$B/tests/$u") >"$T/$u.out" 2>&1
	st=$?
	check "the arm64 $u passes under qemu-aarch64 (status $st)" \
		bash -c "test $st = 0 && ! grep -q '^not ok' '$T/$u.out'"
	[ "$st" = 0 ] || diag "$T/$u.out"
done
args=(build --root "$KERNEL_ROOT" --sysroot "$KERNEL_SYSROOT" --source-date-epoch 1700000000)
t0=$(date +%s%N)
arm64 "${args[@]}" --output "$T/by-arm64.img" >"$T/arm64.out" 2>&1
st=$?
diag <<<"the arm64 build under qemu-aarch64 took $((($(date +%s%N) - t0) / 1000000)) ms"
check "the arm64 vmtools-image packs the arm64 kernel's image (status $st)" test "$st" = 0
"$VMTOOLS_IMAGE" "${args[@]}" --output "$T/by-amd64.img" >/dev/null 2>&1
check "into the same bytes as the amd64 vmtools-image (cmp)" cmp "$T/by-arm64.img" "$T/by-amd64.img"
