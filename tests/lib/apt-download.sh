# shellcheck shell=bash
# tests/lib/apt-download.sh - `apt-get download` that does not depend on
# how fresh this machine's package lists are: when a package (or the
# version asked for) cannot be had from the lists as they are (none yet
# on a fresh machine, or stale ones naming files the archive has since
# dropped), the lists are brought up to date once, as root, and the
# download is tried again.  Sourced by tests/lib/fetch-kernel.sh and
# tests/lib/libc-dbg.sh.
#
#   apt_download DIR PKG[=VERSION]...   the .deb files into DIR; apt's
#                                       complaint on stderr when it fails

apt_download() {
	local dir=$1
	shift
	(cd "$dir" && apt-get download -q "$@" >/dev/null 2>"$dir/.apt-download.err") && return 0
	if [ "$(id -u)" = 0 ] && apt-get update -qq >/dev/null 2>&1 &&
		(cd "$dir" && apt-get download -q "$@" >/dev/null 2>"$dir/.apt-download.err"); then
		return 0
	fi
	cat "$dir/.apt-download.err" >&2
	return 1
}
