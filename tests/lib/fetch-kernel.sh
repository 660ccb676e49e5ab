#!/usr/bin/env bash
# tests/lib/fetch-kernel.sh - fetches Debian 12's cloud kernel packages (the
# newest ABI the archive offers) with `apt-get download`, unpacks them with
# `dpkg -x` into one staged root, and caches both under $VMTOOLS_CACHE.
# This is the real input of the image builder and the guest kernel of the VM
# tests.  Prints shell assignments on stdout:
#   KERNEL_RELEASE=6.1.0-N-cloud-amd64
#   KERNEL_ROOT=/…/root            staged tree: lib/modules, usr/src, usr/bin/perf
#   KERNEL_VMLINUZ=/…/root/boot/vmlinuz-REL
#   KERNEL_DEBS=/…/debs
# Use: eval "$(tests/lib/fetch-kernel.sh)"
set -euo pipefail
. "$(dirname "$0")/apt-download.sh"
CACHE=${VMTOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vmtools}
mkdir -p "$CACHE"

abi=${VMTOOLS_KERNEL_ABI:-}
if [ -z "$abi" ]; then
	abi=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' 2>/dev/null |
		sed -n 's/^linux-image-6\.1\.0-\([0-9]*\)-cloud-amd64-unsigned .*/\1/p' | sort -n | tail -n 1)
fi
if [ -z "$abi" ]; then
	# No package lists (fresh machine): use what is cached, else update.
	abi=$(ls -d "$CACHE"/kernel-6.1.0-*/root 2>/dev/null | sed -n 's/.*kernel-6\.1\.0-\([0-9]*\)-cloud.*/\1/p' | sort -n | tail -n 1)
	if [ -z "$abi" ]; then
		apt-get update -qq >&2
		abi=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' |
			sed -n 's/^linux-image-6\.1\.0-\([0-9]*\)-cloud-amd64-unsigned .*/\1/p' | sort -n | tail -n 1)
	fi
fi
[ -n "$abi" ] || { echo "fetch-kernel.sh: no linux-image-6.1.0-N-cloud-amd64-unsigned package in the archive; run apt-get update" >&2; exit 1; }

rel=6.1.0-$abi-cloud-amd64
dir=$CACHE/kernel-$rel
root=$dir/root
if [ ! -e "$dir/.done" ]; then
	rm -rf "$dir"
	mkdir -p "$dir/debs" "$root"
	apt_download "$dir/debs" "linux-image-$rel-unsigned" "linux-headers-$rel" \
		"linux-headers-6.1.0-$abi-common" linux-kbuild-6.1 linux-perf ||
		{ echo "fetch-kernel.sh: cannot download the $rel packages (apt-get download, after apt-get update)" >&2; exit 1; }
	for d in "$dir"/debs/*.deb; do
		dpkg -x "$d" "$root"
	done
	touch "$dir/.done"
fi
echo "KERNEL_RELEASE=$rel"
echo "KERNEL_ROOT=$root"
echo "KERNEL_VMLINUZ=$root/boot/vmlinuz-$rel"
echo "KERNEL_DEBS=$dir/debs"
