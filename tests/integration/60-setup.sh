#!/usr/bin/env bash
# tests/integration/60-setup.sh - `vmtools-agent setup` and `setup --undo`
# with a tools image built by `vmtools-image build` from Debian 12's cloud
# kernel, attached read-only through a loop device.
#
# The running kernel here is not the image's, so setup runs with
# --allow-kernel-mismatch and links /lib/modules/$(uname -r) to the image's
# modules too.  To leave the host unchanged, everything after the image
# build runs in a private mount namespace (unshare -m) where /usr (and so
# /lib -> usr/lib) is an overlay whose upper layer is in $T: setup writes the
# real paths (/lib/modules/REL, /usr/src/linux-headers-*) that modprobe and
# bcc look at, yet nothing reaches the host's disk, and the namespace's
# mounts vanish with it.  The mountpoint and bindir are temporary.
#
# Checked: setup twice (the second changes nothing), every link, the mount
# options, modprobe -n -v resolving modules from the image, perf --version
# from the linked bindir, bcc's profile-bpfcc compiling against the linked
# headers and printing stacks of a busy process, --undo restoring the guest
# exactly; refusals that change nothing: no disk with the label (exit 2),
# two disks with the label (both named), a real directory in the way, an
# image for another kernel, and a corrupted image under --verify (the file
# named); two setups at once (serialized, both succeed); a mountpoint under
# a symlinked directory (the second run sees it mounted, undo unmounts); a
# hostile disk whose manifest link would be made through the disk's own
# symlink (refused, nothing written outside); --verify of a disk listing a
# file behind its symlink x -> /proc, a FIFO or a device, and a disk
# whose manifest is behind a symlink out of it or is a FIFO (each refused
# promptly, named).
# The directories removed by hand are only those setup's state file says
# it made, so an empty /lib/modules that was there before stays.
. "$(dirname "$0")/../lib/tap.sh"

# --- inside the private mount namespace -------------------------------------
if [ "${1:-}" = inside ]; then
	W=$2 IMG=$3 LABEL=$4 REL=$5
	A=$VMTOOLS_AGENT
	RUN=$(uname -r)
	# The mountpoint's parent does not exist either (as /run in a bare
	# initramfs): setup creates both, undo removes both.
	MNT=$W/run/vm-tools BIN=$W/bin
	OPTS=(--label "$LABEL" --mountpoint "$MNT" --bindir "$BIN" --allow-kernel-mismatch)

	mkdir -p "$W/upper" "$W/work"
	if ! mount -t overlay overlay -o "lowerdir=/usr,upperdir=$W/upper,workdir=$W/work" /usr; then
		not_ok "cannot put an overlay on /usr in the private namespace"
		exit 1
	fi

	# The guest's state as setup could change it: names, types, link
	# targets of the places it links into, and the mount table there.
	snapshot() {
		local p
		for p in /lib/modules /usr/src "$BIN" "$W/run" "$MNT" "$MNT.setup.json"; do
			if [ -e "$p" ] || [ -L "$p" ]; then
				find "$p" -maxdepth 1 -printf '%p %y %l %m\n' | sort
			else
				echo "$p absent"
			fi
		done
		# Of /usr/lib only what setup could make: the rest is the host's
		# (seen through the overlay) and may change under us.
		find /usr/lib -maxdepth 1 \( -name 'linux-*' -o -name modules -o -name 'vmtools*' \) \
			-printf '%p %y %l %m\n' | sort
		awk -v m="$MNT" '$5 == m' /proc/self/mountinfo
	}

	attach() { # attach IMAGE: sets DEV to a read-only loop device, detached at exit
		DEV=$(losetup -r -f --show "$1") || return 1
		at_exit "losetup -d $DEV"
	}

	attach "$IMG" || { not_ok "losetup of the image failed"; exit 1; }
	LOOP=$DEV
	snapshot >"$W/before"

	# bcc needs the headers: without setup it cannot compile here.
	if [ -e "/lib/modules/$RUN/build" ]; then
		skip "profile-bpfcc fails before setup" "this machine has /lib/modules/$RUN/build"
	else
		check_fails "profile-bpfcc fails before setup (no kernel headers)" \
			timeout 120 profile-bpfcc -F 49 1
	fi

	# -- first run: mounts and links
	"$A" setup "${OPTS[@]}" --verify >"$W/setup1.out" 2>&1
	check_said $? 0 "$W/setup1.out" "setup finds $LOOP by its label, verifies and mounts it" \
		"^mounted $LOOP at $MNT (ro,nodev,nosuid)" '^verified [0-9]* files against the manifest' ||
		exit 1
	opts=$(awk -v m="$MNT" '$5 == m { print $6 }' /proc/self/mountinfo)
	check "mounted read-only, nodev, nosuid ($opts)" \
		bash -c "[[ ,$opts, == *,ro,* && ,$opts, == *,nodev,* && ,$opts, == *,nosuid,* ]]"

	# Every link the manifest lists, each tool, and the running release.
	python3 - "$MNT/.vmtools/manifest.json" >"$W/expected-links" <<-'EOF'
		import json, sys
		m = json.load(open(sys.argv[1]))
		for l in m["links"]:
		    print(l["path"], l["target"])
		for t in m["tools"]:
		    print("BIN/" + t["name"], t["path"])
	EOF
	echo "/lib/modules/$RUN /lib/modules/$REL" >>"$W/expected-links"
	links_ok() { # every expected link points into the image and resolves
		local path target bad=0
		n=0
		while read -r path target; do
			path=${path/#BIN/$BIN}
			n=$((n + 1))
			if [ "$(readlink "$path")" != "$MNT$target" ] || [ ! -e "$path" ]; then
				echo "# $path -> $(readlink "$path"), expected $MNT$target"
				bad=1
			fi
		done <"$W/expected-links"
		return $bad
	}
	links_ok
	check "all $n links point into the image and resolve" test $? = 0
	check "the manifest links the kernel's modules and headers" \
		grep -q "^/lib/modules/$REL /lib/modules/$REL$" "$W/expected-links"
	check "bcc finds build/include/generated/autoconf.h" \
		test -f "/lib/modules/$RUN/build/include/generated/autoconf.h"
	check "bcc finds source/include/linux/kconfig.h" \
		test -f "/lib/modules/$RUN/source/include/linux/kconfig.h"

	# -- second run: nothing changes
	snapshot >"$W/after1"
	"$A" setup "${OPTS[@]}" >"$W/setup2.out" 2>&1
	st=$?
	snapshot >"$W/after2"
	if [ "$st" = 0 ] && grep -q '^nothing to change' "$W/setup2.out" &&
		! grep -q '^linked\|^mounted' "$W/setup2.out" && diff -u "$W/after1" "$W/after2" >"$W/diff"; then
		ok "a second setup succeeds and changes nothing"
	else
		not_ok "second setup (exit $st) changed something"
		diag "$W/setup2.out"
		diag "$W/diff"
	fi

	# -- the tools work
	mod=dummy
	modprobe -n -v "$mod" >"$W/modprobe.out" 2>&1
	check "modprobe -n -v $mod resolves from the image (as $RUN)" \
		grep -q "^insmod /lib/modules/$RUN/kernel/drivers/net/$mod.ko" "$W/modprobe.out"
	modprobe -S "$REL" -n -v vxlan >"$W/modprobe2.out" 2>&1
	check "modprobe -S $REL -n -v vxlan resolves vxlan and its dependencies" \
		bash -c "grep -q '^insmod /lib/modules/$REL/kernel/.*/vxlan.ko' '$W/modprobe2.out' &&
			grep -q '^insmod /lib/modules/$REL/kernel/.*/udp_tunnel.ko' '$W/modprobe2.out'"
	env -i PATH="$BIN" perf --version >"$W/perf.out" 2>&1
	check_said $? 0 "$W/perf.out" "perf --version from the linked bindir alone: $(cat "$W/perf.out")" \
		'^perf version 6\.1\.'
	check "perf on PATH is the image's" \
		bash -c "[[ \$(readlink -f '$BIN/perf') == '$MNT'/* ]]"

	# bcc: compiles against the linked 6.1 headers and samples a busy loop.
	sh -c 'while :; do :; done' &
	busy=$!
	at_exit "kill $busy"
	timeout 180 profile-bpfcc -F 49 2 >"$W/bcc.out" 2>&1
	st=$?
	kill "$busy" 2>/dev/null
	if [ "$st" = 0 ] && grep -Eq "^ +- +sh \($busy\)" "$W/bcc.out"; then
		ok "profile-bpfcc compiles against the linked headers and prints stacks ($(grep -c '^ *- ' "$W/bcc.out") stacks)"
	else
		not_ok "profile-bpfcc (exit $st) printed no stack of the busy process $busy"
		diag "$W/bcc.out"
	fi

	# -- undo: back as it was
	"$A" setup --undo --mountpoint "$MNT" >"$W/undo.out" 2>&1
	st=$?
	snapshot >"$W/after-undo"
	if [ "$st" = 0 ] && diff -u "$W/before" "$W/after-undo" >"$W/diff"; then
		ok "setup --undo removes the links, directories and mount: the guest is as before"
	else
		not_ok "setup --undo (exit $st) left the guest changed"
		diag "$W/undo.out"
		diag "$W/diff"
	fi
	"$A" setup --undo --mountpoint "$MNT" >"$W/undo2.out" 2>&1
	check "a second --undo has nothing to do and succeeds" \
		bash -c "[ $? = 0 ] && grep -q 'nothing to undo' '$W/undo2.out'"

	# -- refusals; each must leave the guest exactly as it was
	unchanged() { # unchanged DESC: compare with the first snapshot
		snapshot >"$W/now"
		check "$1: nothing changed" diff -u "$W/before" "$W/now"
	}

	# -- two runs at once (a boot script and a manual one): one waits for
	# the other, both succeed, every link is in place and the state says
	# mounted; undo then restores the guest.  Three rounds.
	for round in 1 2 3; do
		"$A" setup "${OPTS[@]}" >"$W/race1.out" 2>&1 &
		p1=$!
		"$A" setup "${OPTS[@]}" >"$W/race2.out" 2>&1 &
		p2=$!
		wait $p1
		s1=$?
		wait $p2
		s2=$?
		if [ "$s1" = 0 ] && [ "$s2" = 0 ] && links_ok >"$W/race.links" &&
			python3 -c 'import json, sys; sys.exit(not json.load(open(sys.argv[1]))["mounted"])' "$MNT.setup.json"; then
			ok "two setups at once, round $round: both succeed, all links there, the state says mounted"
		else
			not_ok "two setups at once, round $round (exits $s1 and $s2)"
			diag "$W/race1.out"
			diag "$W/race2.out"
			diag "$W/race.links"
		fi
		"$A" setup --undo --mountpoint "$MNT" >"$W/race-undo.out" 2>&1
		unchanged "two setups at once, round $round, after --undo"
	done

	# -- a mountpoint reached through a symlinked directory (Debian's
	# /var/run -> /run): the second run sees the disk mounted, --undo
	# unmounts it.
	mkdir "$W/realrun"
	ln -s realrun "$W/varrun"
	SOPTS=(--label "$LABEL" --mountpoint "$W/varrun/vm-tools" --bindir "$BIN" --allow-kernel-mismatch)
	"$A" setup "${SOPTS[@]}" >"$W/sym1.out" 2>&1
	check_said $? 0 "$W/sym1.out" "setup with --mountpoint under a symlinked directory" \
		"^mounted $LOOP at $W/realrun/vm-tools"
	"$A" setup "${SOPTS[@]}" >"$W/sym2.out" 2>&1
	check_said $? 0 "$W/sym2.out" "a second setup there sees the disk mounted (no EBUSY)" \
		"is already mounted at $W/realrun/vm-tools" '^nothing to change'
	"$A" setup --undo --mountpoint "$W/varrun/vm-tools" >"$W/sym-undo.out" 2>&1
	st=$?
	if [ "$st" = 0 ] && ! grep -q " $W/realrun/vm-tools " /proc/self/mountinfo && [ ! -e "$W/realrun/vm-tools" ]; then
		ok "--undo through the symlinked directory unmounts and removes the mountpoint"
	else
		not_ok "--undo through the symlinked directory (exit $st) left the disk mounted"
		diag "$W/sym-undo.out"
		umount "$W/realrun/vm-tools" 2>/dev/null
	fi
	rm "$W/varrun"
	rmdir "$W/realrun"
	unchanged "a symlinked mountpoint directory, after --undo"

	# -- a hostile disk: its tree has lib/modules/evil/cfg -> a directory
	# outside (standing in for /etc) and its manifest asks for the link
	# /lib/modules/RUN-evil (-> that tree) and then /lib/modules/RUN-evil/cfg/x,
	# which would be made through the first.  Refused; nothing written
	# outside; the guest as before.
	mkdir -p "$W/evil/.vmtools" "$W/evil/lib/modules/evil" "$W/outside"
	ln -s "$W/outside" "$W/evil/lib/modules/evil/cfg"
	printf '{"format_version": 1, "kernel_release": "%s", "arch": "%s", "build_time": 0, "label": "x", "generator": "test", "tools": [], "links": [{"path": "/lib/modules/%s-evil", "target": "/lib/modules/evil"}, {"path": "/lib/modules/%s-evil/cfg/x", "target": "/lib/modules/evil"}], "files": {}}\n' \
		"$RUN" "$(uname -m)" "$RUN" "$RUN" >"$W/evil/.vmtools/manifest.json"
	mke2fs -q -t ext4 -L "${LABEL}e" -d "$W/evil" "$W/evil.img" 4M >/dev/null 2>&1
	attach "$W/evil.img"
	"$A" setup "${OPTS[@]/#$LABEL/${LABEL}e}" >"$W/evil.out" 2>&1
	check_said $? 1 "$W/evil.out" "a manifest link through the disk's own symlink: refused, named" \
		"/lib/modules/$RUN-evil is a link into the tools disk"
	check "nothing was written outside through the disk's symlink" \
		test -z "$(ls -A "$W/outside")"
	unchanged "a symlink escape refused"
	losetup -d "$DEV"

	# -- --verify on hostile disks: a listed file reached through the
	# disk's directory x -> /proc (/x/kmsg would be /proc/kmsg, a regular
	# file whose read blocks), a listed file that is a FIFO (whose open
	# blocks) and one that is a device node.  Each is refused at once,
	# named, under a timeout that only a hang reaches; the guest as
	# before.
	verify_refused() { # verify_refused SUFFIX FILE REASON: $W/SUFFIX's image lists FILE
		local out=$W/$1.out
		printf '{"format_version": 1, "kernel_release": "%s", "arch": "%s", "build_time": 0, "label": "x", "generator": "test", "tools": [], "links": [], "files": {"%s": "%s"}}\n' \
			"$RUN" "$(uname -m)" "$2" "$(sha256sum </dev/null | cut -d' ' -f1)" >"$W/$1/.vmtools/manifest.json"
		if ! mke2fs -q -t ext4 -L "${LABEL}$1" -d "$W/$1" "$W/$1.img" 4M >/dev/null 2>&1 ||
			! attach "$W/$1.img"; then
			not_ok "cannot make and attach an image listing $2"
			return
		fi
		timeout 60 "$A" setup "${OPTS[@]/#$LABEL/${LABEL}$1}" --verify >"$out" 2>&1
		check_said $? 1 "$out" "--verify, $2 $3: refused at once, named" \
			"the tools disk is damaged: $2 $3; rebuild the image or attach a good copy"
		unchanged "--verify refusing $2"
		losetup -d "$DEV"
	}
	mkdir -p "$W/s/.vmtools" "$W/f/.vmtools" "$W/f/d" "$W/c/.vmtools" "$W/c/d"
	ln -s /proc "$W/s/x"
	mkfifo "$W/f/d/fifo"
	mknod "$W/c/d/null" c 1 3
	verify_refused s /x/kmsg "leads out of the disk through a symlink"
	verify_refused f /d/fifo "is not a regular file"
	verify_refused c /d/null "is not a regular file"

	# -- the manifest itself, read on every setup, on hostile disks: its
	# directory .vmtools a symlink out of the disk (to a directory holding
	# a valid manifest: following it would go on), and a manifest that is
	# a FIFO.  Refused at once, named, under a timeout; the guest as before.
	manifest_refused() { # manifest_refused SUFFIX REASON
		local out=$W/$1.out
		if ! mke2fs -q -t ext4 -L "${LABEL}$1" -d "$W/$1" "$W/$1.img" 4M >/dev/null 2>&1 ||
			! attach "$W/$1.img"; then
			not_ok "cannot make and attach the image $1"
			return
		fi
		timeout 60 "$A" setup "${OPTS[@]/#$LABEL/${LABEL}$1}" >"$out" 2>&1
		check_said $? 1 "$out" "a manifest that $2: refused at once, named" \
			"the tools disk's manifest /.vmtools/manifest.json $2; rebuild the image or attach a good copy"
		unchanged "a manifest that $2"
		losetup -d "$DEV"
	}
	mkdir -p "$W/ms" "$W/mf/.vmtools" "$W/elsewhere"
	printf '{"format_version": 1, "kernel_release": "%s", "arch": "%s", "build_time": 0, "label": "x", "generator": "test", "tools": [], "links": [], "files": {}}\n' \
		"$RUN" "$(uname -m)" >"$W/elsewhere/manifest.json"
	ln -s "$W/elsewhere" "$W/ms/.vmtools"
	mkfifo "$W/mf/.vmtools/manifest.json"
	manifest_refused ms "leads out of the disk through a symlink"
	manifest_refused mf "is not a regular file"

	"$A" setup "${OPTS[@]/$LABEL/vmt-none-$$}" >"$W/nodisk.out" 2>&1
	check_said $? 2 "$W/nodisk.out" "no disk with the label: exit 2, a clear error" \
		"no disk with the ext4 label 'vmt-none-$$'"
	unchanged "no disk"

	attach "$IMG"
	LOOP2=$DEV
	"$A" setup "${OPTS[@]}" >"$W/two.out" 2>&1
	check_said $? 1 "$W/two.out" "two disks with the label: refused, both named" \
		"2 disks carry the label '$LABEL'" "$LOOP" "$LOOP2"
	unchanged "two disks"
	losetup -d "$LOOP2"

	hdr=$(awk '$1 ~ /^\/usr\/src\/linux-headers-.*-common$/ { print $1 }' "$W/expected-links")
	mkdir "$hdr"
	snapshot >"$W/before"
	"$A" setup "${OPTS[@]}" >"$W/block.out" 2>&1
	check_said $? 1 "$W/block.out" "a real directory in the way: refused, named" \
		"refusing .*$hdr is a real directory"
	unchanged "a real directory in the way"
	rmdir "$hdr"
	snapshot >"$W/before"

	OTHER=(--label "$LABEL" --mountpoint "$MNT" --bindir "$BIN")
	"$A" setup "${OTHER[@]}" >"$W/mismatch.out" 2>&1
	check_said $? 1 "$W/mismatch.out" \
		"an image for another kernel without --allow-kernel-mismatch: refused, both releases named" \
		"built for kernel $REL, but this kernel is $RUN"
	unchanged "kernel mismatch"

	# --device skips the label search (even with two disks labelled).
	attach "$IMG"
	LOOP2=$DEV
	"$A" setup "${OPTS[@]}" --device "$LOOP2" >"$W/device.out" 2>&1
	check_said $? 0 "$W/device.out" "--device $LOOP2 is used even with two disks labelled" \
		"^mounted $LOOP2 at $MNT"
	"$A" setup --undo --mountpoint "$MNT" >/dev/null 2>&1
	unchanged "--device, after --undo"
	losetup -d "$LOOP2"
	"$A" setup "${OPTS[@]}" --device "$IMG" >"$W/device.out" 2>&1
	check_said $? 1 "$W/device.out" "--device naming an image file: refused, says to attach it" \
		'is not a block device; attach an image file with losetup'

	# An image for another architecture is refused even with
	# --allow-kernel-mismatch.  (A tiny image with just a manifest.)
	mkdir -p "$W/arch/.vmtools"
	printf '{"format_version": 1, "kernel_release": "%s", "arch": "not-%s", "build_time": 0, "label": "x", "generator": "test", "tools": [], "links": [], "files": {}}\n' \
		"$RUN" "$(uname -m)" >"$W/arch/.vmtools/manifest.json"
	mke2fs -q -t ext4 -L "${LABEL}a" -d "$W/arch" "$W/arch.img" 4M >/dev/null 2>&1
	attach "$W/arch.img"
	"$A" setup "${OPTS[@]/#$LABEL/${LABEL}a}" >"$W/arch.out" 2>&1
	check_said $? 1 "$W/arch.out" "an image for another architecture: refused" \
		"was built for not-$(uname -m), but this machine is $(uname -m)"
	unchanged "another architecture"
	losetup -d "$DEV"

	# A failure half-way (the bindir cannot be created: read-only) after
	# the mount and the first links: all of it is rolled back.
	mkdir -p "$W/ro"
	mount --bind "$W/ro" "$W/ro" && mount -o remount,bind,ro "$W/ro"
	"$A" setup "${OPTS[@]/#$BIN/$W/ro/bin}" >"$W/half.out" 2>&1
	check_said $? 1 "$W/half.out" "a failure after mounting and linking (read-only bindir): exit 1, named" \
		"cannot create the directory $W/ro/bin" 'nothing was changed'
	unchanged "a failure half-way, rolled back"
	umount "$W/ro"

	# Without its state file, --undo still removes the links into the
	# mount and unmounts (the directories it cannot know it made stay).
	"$A" setup "${OPTS[@]}" >"$W/setup3.out" 2>&1
	cp "$MNT.setup.json" "$W/state3.json"
	rm -f "$MNT.setup.json"
	"$A" setup --undo --mountpoint "$MNT" --bindir "$BIN" >"$W/undo3.out" 2>&1
	st=$?
	left=$(find /lib/modules /usr/src /usr/lib "$BIN" -maxdepth 1 -lname "$MNT/*" 2>/dev/null)
	if [ "$st" = 0 ] && [ -z "$left" ] && ! awk -v m="$MNT" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo; then
		ok "--undo without the state file removes every link into the mount and unmounts"
	else
		not_ok "--undo without the state file (exit $st) left: $left"
		diag "$W/undo3.out"
	fi
	# Remove the directories that run made (its state file says which),
	# and no other: an empty /lib/modules that was here before stays.
	python3 - "$W/state3.json" >"$W/made-dirs" <<-'EOF'
		import json, sys
		s = json.load(open(sys.argv[1]))
		if s.get("created_mountpoint"):
		    print(s["mountpoint"])
		for d in reversed(s["directories"]):
		    print(d)
	EOF
	while read -r d; do rmdir "$d"; done <"$W/made-dirs"
	unchanged "--undo without the state file, after removing the directories"

	# Corrupt one byte of a module inside the image file.
	losetup -d "$LOOP"
	victim=/lib/modules/$REL/kernel/drivers/net/dummy.ko
	bs=$(dumpe2fs -h "$IMG" 2>/dev/null | awk -F: '/^Block size/ { print $2 + 0 }')
	blk=$(debugfs -R "blocks $victim" "$IMG" 2>/dev/null | awk '{ print $1 }')
	if [ -z "$bs" ] || [ -z "$blk" ]; then
		not_ok "cannot find the blocks of $victim in the image"
	else
		printf '\x5a\xa5' | dd of="$IMG" bs=1 seek=$((blk * bs + 200)) conv=notrunc status=none
		attach "$IMG"
		LOOP=$DEV
		"$A" setup "${OPTS[@]}" --verify >"$W/corrupt.out" 2>&1
		check_said $? 1 "$W/corrupt.out" "a corrupted image under --verify: refused, the file named" \
			"damaged: $victim does not match its sha256"
		unchanged "corrupted image"
	fi
	exit 0
fi

# --- outside: build the image, then run the rest in a private namespace --------
for why in "$(need_root)" "$(need_loop)" "$(need_cmd unshare losetup debugfs dumpe2fs modprobe profile-bpfcc python3)"; do
	if [ -n "$why" ]; then
		skip "setup with a loop-attached tools image" "$why"
		exit 0
	fi
done
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null
if ! grep -qw overlay /proc/filesystems; then
	skip "setup with a loop-attached tools image" "no overlayfs to keep the host unchanged"
	exit 0
fi
if ! eval "$(bash "$SRC/tests/lib/fetch-kernel.sh" 2>"$T/fetch.err")"; then
	skip "setup with a loop-attached tools image" "cannot fetch Debian's kernel: $(tail -n 1 "$T/fetch.err")"
	exit 0
fi

# A label of our own, so images attached by other tests are not found.
LABEL=vmt6-$$
LABEL=${LABEL:0:15}
"$VMTOOLS_IMAGE" build --root "$KERNEL_ROOT" --label "$LABEL" --source-date-epoch 1700000000 \
	--output "$T/tools.img" >"$T/build.out" 2>&1
st=$?
if [ "$st" != 0 ] || [ ! -s "$T/tools.img" ]; then
	not_ok "vmtools-image build of $KERNEL_RELEASE failed (exit $st)"
	diag "$T/build.out"
	exit 1
fi
ok "vmtools-image build of Debian's $KERNEL_RELEASE ($(du -h "$T/tools.img" | cut -f1))"
# The build runs check-kernel's check on the staged config and warns.
check "vmtools-image build warns what the staged kernel's config misses" \
	grep -q 'MISSING  CONFIG_IKCONFIG=y \[recommended\]' "$T/build.out"

# The host as seen from outside, to prove nothing leaked.
host_snapshot() {
	local p
	for p in /usr/lib/modules /usr/src /usr/local/bin; do
		[ -e "$p" ] && find "$p" -maxdepth 1 -printf '%p %y %l\n' | sort || echo "$p absent"
	done
	grep -c "$T" /proc/self/mountinfo
}
host_snapshot >"$T/host.before"
unshare -m --propagation private bash "$0" inside "$T" "$T/tools.img" "$LABEL" "$KERNEL_RELEASE"
st=$?
[ "$st" = 0 ] || not_ok "the test inside the mount namespace ended with status $st"
host_snapshot >"$T/host.after"
check "the host outside the namespace is unchanged" diff -u "$T/host.before" "$T/host.after"
check "no loop device of the test is left attached" \
	bash -c "! losetup -j '$T/tools.img' | grep -q ."
