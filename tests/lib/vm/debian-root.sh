#!/usr/bin/env bash
# tests/lib/vm/debian-root.sh - a Debian 12 root file system made by
# mmdebstrap from the archive this machine's apt uses (its sources files,
# as they are), cached in $VMTOOLS_CACHE/vm under a hash of this script,
# the architecture, the packages and the sources, like the kernel; older
# ones of the same kind are removed.  Two kinds:
#   (default)          a root with systemd as its init, for the systemd
#                      guest of tests/vm/20-systemd-guest.sh: a tarball
#   --extract          only PKG and what they depend on, unpacked and not
#                      installed (no maintainer script runs, so the
#                      architecture may be one this machine cannot run):
#                      a directory the busybox guest of another
#                      architecture takes its programs and libraries from
#                      (tests/lib/vm/initramfs.sh with VM_GUEST_ROOT)
#
# usage: debian-root.sh [--arch ARCH] [--extract] PKG...
#                      the packages besides systemd's (all of them with
#                      --extract), of ARCH (dpkg's name; default this
#                      machine's); prints the tarball's or directory's path
set -euo pipefail
CACHE=${VMTOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vmtools}/vm
mkdir -p "$CACHE"
arch=$(dpkg --print-architecture) extract=
while [ $# -gt 0 ]; do
	case $1 in
	--arch) arch=$2; shift 2 ;;
	--extract) extract=1; shift ;;
	*) break ;;
	esac
done
if [ -n "$extract" ]; then
	[ $# -gt 0 ] || { echo "debian-root.sh: --extract needs the packages to unpack" >&2; exit 2; }
	PKGS=("$@")
	variant=extract
else
	# systemd as PID 1, udev for its device units, what the guest's checks run.
	PKGS=(systemd-sysv udev iproute2 kmod procps "$@")
	variant=minbase
fi
# The machine's own Debian 12 sources (deb822 or one-line), not third
# parties' repositories.
SOURCES=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] && grep -qE '^[^#]*bookworm' "$f" && grep -qE '^[^#]*debian' "$f" && SOURCES+=("$f")
done
[ ${#SOURCES[@]} -gt 0 ] || { echo "debian-root.sh: no bookworm source in /etc/apt/sources.list{,.d/}" >&2; exit 1; }
key=$( {
	sha256sum <"$0"
	echo "$arch $variant"
	printf '%s\n' "${PKGS[@]}" | LC_ALL=C sort -u
	cat "${SOURCES[@]}"
} | sha256sum | cut -c1-16)
kind=$arch-$variant
if [ -n "$extract" ]; then
	OUT=$CACHE/debian-root-$kind-$key
else
	OUT=$CACHE/debian-root-$kind-$key.tar
fi
exec 9>"$CACHE/.debian-root.lock"
flock 9
if [ ! -e "$OUT" ]; then
	echo "debian-root.sh: mmdebstrap --variant=$variant bookworm ($arch) with ${PKGS[*]} from ${SOURCES[*]}" >&2
	rm -rf "$OUT.tmp" "$OUT.tmp.tar"
	if [ -n "$extract" ]; then
		mmdebstrap --variant=extract --architectures="$arch" --include="$(IFS=,; echo "${PKGS[*]}")" \
			bookworm "$OUT.tmp" "${SOURCES[@]}" >&2
		mv "$OUT.tmp" "$OUT"
	else
		mmdebstrap --variant=minbase --architectures="$arch" --include="$(IFS=,; echo "${PKGS[*]}")" \
			bookworm "$OUT.tmp.tar" "${SOURCES[@]}" >&2
		mv "$OUT.tmp.tar" "$OUT"
	fi
	find "$CACHE" -maxdepth 1 -name "debian-root-$kind-*" ! -name "$(basename "$OUT")" -exec rm -rf {} +
fi
echo "$OUT"
