#!/usr/bin/env bash
# tests/lib/fetch-kernel.sh - fetches Debian 12's cloud kernel packages (the
# newest ABI the archive offers) with `apt-get download`, unpacks them with
# `dpkg -x` into one staged root, and caches both under $VMTOOLS_CACHE.
# This is the real input of the image builder and the guest kernel of the VM
# tests.  VMTOOLS_KERNEL_ARCH=arm64 fetches the arm64 kernel instead (the
# machine's dpkg must know the architecture: ci/install-deps.sh adds it),
# and beside it the arm64 packages of the libraries its perf needs,
# unpacked into a sysroot of their own.  Prints shell assignments on stdout:
#   KERNEL_RELEASE=6.1.0-N-cloud-amd64
#   KERNEL_ROOT=/…/root            staged tree: lib/modules, usr/src, usr/bin/perf
#   KERNEL_VMLINUZ=/…/root/boot/vmlinuz-REL
#   KERNEL_DEBS=/…/debs
#   KERNEL_SYSROOT=/…/sysroot      (arm64 only) perf's loader and libraries
# Use: eval "$(tests/lib/fetch-kernel.sh)"
set -euo pipefail
. "$(dirname "$0")/apt-download.sh"
CACHE=${VMTOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vmtools}
mkdir -p "$CACHE"
arch=${VMTOOLS_KERNEL_ARCH:-amd64}
case $arch in
amd64) any= ;;
arm64) any=:arm64 ;;
*) echo "fetch-kernel.sh: VMTOOLS_KERNEL_ARCH=$arch: amd64 or arm64" >&2; exit 1 ;;
esac

abi=${VMTOOLS_KERNEL_ABI:-}
if [ -z "$abi" ]; then
	abi=$(apt-cache search --names-only "^linux-image-6\\.1\\.0-[0-9]+-cloud-$arch-unsigned\$" 2>/dev/null |
		sed -n "s/^linux-image-6\\.1\\.0-\\([0-9]*\\)-cloud-$arch-unsigned .*/\\1/p" | sort -n | tail -n 1)
fi
if [ -z "$abi" ]; then
	# No package lists (fresh machine): use what is cached, else update.
	abi=$(ls -d "$CACHE"/kernel-6.1.0-*-cloud-$arch/root 2>/dev/null | sed -n 's/.*kernel-6\.1\.0-\([0-9]*\)-cloud.*/\1/p' | sort -n | tail -n 1)
	if [ -z "$abi" ]; then
		apt-get update -qq >&2
		abi=$(apt-cache search --names-only "^linux-image-6\\.1\\.0-[0-9]+-cloud-$arch-unsigned\$" |
			sed -n "s/^linux-image-6\\.1\\.0-\\([0-9]*\\)-cloud-$arch-unsigned .*/\\1/p" | sort -n | tail -n 1)
	fi
fi
[ -n "$abi" ] || { echo "fetch-kernel.sh: no linux-image-6.1.0-N-cloud-$arch-unsigned package in the archive; run apt-get update" >&2; exit 1; }

rel=6.1.0-$abi-cloud-$arch
dir=$CACHE/kernel-$rel
root=$dir/root
if [ ! -e "$dir/.done" ]; then
	rm -rf "$dir"
	mkdir -p "$dir/debs" "$root"
	apt_download "$dir/debs" "linux-image-$rel-unsigned$any" "linux-headers-$rel$any" \
		"linux-headers-6.1.0-$abi-common" "linux-kbuild-6.1$any" "linux-perf$any" ||
		{ echo "fetch-kernel.sh: cannot download the $rel packages (apt-get download, after apt-get update)" >&2; exit 1; }
	for d in "$dir"/debs/*.deb; do
		dpkg -x "$d" "$root"
	done
	if [ -n "$any" ]; then
		# The libraries (and their libraries) of perf's package, of its
		# architecture: what a guest of it would have installed.
		mkdir -p "$dir/libdebs" "$dir/sysroot"
		libs=$(apt-cache depends --recurse --no-recommends --no-suggests \
			--no-conflicts --no-breaks --no-replaces --no-enhances "linux-perf$any" |
			grep -E "^(lib|zlib)[^ ]*$any\$" | grep -vE -- "-(stdlib|minimal)$any\$" | sort -u)
		# shellcheck disable=SC2086 # one package a word
		apt_download "$dir/libdebs" $libs ||
			{ echo "fetch-kernel.sh: cannot download the $arch libraries of linux-perf (apt-get download)" >&2; exit 1; }
		for d in "$dir"/libdebs/*.deb; do
			dpkg -x "$d" "$dir/sysroot"
		done
	fi
	touch "$dir/.done"
fi
echo "KERNEL_RELEASE=$rel"
echo "KERNEL_ROOT=$root"
echo "KERNEL_VMLINUZ=$root/boot/vmlinuz-$rel"
echo "KERNEL_DEBS=$dir/debs"
[ -z "$any" ] || echo "KERNEL_SYSROOT=$dir/sysroot"
