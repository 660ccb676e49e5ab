#!/usr/bin/env bash
# tests/lib/vm/initramfs.sh - builds the guest userland of the VM test and
# `make demo`: an initramfs (cpio newc, gzip) that is all the guest has
# besides the tools disk.
#
# usage: initramfs.sh KERNEL_ROOT KERNEL_RELEASE AGENT OUTPUT [EXTRA_LIST]
#
# Two archives (three with EXTRA_LIST), concatenated into OUTPUT (the kernel
# unpacks one after the other, see
# Documentation/driver-api/early-userspace/buffer-format.rst):
#   base   busybox (busybox-static), kmod, PostgreSQL 15's server binaries
#          with their share/ files and every shared library they load, the
#          virtio modules of KERNEL_ROOT the guest needs to see its disk and
#          network (loaded by /init with insmod, in dependency order), users.
#          It is big and changes rarely, so it is cached in $VMTOOLS_CACHE/vm
#          under a hash of its inputs (path, size, mtime) and of this script.
#   extra  only with EXTRA_LIST, a file naming host paths one a line (files
#          or directories, symlinks followed): those files at the same paths
#          and every shared library their executables and shared objects
#          load; what a benchmark adds to the guest (bench/offcpu-vm.sh:
#          python3, bcc, bpftool).  Cached like base, under its own hash.
#   top    the agent, its libraries and /init (tests/lib/vm/init, or the
#          script $VM_INIT names: the systemd guest's switches to its root
#          disk), and what busybox init runs: /etc/inittab, whose two lines
#          that start the agent are taken from docs/guest-setup.md as they
#          are written there (so the page is what the VM test runs), the
#          other steps (tests/lib/vm/after-setup, tests/lib/vm/load), and
#          /etc/default/vmtools-agent with the agent's options: rebuilt on
#          every run, it takes a second.
# The guest gets no perf and none of perf's libraries: perf must come from
# the tools image.  Libraries are found with ldd, on the host, where these
# trusted Debian binaries live.
set -euo pipefail
[ $# -eq 4 ] || [ $# -eq 5 ] || { echo "usage: $0 KERNEL_ROOT KERNEL_RELEASE AGENT OUTPUT [EXTRA_LIST]" >&2; exit 2; }
KROOT=$1 REL=$2 AGENT=$3 OUTPUT=$4 EXTRA_LIST=${5:-}
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${VMTOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vmtools}/vm
PG=/usr/lib/postgresql/15
PGSHARE=/usr/share/postgresql/15
# Modules the guest needs before anything else: the disk and the network.
# ext4 and the rest are built into Debian's cloud kernel.
BOOT_MODULES=(virtio_pci virtio_blk virtio_net)
MODDIR=$KROOT/lib/modules/$REL
mkdir -p "$CACHE"

die() { echo "initramfs.sh: $*" >&2; exit 1; }
for f in /bin/busybox /usr/bin/kmod "$PG/bin/postgres" "$AGENT" "$MODDIR/modules.order"; do
	[ -e "$f" ] || die "$f is missing (busybox-static, kmod and postgresql-15 come from ci/install-deps.sh, the kernel from tests/lib/fetch-kernel.sh)"
done
# A static busybox matters: it runs before any library is in place.
grep -q 'statically linked' <<<"$(file -L /bin/busybox)" || die "/bin/busybox is not static; install busybox-static"

# libs FILE...: the shared libraries FILE needs, as the loader resolves them.
libs() {
	local out
	for f; do
		out=$(ldd "$f" 2>&1) || { case $out in *'not a dynamic executable'*) continue ;; esac; die "ldd $f: $out"; }
		if grep -q 'not found' <<<"$out"; then die "$f needs a library that is not installed: $(grep 'not found' <<<"$out")"; fi
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$out"
	done | sort -u
}

# modules_in_order NAME...: the module files for NAME and their dependencies,
# dependencies first (modinfo reads .modinfo of each file; no modules.dep
# is needed, the kernel packages do not ship one).
declare -A MODPATH=() MODSEEN=()
while read -r p; do
	n=$(basename "$p" .ko)
	MODPATH[${n//-/_}]=$MODDIR/$p
done <"$MODDIR/modules.order"
modules_in_order() {
	local m d
	for m; do
		m=${m//-/_}
		[ -n "${MODSEEN[$m]:-}" ] && continue
		MODSEEN[$m]=1
		if [ -z "${MODPATH[$m]:-}" ]; then
			grep -q "/$m.ko\$" "$MODDIR/modules.builtin" || die "module $m is neither a module nor built into $REL"
			continue
		fi
		for d in $(/sbin/modinfo -F depends "${MODPATH[$m]}" | tr ',' ' '); do
			modules_in_order "$d"
		done
		echo "${MODPATH[$m]}"
	done
}

# copy SRC... into the stage at the same path (following symlinks: the
# guest gets the file under the name the loader asks for).
copy() {
	local f
	for f; do
		mkdir -p "$STAGE$(dirname "$f")"
		cp -L --preserve=mode "$f" "$STAGE$f"
	done
}

# pack DIR OUT: a reproducible cpio newc archive of DIR, gzip-compressed.
pack() {
	(cd "$1" && find . -mindepth 1 | LC_ALL=C sort |
		cpio --quiet -o -H newc --owner=0:0 --reproducible) | gzip -n -6 >"$2.tmp"
	mv "$2.tmp" "$2"
}

# --- base ---------------------------------------------------------------
PG_BINS=("$PG"/bin/{postgres,initdb,pg_ctl,pgbench,psql})
PG_LIBS=("$PG"/lib/{plpgsql,dict_snowball}.so)
mapfile -t MODULES < <(modules_in_order "${BOOT_MODULES[@]}")
mapfile -t BASE_LIBS < <(libs /usr/bin/kmod "${PG_BINS[@]}" "${PG_LIBS[@]}")
BASE_INPUTS=(/bin/busybox /usr/bin/kmod "${PG_BINS[@]}" "${PG_LIBS[@]}" "${BASE_LIBS[@]}" "${MODULES[@]}")
key=$( {
	sha256sum <"$0"
	stat -L -c '%n %s %Y' "${BASE_INPUTS[@]}"
	find "$PGSHARE" /usr/share/zoneinfo/UTC -printf '%p %s %T@\n' | LC_ALL=C sort
} | sha256sum | cut -c1-16)
BASE=$CACHE/initramfs-base-$key.cpio.gz

# Tests of several people may run at once: one builds, the others wait (the
# lock is held to the end, so no base is deleted while another run reads it).
exec 9>"$CACHE/.initramfs.lock"
flock 9
if [ ! -e "$BASE" ]; then
	echo "initramfs.sh: building the guest's base userland ($BASE)" >&2
	STAGE=$(mktemp -d "$CACHE/stage.XXXXXX")
	trap 'rm -rf "$STAGE"' EXIT
	mkdir -p "$STAGE"/usr/{bin,sbin,lib,lib64} "$STAGE"/{proc,sys,dev,run,tmp,root,etc,var/lib/postgresql,var/log}
	ln -s usr/bin "$STAGE/bin"
	ln -s usr/sbin "$STAGE/sbin"
	ln -s usr/lib "$STAGE/lib"
	ln -s usr/lib64 "$STAGE/lib64"
	chmod 1777 "$STAGE/tmp"

	cp /bin/busybox "$STAGE/usr/bin/busybox"
	for a in $(/bin/busybox --list); do
		case $a in
		busybox | init | linuxrc | depmod | insmod | lsmod | modinfo | modprobe | rmmod) continue ;;
		esac
		ln -s busybox "$STAGE/usr/bin/$a"
	done
	# kmod, as a real guest has: modprobe reads the modules.dep of the image.
	copy /usr/bin/kmod
	for a in depmod insmod lsmod modinfo modprobe rmmod; do
		ln -s ../bin/kmod "$STAGE/usr/sbin/$a"
	done

	copy "${PG_BINS[@]}" "${PG_LIBS[@]}" "${BASE_LIBS[@]}"
	mkdir -p "$STAGE$PGSHARE"
	(cd "$PGSHARE" && find . -path ./extension -prune -o -path ./contrib -prune -o -path ./man -prune -o -print |
		cpio --quiet -pdm "$STAGE$PGSHARE")
	mkdir -p "$STAGE$PGSHARE/extension"
	cp "$PGSHARE"/extension/plpgsql* "$STAGE$PGSHARE/extension/"
	copy /usr/share/zoneinfo/UTC
	mkdir -p "$STAGE/usr/share/zoneinfo/Etc"
	ln -s ../UTC "$STAGE/usr/share/zoneinfo/Etc/UTC"

	# Boot modules live apart from /lib/modules/REL: that path is the tools
	# image's, linked by `vmtools-agent setup`, which never replaces a real
	# directory it did not create.
	mkdir -p "$STAGE/usr/lib/vmtest/modules" "$STAGE/etc/vmtest"
	for m in "${MODULES[@]}"; do
		cp "$m" "$STAGE/usr/lib/vmtest/modules/"
		basename "$m" .ko >>"$STAGE/etc/vmtest/modules"
	done

	cat >"$STAGE/etc/passwd" <<-'EOF'
		root:x:0:0:root:/root:/bin/sh
		postgres:x:102:104:PostgreSQL administrator:/var/lib/postgresql:/bin/sh
		nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
	EOF
	cat >"$STAGE/etc/group" <<-'EOF'
		root:x:0:
		postgres:x:104:
		nogroup:x:65534:
	EOF
	printf 'root:*:19000:0:99999:7:::\npostgres:*:19000:0:99999:7:::\n' >"$STAGE/etc/shadow"
	chmod 640 "$STAGE/etc/shadow"
	printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files\n' >"$STAGE/etc/nsswitch.conf"
	printf '127.0.0.1 localhost\n10.0.2.15 vmtest\n' >"$STAGE/etc/hosts"
	echo vmtest >"$STAGE/etc/hostname"

	pack "$STAGE" "$BASE"
	# Older bases are dead weight (each one is some 30 MB).
	find "$CACHE" -maxdepth 1 -name 'initramfs-base-*.cpio.gz' ! -name "$(basename "$BASE")" -delete
	rm -rf "$STAGE"
	trap - EXIT
fi

# --- extra: what EXTRA_LIST names, with its libraries ---------------------
EXTRA=""
if [ -n "$EXTRA_LIST" ]; then
	mapfile -t EXTRA_PATHS < <(grep -v '^$' "$EXTRA_LIST")
	[ ${#EXTRA_PATHS[@]} -gt 0 ] || die "$EXTRA_LIST names no path"
	for f in "${EXTRA_PATHS[@]}"; do
		[ -e "$f" ] || die "$f (named in $EXTRA_LIST) is missing; ci/install-deps.sh installs what the benchmarks need"
	done
	# Regular files, and symlinks to them (a dangling one is left out).
	mapfile -t EXTRA_FILES < <(find "${EXTRA_PATHS[@]}" -xtype f | LC_ALL=C sort -u)
	# Executables and shared objects (ldd passes over a script).
	mapfile -t EXTRA_ELF < <(find "${EXTRA_PATHS[@]}" -xtype f \( -name '*.so*' -o -perm -u+x \))
	mapfile -t EXTRA_LIBS < <(libs "${EXTRA_ELF[@]}")
	key=$( {
		sha256sum <"$0"
		stat -L -c '%n %s %Y' "${EXTRA_FILES[@]}" "${EXTRA_LIBS[@]}"
	} | sha256sum | cut -c1-16)
	EXTRA=$CACHE/initramfs-extra-$key.cpio.gz
	if [ ! -e "$EXTRA" ]; then
		echo "initramfs.sh: building the extra userland of $EXTRA_LIST ($EXTRA)" >&2
		STAGE=$(mktemp -d "$CACHE/stage.XXXXXX")
		trap 'rm -rf "$STAGE"' EXIT
		printf '%s\n' "${EXTRA_FILES[@]}" "${EXTRA_LIBS[@]}" | LC_ALL=C sort -u |
			cpio --quiet -pdmL "$STAGE"
		# base has /lib, /lib64, /bin and /sbin as symlinks into /usr: a
		# directory of the same name here would replace them.
		for d in bin sbin lib lib64; do
			if [ -d "$STAGE/$d" ] && [ ! -L "$STAGE/$d" ]; then
				mkdir -p "$STAGE/usr/$d"
				cp -a "$STAGE/$d/." "$STAGE/usr/$d/"
				rm -rf "${STAGE:?}/$d"
			fi
		done
		pack "$STAGE" "$EXTRA"
		find "$CACHE" -maxdepth 1 -name 'initramfs-extra-*.cpio.gz' ! -name "$(basename "$EXTRA")" -delete
		rm -rf "$STAGE"
		trap - EXIT
	fi
fi

# --- top: the agent and /init -------------------------------------------
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/vmtools-initramfs.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/usr/sbin"
ln -s usr/lib "$STAGE/lib"
ln -s usr/lib64 "$STAGE/lib64"
mkdir -p "$STAGE/usr/lib" "$STAGE/usr/lib64"
cp "$AGENT" "$STAGE/usr/sbin/vmtools-agent"
# The agent opens libmicrohttpd and libcrypto with dlopen (common/dl.h,
# DL_PKGS in the Makefile), which ldd does not see: they and what they
# need are added by name.
DL_LIBS=()
for name in libmicrohttpd libcrypto; do
	# awk reads to the end: leaving early would kill ldconfig with SIGPIPE,
	# which pipefail turns into a silent exit of this script.
	lib=$(ldconfig -p | awk -v n="$name" '!found && $1 ~ "^" n "\\.so\\.[0-9]+$" && $NF ~ /^\// { print $NF; found = 1 }')
	[ -n "$lib" ] || die "$name is not installed (ci/install-deps.sh installs it)"
	DL_LIBS+=("$lib")
done
mapfile -t AGENT_LIBS < <(libs "$AGENT" "${DL_LIBS[@]}")
copy "${AGENT_LIBS[@]}" "${DL_LIBS[@]}"
cp "${VM_INIT:-$HERE/init}" "$STAGE/init"
chmod 755 "$STAGE/init"
# The inittab lines of docs/guest-setup.md: the lines of its code blocks
# that start with "::" and run vmtools-agent, one sysinit and one respawn.
DOC=$HERE/../../../docs/guest-setup.md
mapfile -t DOC_LINES < <(sed -n 's/^    \(::[a-z]*:.*vmtools-agent.*\)$/\1/p' "$DOC")
[ ${#DOC_LINES[@]} -eq 2 ] && [ "${DOC_LINES[0]#::sysinit:}" != "${DOC_LINES[0]}" ] &&
	[ "${DOC_LINES[1]#::respawn:}" != "${DOC_LINES[1]}" ] ||
	die "$DOC gives ${#DOC_LINES[@]} inittab lines for vmtools-agent, not one ::sysinit: and one ::respawn:"
mkdir -p "$STAGE/etc/default" "$STAGE/usr/lib/vmtest"
install -m 755 "$HERE/after-setup" "$HERE/load" "$STAGE/usr/lib/vmtest/"
{
	echo "# /etc/inittab of the VM test's guest (tests/lib/vm/initramfs.sh)."
	echo "# The vmtools-agent lines are docs/guest-setup.md's, as written there."
	echo "${DOC_LINES[0]}"
	echo "::sysinit:/usr/lib/vmtest/after-setup"
	echo "${DOC_LINES[1]}"
	echo "::respawn:/usr/lib/vmtest/load"
} >"$STAGE/etc/inittab"
# The host reaches the agent through qemu's forward of the host's loopback;
# the guest agent profiles continuously (19 Hz, 10 s windows).
echo 'VMTOOLS_AGENT_OPTS="--listen 0.0.0.0:3080 --continuous"' >"$STAGE/etc/default/vmtools-agent"
# Packed without the two symlinks the base already has.
rm "$STAGE/lib" "$STAGE/lib64"
pack "$STAGE" "$STAGE.top"
cat "$BASE" ${EXTRA:+"$EXTRA"} "$STAGE.top" >"$OUTPUT.tmp"
rm -f "$STAGE.top"
mv "$OUTPUT.tmp" "$OUTPUT"
echo "$OUTPUT"
