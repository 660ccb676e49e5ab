#!/usr/bin/env bash
# tests/lib/cross-root.sh - the arm64 development packages vmtools-image,
# vmtools-agent and the unit tests link against, unpacked with dpkg -x
# into a cross root under $VMTOOLS_CACHE (cached, one root per list of
# packages): Debian 12's libext2fs-dev of two architectures cannot be
# installed at once, so `make ARCH=arm64 CROSS_ROOT=DIR` reads the arm64
# headers and libraries from there instead (the Makefile).  The C library
# comes from the cross toolchain (gcc-aarch64-linux-gnu), not from here.
# Beside the root, a dpkg database of those packages and arm64's libc6
# (DIR/../admin, DIR/../libc-root) for dpkg-shlibdeps.  Prints
# CROSS_ROOT=DIR.
# Use: eval "$(bash tests/lib/cross-root.sh)"
set -euo pipefail
. "$(dirname "$0")/apt-download.sh"
CACHE=${VMTOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vmtools}
# The -dev packages of the Makefile's IMAGE_PKGS, AGENT_PKGS and TEST_PKGS.
DEV_PKGS=(
	libext2fs-dev comerr-dev libelf-dev libjson-c-dev libssl-dev zlib1g-dev
	libbpf-dev libdw-dev libmicrohttpd-dev libdebuginfod-dev
	libcurl4-openssl-dev libprotobuf-c-dev libdeflate-dev liblzma-dev
	libblkid-dev libjansson-dev libcmocka-dev
)
# A new list, or a new layout of what is made from it, is a new root.
LAYOUT=2
dir=$CACHE/cross-arm64-$(printf '%s\n' "${DEV_PKGS[@]}" "$LAYOUT" | sha256sum | cut -c1-12)
if [ ! -e "$dir/.done" ]; then
	rm -rf "$dir"
	mkdir -p "$dir/debs" "$dir/root"
	pkgs=$(apt-cache depends --recurse --no-recommends --no-suggests \
		--no-conflicts --no-breaks --no-replaces --no-enhances \
		"${DEV_PKGS[@]/%/:arm64}" |
		grep -E '^[a-z0-9][^ ]*:arm64$' |
		grep -vE '^(libc6|libc6-dev|libc-dev-bin|linux-libc-dev|libcrypt-dev|libnsl-dev|libtirpc-dev|rpcsvc-proto|gcc-12-base):' |
		sort -u)
	[ -n "$pkgs" ] || { echo "cross-root.sh: apt knows no arm64 packages: dpkg --add-architecture arm64; apt-get update" >&2; exit 1; }
	# shellcheck disable=SC2086 # one package a word
	apt_download "$dir/debs" $pkgs ||
		{ echo "cross-root.sh: cannot download the arm64 development packages (apt-get download)" >&2; exit 1; }
	for d in "$dir"/debs/*.deb; do
		dpkg -x "$d" "$dir/root"
	done
	# A library's development link names the file where it is installed
	# (libz.so -> /lib/aarch64-linux-gnu/libz.so.1.2.13): pointed inside
	# the root, else the linker finds nothing there, or the static archive.
	find "$dir/root" -type l -lname '/*' | while read -r l; do
		ln -sfnr "$dir/root$(readlink "$l")" "$l"
	done
	# arm64's C library, for dpkg-shlibdeps only (the cross toolchain's is
	# the one linked against): beside the root, not in it.
	mkdir -p "$dir/libc"
	apt_download "$dir/libc" libc6:arm64 ||
		{ echo "cross-root.sh: cannot download libc6:arm64 (apt-get download)" >&2; exit 1; }
	dpkg -x "$dir"/libc/*.deb "$dir/libc-root"
	# A dpkg database of these packages as if installed where they were
	# unpacked, so that dpkg-shlibdeps (--admindir) finds which package
	# holds an arm64 library and its shlibs and symbols files: the
	# Depends of `make deb ARCH=arm64`.
	mkdir -p "$dir/admin/info" "$dir/admin/updates" "$dir/ctl"
	printf 'amd64\narm64\n' >"$dir/admin/arch"
	echo 1 >"$dir/admin/info/format" # names qualified by arch
	: >"$dir/admin/status"
	for d in "$dir"/debs/*.deb "$dir"/libc/*.deb; do
		pkg=$(dpkg-deb -f "$d" Package)
		name=$pkg
		[ "$(dpkg-deb -f "$d" Multi-Arch)" != same ] || name=$pkg:arm64
		root=$dir/root
		case $d in "$dir"/libc/*) root=$dir/libc-root ;; esac
		{ dpkg-deb -f "$d"; echo "Status: install ok installed"; echo; } >>"$dir/admin/status"
		dpkg-deb --fsys-tarfile "$d" | tar -t | sed -e 's|^\./*||' -e 's|/$||' |
			awk -v r="$root" 'NF { print r "/" $0 }' >"$dir/admin/info/$name.list"
		rm -rf "$dir/ctl/x" && dpkg-deb -e "$d" "$dir/ctl/x"
		for f in shlibs symbols; do
			[ ! -e "$dir/ctl/x/$f" ] || cp "$dir/ctl/x/$f" "$dir/admin/info/$name.$f"
		done
	done
	touch "$dir/.done"
fi
echo "CROSS_ROOT=$dir/root"
