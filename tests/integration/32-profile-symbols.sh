#!/usr/bin/env bash
# tests/integration/32-profile-symbols.sh - the symbolizer finds the names
# of static functions in fully stripped binaries: from MiniDebugInfo
# (.gnu_debugdata, xz-compressed), and from a separate debug file found by
# .gnu_debuglink (in DIR/.debug/, CRC checked) or by build id.  Where
# nothing names a function, its frame is FILE+0xSTART with START its start
# from .eh_frame_hdr: addr2line on the split-off debug file names it.
# Files are opened through /proc/PID/map_files, so a binary deleted while
# it runs is still symbolized.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/elf.sh"

skip_unless "symbols of stripped binaries" "$(need_bpf)" \
	"$(need_cmd gcc objcopy strip xz nm readelf)"

cat >"$T/spin.c" <<'C'
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void vmt_static_spin(void)
{
	for (int i = 0; i < 100000; i++)
		sink += i;
}
int main(int argc, char **argv)
{
	time_t end = time(NULL) + atoi(argv[1]);
	while (time(NULL) < end)
		vmt_static_spin();
	return 0;
}
C
sed -i '1i #include <stdlib.h>' "$T/spin.c"
gcc -O1 -g -fno-omit-frame-pointer -Wl,--build-id -o "$T/spin" "$T/spin.c" || exit 1

# MiniDebugInfo the way Fedora makes it: the function symbols of the
# debug file, xz-compressed into .gnu_debugdata of the stripped binary.
mkdir -p "$T/mini"
make_minidebuginfo "$T/spin" "$T/mini/spin-mini" || exit 1

# A separate debug file by .gnu_debuglink, in DIR/.debug/.
mkdir -p "$T/link/.debug"
objcopy --only-keep-debug "$T/spin" "$T/link/.debug/spin-link.debug"
strip --strip-all -o "$T/link/spin-link" "$T/spin"
(cd "$T/link/.debug" && objcopy --add-gnu-debuglink=spin-link.debug "$T/link/spin-link")

# A separate debug file by build id, under VMTOOLS_DEBUG_DIR/.build-id/.
id=$(readelf -n "$T/spin" | awk '/Build ID/ {print $3}')
mkdir -p "$T/debug/.build-id/${id:0:2}"
objcopy --only-keep-debug "$T/spin" "$T/debug/.build-id/${id:0:2}/${id:2}.debug"
strip --strip-all -o "$T/spin-bid" "$T/spin"

# A plain stripped one: nothing to find.
strip --strip-all -o "$T/spin-bare" "$T/spin"

check "the stripped binaries have no .symtab" \
	bash -c "! readelf -S '$T/mini/spin-mini' | grep -q symtab && ! readelf -S '$T/link/spin-link' | grep -q symtab"

profile_of() { # BINARY: run it, profile it by pid, print the folded text
	"$1" 3 &
	local pid=$!
	sleep 0.2
	"$VMTOOLS_AGENT" profile --seconds 1 --frequency 199 --pid $pid --format folded --output "$T/out.folded" 2>"$T/err" ||
		cat "$T/err" >&2
	wait $pid
	cat "$T/out.folded"
}

check "MiniDebugInfo (.gnu_debugdata) names a static function" \
	bash -c "$(declare -f profile_of); T='$T' VMTOOLS_AGENT='$VMTOOLS_AGENT' profile_of '$T/mini/spin-mini' | grep -q ';vmt_static_spin'"
check "a .gnu_debuglink debug file in .debug/ names a static function" \
	bash -c "$(declare -f profile_of); T='$T' VMTOOLS_AGENT='$VMTOOLS_AGENT' profile_of '$T/link/spin-link' | grep -q ';vmt_static_spin'"
check "a debug file found by build id names a static function" \
	bash -c "$(declare -f profile_of); export VMTOOLS_DEBUG_DIR='$T/debug'; T='$T' VMTOOLS_AGENT='$VMTOOLS_AGENT' profile_of '$T/spin-bid' | grep -q ';vmt_static_spin'"

# A bare stripped one: the static function's frame is spin-bare+0xSTART,
# START its start as nm and addr2line number it, one frame however many
# addresses in it were sampled.
profile_of "$T/spin-bare" >"$T/bare.folded" 2>/dev/null
dbg=$T/debug/.build-id/${id:0:2}/${id:2}.debug
starts=$(grep -o ';spin-bare+0x[0-9a-f]* ' "$T/bare.folded" | sed 's/^;spin-bare+//' | sort -u)
want=$(nm "$dbg" | awk '$3 == "vmt_static_spin" {print $1}' | sed 's/^0*//')
check "a bare stripped binary's leaf is spin-bare+0xSTART, START where nm puts vmt_static_spin ($want)" \
	grep -q ";spin-bare+0x$want [0-9]*$" "$T/bare.folded"
check "addr2line -f -e DEBUGFILE names every spin-bare+0xSTART frame a function of spin.c" \
	bash -c "[ -n '$starts' ] && for a in $(echo $starts); do addr2line -f -e '$dbg' \$a | head -1 | grep -Eq '^(main|vmt_static_spin)$' || exit 1; done"
check "no wrong names and no bare addresses in it" \
	bash -c "! grep -q vmt_static_spin '$T/bare.folded' && ! grep -Eq ';(0x[0-9a-f]+|\[unknown\]|) ' '$T/bare.folded'"

# A debug file whose CRC does not match is not used.
cp "$T/link/spin-link" "$T/link/spin-crc"
echo garbage >>"$T/link/.debug/spin-link.debug"
profile_of "$T/link/spin-crc" >"$T/crc.folded" 2>/dev/null
check "a debuglink file with the wrong CRC is refused" \
	bash -c "grep -q 'spin-crc+0x' '$T/crc.folded' && ! grep -q vmt_static_spin '$T/crc.folded'"

# Deleted while running: map_files still reaches it.
cp "$T/spin" "$T/spin-deleted"
"$T/spin-deleted" 3 &
pid=$!
at_exit "kill $pid"
sleep 0.2
rm -f "$T/spin-deleted"
check "a binary deleted while it runs is still symbolized" \
	bash -c "'$VMTOOLS_AGENT' profile --seconds 1 --frequency 199 --pid $pid --format folded --output '$T/del.folded' &&
		grep -q ';vmt_static_spin' '$T/del.folded'"
wait $pid
