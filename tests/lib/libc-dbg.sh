# shellcheck shell=bash
# tests/lib/libc-dbg.sh - Debian's real debug files for the libc every
# process here runs: libc6-dbg of the installed libc6's version, fetched
# with `apt-get download` (cached under $VMTOOLS_CACHE) and unpacked with
# `dpkg -x` into a directory of the test's, never /usr/lib/debug, so a
# test knows where names came from.  Sourced after tap.sh.
#
#   libc_dbg_fetch DIR   DIR/usr/lib/debug/.build-id/… of libc6-dbg; sets
#                        LIBC_SO, LIBC_ID (its build id), LIBC_DEBUG (the
#                        debug file); prints why on stdout and fails when
#                        it cannot

. "$SRC/tests/lib/apt-download.sh"

libc_dbg_fetch() {
	local dir=$1 cache ver deb
	cache=${VMTOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vmtools}/libc6-dbg
	LIBC_SO=$(ldconfig -p | awk '$1 == "libc.so.6" && /x86-64|x86_64|AArch64|aarch64/ {print $NF; exit}')
	[ -n "$LIBC_SO" ] || LIBC_SO=$(ldd /bin/true | awk '/libc.so.6/ {print $3}')
	LIBC_SO=$(readlink -f "$LIBC_SO")
	LIBC_ID=$(readelf -n "$LIBC_SO" | awk '/Build ID/ {print $3}')
	ver=$(dpkg-query -W -f='${Version}' "libc6:$(dpkg --print-architecture)" 2>/dev/null) ||
		{ echo "needs Debian's libc6 package"; return 1; }
	mkdir -p "$cache"
	deb=$(ls "$cache"/libc6-dbg_"${ver//:/%3a}"_*.deb 2>/dev/null | head -n 1)
	if [ -z "$deb" ]; then
		apt_download "$cache" "libc6-dbg=$ver" 2>/dev/null ||
			{ echo "cannot download libc6-dbg $ver (apt-get download, after apt-get update)"; return 1; }
		deb=$(ls "$cache"/libc6-dbg_*"${ver##*:}"_*.deb 2>/dev/null | head -n 1)
	fi
	[ -n "$deb" ] && dpkg -x "$deb" "$dir" ||
		{ echo "cannot unpack libc6-dbg $ver"; return 1; }
	LIBC_DEBUG=$dir/usr/lib/debug/.build-id/${LIBC_ID:0:2}/${LIBC_ID:2}.debug
	[ -f "$LIBC_DEBUG" ] ||
		{ echo "libc6-dbg $ver has no debug file for $LIBC_SO ($LIBC_ID)"; return 1; }
}
