#!/usr/bin/env bash
# tests/lib/cross-root.sh - the arm64 development packages vmtools-image
# links against, unpacked with dpkg -x into a cross root under
# $VMTOOLS_CACHE (cached): Debian 12's libext2fs-dev of two architectures
# cannot be installed at once, so `make ARCH=arm64 CROSS_ROOT=DIR` reads
# the arm64 headers and libraries from there instead (the Makefile).  The
# C library comes from the cross toolchain (gcc-aarch64-linux-gnu), not
# from here.  Prints CROSS_ROOT=DIR.
# Use: eval "$(bash tests/lib/cross-root.sh)"
set -euo pipefail
. "$(dirname "$0")/apt-download.sh"
CACHE=${VMTOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vmtools}
dir=$CACHE/cross-arm64
if [ ! -e "$dir/.done" ]; then
	rm -rf "$dir"
	mkdir -p "$dir/debs" "$dir/root"
	pkgs=$(apt-cache depends --recurse --no-recommends --no-suggests \
		--no-conflicts --no-breaks --no-replaces --no-enhances \
		libext2fs-dev:arm64 comerr-dev:arm64 libelf-dev:arm64 \
		libjson-c-dev:arm64 libssl-dev:arm64 zlib1g-dev:arm64 |
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
	touch "$dir/.done"
fi
echo "CROSS_ROOT=$dir/root"
