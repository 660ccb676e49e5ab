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
# perf_event program's context is arm64's struct user_pt_regs.  The query
# id's offset in PostgreSQL 15's status entry is checked against the
# arm64 server headers.  `make deb ARCH=arm64` makes both packages for
# arm64: their files those of amd64's packages, their binaries arm64's,
# their Depends from the arm64 libraries, lintian clean.
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
B=$BUILD/arm64
UNITS=(test_unwind_steps test_unwind test_unwind_arm64 test_elf test_symbolize)
t0=$(date +%s%N)
check "make ARCH=arm64 CROSS_ROOT=... builds both binaries and the unit tests into their own build folder" \
	make -s -C "$SRC" -j2 ARCH=arm64 BUILD="$B" CROSS_ROOT="$CROSS_ROOT" \
	"$B/vmtools-image" "$B/vmtools-agent" "${UNITS[@]/#/$B/tests/}" "$B/programs/arm64-frames"
diag <<<"the arm64 build took $((($(date +%s%N) - t0) / 1000000)) ms"
for f in vmtools-image vmtools-agent "${UNITS[@]/#/tests/}"; do
	check "file says $f is an arm64 program" \
		bash -c "file -b '$B/$f' | grep -q 'ARM aarch64'"
done
check "the CPU profiler's BPF program reads arm64's registers (struct user_pt_regs)" \
	bash -c "bpftool btf dump file '$B/bpf/profile.bpf.o' | grep -q \"STRUCT 'user_pt_regs'\""
# An arm64 program, its loader and libraries those of the cross toolchain
# (-L: the loader it names is found there, and the program is its own
# /proc/self/exe) and of the cross root, never the host's.
LIBS="$CROSS_ROOT/usr/lib/aarch64-linux-gnu:$CROSS_ROOT/lib/aarch64-linux-gnu"
run_arm64() {
	qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH="$LIBS" "$@"
}
arm64() { run_arm64 "$B/vmtools-image" "$@"; }
export LIBS
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
	(cd "$T" && BUILD=$B CMOCKA_MESSAGE_OUTPUT=TAP run_arm64 "$B/tests/$u") >"$T/$u.out" 2>&1
	st=$?
	check "the arm64 $u passes under qemu-aarch64 (status $st)" \
		bash -c "test $st = 0 && ! grep '^not ok' '$T/$u.out' | grep -qv '# SKIP'"
	[ "$st" = 0 ] || diag "$T/$u.out"
done
# PostgreSQL 15's status entry on arm64: its server headers
# (postgresql-server-dev-15:arm64, unpacked, never installed) compiled by
# the arm64 compiler against the query id's offset in the agent's table.
. "$SRC/tests/lib/apt-download.sh"
pgdev=$VMTOOLS_CACHE/pg-server-dev-15-arm64
if [ ! -e "$pgdev/.done" ]; then
	rm -rf "$pgdev" && mkdir -p "$pgdev/debs"
	apt_download "$pgdev/debs" postgresql-server-dev-15:arm64 2>"$T/pgdev.err" &&
		dpkg -x "$pgdev"/debs/*.deb "$pgdev/root" && touch "$pgdev/.done"
fi
if [ -e "$pgdev/.done" ] && make -s -C "$SRC" "$BUILD/programs/pgwait-dump" >/dev/null 2>&1; then
	off=$("$BUILD/programs/pgwait-dump" 15 | awk '$1 == "query_id_offset" { print $2 }')
	check "PostgreSQL 15's query id is at $off in an arm64 build's status entry, as the agent's table says" \
		aarch64-linux-gnu-gcc -std=gnu11 -DPG_QUERY_ID_OFFSET="$off" \
		-I"$pgdev/root/usr/include/postgresql/15/server" -c -o "$T/pg-status-offset.o" \
		"$SRC/tests/programs/pg-status-offset.c"
else
	skip "PostgreSQL 15's query id offset on arm64" "cannot fetch postgresql-server-dev-15:arm64 ($(tail -n 1 "$T/pgdev.err" 2>/dev/null))"
fi
args=(build --root "$KERNEL_ROOT" --sysroot "$KERNEL_SYSROOT" --source-date-epoch 1700000000)
t0=$(date +%s%N)
arm64 "${args[@]}" --output "$T/by-arm64.img" >"$T/arm64.out" 2>&1
st=$?
diag <<<"the arm64 build under qemu-aarch64 took $((($(date +%s%N) - t0) / 1000000)) ms"
check "the arm64 vmtools-image packs the arm64 kernel's image (status $st)" test "$st" = 0
"$VMTOOLS_IMAGE" "${args[@]}" --output "$T/by-amd64.img" >/dev/null 2>&1
check "into the same bytes as the amd64 vmtools-image (cmp)" cmp "$T/by-arm64.img" "$T/by-amd64.img"

# The arm64 packages beside amd64's, built from this checkout (speedscope's
# tarball handed over when the amd64 build has it, checked when fetched).
if [ -n "$(need_cmd dpkg-buildpackage dh lintian git)" ] || [ ! -e "$SRC/.git" ]; then
	skip "make deb ARCH=arm64" "needs dpkg-buildpackage, debhelper, lintian and a git checkout"
	exit 0
fi
for b in "$B" "$T/amd64"; do
	mkdir -p "$b/npm"
	[ ! -e "$BUILD/npm/speedscope-1.25.0.tgz" ] || cp "$BUILD/npm/speedscope-1.25.0.tgz" "$b/npm/"
done
check "make deb ARCH=arm64 builds both arm64 packages" \
	make -s -C "$SRC" deb ARCH=arm64 BUILD="$B" CROSS_ROOT="$CROSS_ROOT"
check "make deb builds amd64's, to compare" make -s -C "$SRC" deb BUILD="$T/amd64"
for p in vmtools-agent vmtools-image; do
	arm=$(ls "$B"/deb/${p}_*_arm64.deb 2>/dev/null)
	amd=$(ls "$T"/amd64/deb/${p}_*_amd64.deb 2>/dev/null)
	check "$p's arm64 package is for arm64" \
		test "$(dpkg-deb -f "$arm" Architecture 2>/dev/null)" = arm64
	check "$p's arm64 package holds the files amd64's does" \
		diff <(dpkg-deb -c "$arm" | awk '{ print $1, $6 }') <(dpkg-deb -c "$amd" | awk '{ print $1, $6 }')
	rm -rf "$T/x" && dpkg-deb -x "$arm" "$T/x"
	bin=$(find "$T/x/usr/bin" "$T/x/usr/sbin" -type f 2>/dev/null | head -n 1)
	check "$p's arm64 package's binary is an arm64 program" \
		bash -c "file -b '$bin' | grep -q 'ARM aarch64'"
	# The same packages depended on (an arm64 library's is its own
	# package, of the same name as amd64's).
	names() { dpkg-deb -f "$1" Depends | tr ',' '\n' | awk '{ print $1 }' | sort; }
	check "$p's arm64 Depends names the packages amd64's does ($(names "$arm" | tr '\n' ' '))" \
		diff <(names "$arm") <(names "$amd")
	lintian "$arm" >"$T/lintian.$p" 2>&1
	check "lintian finds nothing in $p's arm64 package" \
		bash -c "! grep -E '^[EWI]: ' '$T/lintian.$p'"
	grep -E '^[EWI]: ' "$T/lintian.$p" | diag
done
