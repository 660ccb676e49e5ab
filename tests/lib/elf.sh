# shellcheck shell=bash
# tests/lib/elf.sh - ELF files made for tests from a compiler's output,
# never committed: sourced by tests and by fuzz seed generators.
#
#   make_minidebuginfo BIN OUT   OUT = BIN stripped, with BIN's function
#                                symbols xz-compressed into .gnu_debugdata
#                                (MiniDebugInfo, the way Fedora makes it)

make_minidebuginfo() {
	local bin=$1 out=$2 tmp
	tmp=$(mktemp -d) || return 1
	nm "$bin" --format=posix --defined-only | awk '$2 ~ /[Tt]/ {print $1}' >"$tmp/keep" &&
		objcopy --only-keep-debug "$bin" "$tmp/mini.debug" &&
		objcopy -S --remove-section .gdb_index --remove-section .comment \
			--keep-symbols="$tmp/keep" "$tmp/mini.debug" "$tmp/mini.small" &&
		xz -f "$tmp/mini.small" &&
		strip --strip-all -o "$out" "$bin" &&
		objcopy --add-section .gnu_debugdata="$tmp/mini.small.xz" "$out"
	local st=$?
	rm -rf "$tmp"
	return $st
}
