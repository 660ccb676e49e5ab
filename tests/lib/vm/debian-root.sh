#!/usr/bin/env bash
# tests/lib/vm/debian-root.sh - a Debian 12 root file system with systemd as
# its init, made by mmdebstrap from the archive this machine's apt uses (its
# sources files, as they are), for the systemd guest of
# tests/vm/20-systemd-guest.sh.  The tarball is cached in
# $VMTOOLS_CACHE/vm under a hash of this script, the packages and the
# sources, like the kernel; older ones are removed.
#
# usage: debian-root.sh PKG...     the packages besides systemd's; prints
#                                  the tarball's path
set -euo pipefail
CACHE=${VMTOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vmtools}/vm
mkdir -p "$CACHE"
# systemd as PID 1, udev for its device units, what the guest's checks run.
PKGS=(systemd-sysv udev iproute2 kmod procps "$@")
# The machine's own Debian 12 sources (deb822 or one-line), not third
# parties' repositories.
SOURCES=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] && grep -qE '^[^#]*bookworm' "$f" && grep -qE '^[^#]*debian' "$f" && SOURCES+=("$f")
done
[ ${#SOURCES[@]} -gt 0 ] || { echo "debian-root.sh: no bookworm source in /etc/apt/sources.list{,.d/}" >&2; exit 1; }
key=$( {
	sha256sum <"$0"
	printf '%s\n' "${PKGS[@]}" | LC_ALL=C sort -u
	cat "${SOURCES[@]}"
} | sha256sum | cut -c1-16)
TAR=$CACHE/debian-root-$key.tar
exec 9>"$CACHE/.debian-root.lock"
flock 9
if [ ! -e "$TAR" ]; then
	echo "debian-root.sh: mmdebstrap bookworm with ${PKGS[*]} from ${SOURCES[*]}" >&2
	mmdebstrap --variant=minbase --include="$(IFS=,; echo "${PKGS[*]}")" \
		bookworm "$TAR.tmp.tar" "${SOURCES[@]}" >&2
	mv "$TAR.tmp.tar" "$TAR"
	find "$CACHE" -maxdepth 1 -name 'debian-root-*.tar' ! -name "$(basename "$TAR")" -delete
fi
echo "$TAR"
