#!/usr/bin/env bash
# tests/lib/vm/initramfs.sh - builds the guest userland of the VM test and
# `make demo`: an initramfs (cpio newc, gzip) that is all the guest has
# besides the tools disk.
#
# usage: initramfs.sh KERNEL_ROOT KERNEL_RELEASE AGENT OUTPUT [EXTRA_LIST]
#        (AGENT "none": a guest without the agent, whose inittab leaves
#        out its two lines; for an architecture it does not build for yet)
#
# Where the guest's programs come from: this machine's (an amd64 guest),
# or with VM_GUEST_ROOT=DIR a Debian root of the guest's architecture
# unpacked there (tests/lib/vm/debian-root.sh --extract: busybox-static,
# kmod, postgresql-15 and the agent's libraries), whose own loader, run by
# qemu-user when this machine cannot run it, says which libraries each
# program loads as ldd does here.  With VM_PG17=DIR, the install tree of
# a PostgreSQL 17 build (bin/, lib/, share/: tests/pg-versions' npm
# build) goes to /usr/lib/postgresql/17 beside Debian's 15, and the guest
# runs both (/etc/vmtest/postgres names the major versions it starts).
#
# Two archives (three with EXTRA_LIST), concatenated into OUTPUT (the kernel
# unpacks one after the other, see
# Documentation/driver-api/early-userspace/buffer-format.rst):
#   base   busybox (busybox-static), kmod, PostgreSQL 15's server binaries
#          (and 17's, with VM_PG17) with their share/ files and every
#          shared library they load, the
#          virtio modules of KERNEL_ROOT the guest needs to see its disk and
#          network (loaded by /init with insmod, in dependency order), users.
#          It is big and changes rarely, so it is cached in $VMTOOLS_CACHE/vm
#          under a hash of its inputs (path, size, mtime) and of this script,
#          one per architecture.
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
#          other steps (tests/lib/vm/after-setup, tests/lib/vm/load,
#          tests/lib/vm/sigterm-check when the host asks for it), and
#          /etc/default/vmtools-agent with the agent's options: rebuilt on
#          every run, it takes a second.
# The guest gets no perf and none of perf's libraries: perf must come from
# the tools image.  Libraries are found with the loader of the trusted
# Debian binaries they come with.
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
# The guest's files are R/PATH: this machine's (R empty), or a root's.
R=${VM_GUEST_ROOT:-}
R=${R%/}
PG17=${VM_PG17:-}
[ "$AGENT" = none ] && AGENT=

die() { echo "initramfs.sh: $*" >&2; exit 1; }
[ -z "$R" ] || [ -d "$R/usr" ] || die "VM_GUEST_ROOT=$R is not a root file system (tests/lib/vm/debian-root.sh --extract makes one)"
[ -z "$PG17" ] || [ -x "$PG17/bin/postgres" ] || die "VM_PG17=$PG17 has no bin/postgres (ci/install-deps.sh installs tests/pg-versions' builds)"

# src PATH: the file the guest's PATH is, symlinks followed inside R (an
# absolute link of the root names a file of the root, not of this machine).
src() {
	local p=$1 t n=0
	while [ -L "$R$p" ] && [ $n -lt 40 ]; do
		t=$(readlink "$R$p")
		case $t in /*) p=$t ;; *) p=$(dirname "$p")/$t ;; esac
		n=$((n + 1))
	done
	echo "$R$p"
}
# first PATH...: the first of the guest's PATHs that exists (a root
# unpacked without merged /usr has /bin/kmod, this machine /usr/bin/kmod).
first() {
	local p
	for p; do
		[ -e "$(src "$p")" ] && { echo "$p"; return; }
	done
	echo "$1"
}
KMOD=$(first /usr/bin/kmod /bin/kmod)
for f in /bin/busybox "$KMOD" "$PG/bin/postgres"; do
	[ -e "$(src "$f")" ] || die "$R$f is missing (busybox-static, kmod and postgresql-15 come from ci/install-deps.sh${R:+, or tests/lib/vm/debian-root.sh --extract for $R})"
done
for f in ${AGENT:+"$AGENT"} "$MODDIR/modules.order"; do
	[ -e "$f" ] || die "$f is missing (the kernel comes from tests/lib/fetch-kernel.sh)"
done
# A static busybox matters: it runs before any library is in place.
grep -q 'statically linked' <<<"$(file -L "$(src /bin/busybox)")" || die "$R/bin/busybox is not static; install busybox-static"

# The guest's machine, from its PostgreSQL (busybox is static): its loader
# says what each program loads, run by qemu-user where this machine cannot.
MACHINE=$(readelf -h "$(src "$PG/bin/postgres")" | awk '/Machine:/ { $1 = ""; print }')
case $MACHINE in
*X86-64*) MACHINE=x86_64 ;;
*AArch64*) MACHINE=aarch64 ;;
*) die "$R$PG/bin/postgres is built for $MACHINE, not x86-64 or AArch64" ;;
esac
TRIPLET=$MACHINE-linux-gnu
RUN_GUEST=()
if [ -n "$R" ]; then
	INTERP=$(readelf -l "$(src "$PG/bin/postgres")" | sed -n 's/.*program interpreter: \(.*\)\]$/\1/p')
	[ -e "$(src "$INTERP")" ] || die "$R has no loader $INTERP"
	if [ "$MACHINE" != "$(uname -m)" ]; then
		command -v "qemu-$MACHINE" >/dev/null || die "qemu-$MACHINE (package qemu-user) is needed to ask $R's loader"
		RUN_GUEST=("qemu-$MACHINE" -L "$R")
	fi
fi

# host_libs FILE...: the shared libraries FILE (a file of this machine:
# in R, VM_PG17's tree, the agent) needs, as the guest's loader resolves
# them: guest paths.  What VM_PG17's binaries find in their own tree
# (RUNPATH $ORIGIN/../lib) comes with the tree and is left out, and so
# is the name the root's loader gives itself as a file of R.
host_libs() {
	local out f
	for f; do
		if [ -z "$R" ]; then
			out=$(ldd "$f" 2>&1) || { case $out in *'not a dynamic executable'*) continue ;; esac; die "ldd $f: $out"; }
		else
			out=$("${RUN_GUEST[@]}" "$(src "$INTERP")" --list "$f" 2>&1) ||
				{ case $out in *'not a dynamic'*) continue ;; esac; die "$R's loader on $f: $out"; }
		fi
		if grep -q 'not found' <<<"$out"; then die "$f needs a library that is not installed${R:+ in $R}: $(grep 'not found' <<<"$out")"; fi
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$out"
	done | { grep -v ${PG17:+-e "^$PG17/"} ${R:+-e "^$R/"} -e '^$' || true; } | sort -u
}
# libs PATH...: the same for the guest's PATHs.
libs() {
	local f files=()
	for f; do
		files+=("$(src "$f")")
	done
	host_libs "${files[@]}"
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

# copy PATH... into the stage at the same path (following symlinks: the
# guest gets the file under the name the loader asks for).
copy() {
	local f
	for f; do
		mkdir -p "$STAGE$(dirname "$f")"
		cp -L --preserve=mode "$(src "$f")" "$STAGE$f"
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
# PostgreSQL 17's tree: its programs and shared objects, not what builds
# against it (headers, static libraries, pkg-config).
PG17_FILES=()
if [ -n "$PG17" ]; then
	mapfile -t PG17_FILES < <(cd "$PG17" && find bin lib share \( -name include -o -name pkgconfig \) -prune -o \
		! -type d ! -name '*.a' -print | LC_ALL=C sort)
fi
PG17_ELF=()
for f in "${PG17_FILES[@]}"; do
	case $f in bin/* | lib/postgresql/plpgsql.so | lib/postgresql/dict_snowball.so) PG17_ELF+=("$PG17/$f") ;; esac
done
mapfile -t MODULES < <(modules_in_order "${BOOT_MODULES[@]}")
mapfile -t BASE_LIBS < <( { libs "$KMOD" "${PG_BINS[@]}" "${PG_LIBS[@]}"; host_libs "${PG17_ELF[@]}"; } | sort -u)
BASE_INPUTS=()
for f in /bin/busybox "$KMOD" "${PG_BINS[@]}" "${PG_LIBS[@]}" "${BASE_LIBS[@]}"; do
	BASE_INPUTS+=("$(src "$f")")
done
BASE_INPUTS+=("${MODULES[@]}")
key=$( {
	sha256sum <"$0"
	echo "$R $PG17"
	stat -L -c '%n %s %Y' "${BASE_INPUTS[@]}"
	find "$(src "$PGSHARE")/" "$(src /usr/share/zoneinfo/UTC)" -printf '%p %s %T@\n' | LC_ALL=C sort
	[ -z "$PG17" ] || (cd "$PG17" && stat -L -c '%n %s %Y' "${PG17_FILES[@]}")
} | sha256sum | cut -c1-16)
BASE=$CACHE/initramfs-base-$MACHINE-$key.cpio.gz

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

	cp "$(src /bin/busybox)" "$STAGE/usr/bin/busybox"
	for a in $("${RUN_GUEST[@]}" "$(src /bin/busybox)" --list); do
		case $a in
		busybox | init | linuxrc | depmod | insmod | lsmod | modinfo | modprobe | rmmod) continue ;;
		esac
		ln -s busybox "$STAGE/usr/bin/$a"
	done
	# kmod, as a real guest has: modprobe reads the modules.dep of the image.
	mkdir -p "$STAGE/usr/bin"
	cp "$(src "$KMOD")" "$STAGE/usr/bin/kmod"
	for a in depmod insmod lsmod modinfo modprobe rmmod; do
		ln -s ../bin/kmod "$STAGE/usr/sbin/$a"
	done

	copy "${PG_BINS[@]}" "${PG_LIBS[@]}" "${BASE_LIBS[@]}"
	mkdir -p "$STAGE$PGSHARE"
	(cd "$(src "$PGSHARE")" && find . -path ./extension -prune -o -path ./contrib -prune -o -path ./man -prune -o -print |
		cpio --quiet -pdm "$STAGE$PGSHARE")
	mkdir -p "$STAGE$PGSHARE/extension"
	cp "$(src "$PGSHARE")"/extension/plpgsql* "$STAGE$PGSHARE/extension/"
	copy /usr/share/zoneinfo/UTC
	mkdir -p "$STAGE/etc/vmtest"
	echo 15 >"$STAGE/etc/vmtest/postgres"
	if [ -n "$PG17" ]; then
		(cd "$PG17" && printf '%s\n' "${PG17_FILES[@]}" | cpio --quiet -pdmL "$STAGE/usr/lib/postgresql/17")
		echo 17 >>"$STAGE/etc/vmtest/postgres"
	fi
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
	find "$CACHE" -maxdepth 1 -name "initramfs-base-$MACHINE-*.cpio.gz" ! -name "$(basename "$BASE")" -delete
	rm -rf "$STAGE"
	trap - EXIT
fi

# --- extra: what EXTRA_LIST names, with its libraries ---------------------
EXTRA=""
if [ -n "$EXTRA_LIST" ]; then
	mapfile -t EXTRA_PATHS < <(grep -v '^$' "$EXTRA_LIST")
	[ ${#EXTRA_PATHS[@]} -gt 0 ] || die "$EXTRA_LIST names no path"
	# Paths of the guest: in R when there is one.
	for f in "${EXTRA_PATHS[@]}"; do
		[ -e "$(src "$f")" ] || die "$R$f (named in $EXTRA_LIST) is missing; ci/install-deps.sh installs what the benchmarks need"
	done
	# Regular files, and symlinks to them (a dangling one is left out).
	mapfile -t EXTRA_FILES < <(find "${EXTRA_PATHS[@]/#/$R}" -xtype f | sed "s|^$R||" | LC_ALL=C sort -u)
	# Executables and shared objects (the loader passes over a script).
	mapfile -t EXTRA_ELF < <(find "${EXTRA_PATHS[@]/#/$R}" -xtype f \( -name '*.so*' -o -perm -u+x \) | sed "s|^$R||")
	mapfile -t EXTRA_LIBS < <(libs "${EXTRA_ELF[@]}")
	key=$( {
		sha256sum <"$0"
		echo "$R"
		for f in "${EXTRA_FILES[@]}" "${EXTRA_LIBS[@]}"; do src "$f"; done | xargs stat -L -c '%n %s %Y'
	} | sha256sum | cut -c1-16)
	EXTRA=$CACHE/initramfs-extra-$MACHINE-$key.cpio.gz
	if [ ! -e "$EXTRA" ]; then
		echo "initramfs.sh: building the extra userland of $EXTRA_LIST ($EXTRA)" >&2
		STAGE=$(mktemp -d "$CACHE/stage.XXXXXX")
		trap 'rm -rf "$STAGE"' EXIT
		mapfile -t f < <(printf '%s\n' "${EXTRA_FILES[@]}" "${EXTRA_LIBS[@]}" | LC_ALL=C sort -u)
		copy "${f[@]}"
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
		find "$CACHE" -maxdepth 1 -name "initramfs-extra-$MACHINE-*.cpio.gz" ! -name "$(basename "$EXTRA")" -delete
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
# dl_lib NAME: the guest's path of the library NAME.so.N (this machine's
# loader cache, or the root's library folders).
dl_lib() {
	if [ -z "$R" ]; then
		# awk reads to the end: leaving early would kill ldconfig with
		# SIGPIPE, which pipefail turns into a silent exit of this script.
		ldconfig -p | awk -v n="$1" '!found && $1 ~ "^" n "\\.so\\.[0-9]+$" && $NF ~ /^\// { print $NF; found = 1 }'
	else
		find "$R/usr/lib/$TRIPLET" "$R/lib/$TRIPLET" -maxdepth 1 -regex ".*/$1\\.so\\.[0-9]+" 2>/dev/null |
			sed "s|^$R||" | LC_ALL=C sort | head -n 1
	fi
}
if [ -n "$AGENT" ]; then
	cp "$AGENT" "$STAGE/usr/sbin/vmtools-agent"
	# The agent opens libmicrohttpd and libcrypto with dlopen (common/dl.h,
	# DL_PKGS in the Makefile), which ldd does not see: they and what they
	# need are added by name.
	DL_LIBS=()
	for name in libmicrohttpd libcrypto; do
		lib=$(dl_lib "$name")
		[ -n "$lib" ] || die "$name is not installed${R:+ in $R} (ci/install-deps.sh installs it)"
		DL_LIBS+=("$lib")
	done
	mapfile -t AGENT_LIBS < <( { host_libs "$AGENT"; libs "${DL_LIBS[@]}"; } | sort -u)
	copy "${AGENT_LIBS[@]}" "${DL_LIBS[@]}"
fi
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
install -m 755 "$HERE/after-setup" "$HERE/load" "$HERE/sigterm-check" "$STAGE/usr/lib/vmtest/"
{
	echo "# /etc/inittab of the VM test's guest (tests/lib/vm/initramfs.sh)."
	if [ -n "$AGENT" ]; then
		echo "# The vmtools-agent lines are docs/guest-setup.md's, as written there."
		echo "${DOC_LINES[0]}"
	else
		echo "# No agent for this guest's architecture: its two lines are left out."
	fi
	echo "::sysinit:/usr/lib/vmtest/after-setup"
	[ -z "$AGENT" ] || echo "${DOC_LINES[1]}"
	echo "::respawn:/usr/lib/vmtest/load"
	[ -z "$AGENT" ] || echo "::once:/usr/lib/vmtest/sigterm-check"
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
