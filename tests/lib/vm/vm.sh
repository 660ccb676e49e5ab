# shellcheck shell=bash
# tests/lib/vm/vm.sh - boots the end-to-end VM: Debian's cloud kernel, the
# tools image built by `vmtools-image build` from the same kernel packages
# (read-only virtio disk), and the initramfs of tests/lib/vm/initramfs.sh
# (busybox, PostgreSQL, the agent), with the guest's port 3080 forwarded to
# a loopback port of the host.  Sourced by tests/vm/*.sh (after tap.sh) and
# by tools/demo.sh.
#
# VM_ARCH (set before sourcing; default amd64) is the guest's architecture:
#   amd64   qemu-system-x86_64 -machine q35; the guest's programs are this
#           machine's (busybox-static, kmod, postgresql-15)
#   arm64   qemu-system-aarch64 -machine virt, emulated on any host;
#           Debian 12's arm64 cloud kernel and its tools image (packed here
#           with the arm64 packages of perf's libraries); the guest's
#           programs from the arm64 packages unpacked by
#           tests/lib/vm/debian-root.sh --extract (busybox-static, kmod,
#           postgresql-15, the agent's libraries), with the npm arm64 build
#           of PostgreSQL 17 (tests/pg-versions, no frame pointers) beside
#           15; the agent is $VMTOOLS_AGENT_ARM64 (default
#           $BUILD/arm64/vmtools-agent, `make ARCH=arm64`), and without
#           one the guest boots without it (VM_AGENT=none)
#
#   vm_missing            what this machine lacks to boot the VM (empty:
#                         nothing); one reason per line
#   vm_prepare DIR        fetch the kernel, build (or reuse) the tools image
#                         and the initramfs; sets KERNEL_*, VM_IMAGE, VM_INITRD.
#                         With VM_INITRAMFS_EXTRA set (a file listing host
#                         paths), the initramfs also has those files and
#                         their libraries (initramfs.sh's EXTRA_LIST)
#   vm_start DIR [daemon] boot; sets VM_PORT, VM_PID, VM_LOG (DIR/serial.log).
#                         Without `daemon` qemu is tied to this shell (it
#                         dies with it) and to $VM_TIME_LIMIT seconds.
#                         With VM_ROOT_DISK set (an image file), that is the
#                         guest's first virtio disk (/dev/vda), before the
#                         tools image; VM_APPEND replaces the kernel's
#                         command line.
#   vm_stop DIR           kill the VM of DIR, if it runs
#   vm_wait_healthz SECS  wait until the agent answers /healthz
#   vm_wait_log PATTERN SECS  wait until the serial log has PATTERN
#   vm_fail_log WHAT      a TAP failure with the serial log's first kernel
#                         lockup or oops report (with its backtraces) and
#                         the log's last 40 lines
#
# qemu uses TCG (software emulation), not KVM: on the machines this was built
# on, /dev/kvm exists but a KVM guest hangs, and a probe that hangs in the
# kernel cannot be reliably killed or timed out from a test.  A machine
# where KVM works can ask for it: VMTOOLS_VM_ACCEL=kvm.

VM_TOOLS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VM_CACHE=$VMTOOLS_CACHE/vm
VM_ARCH=${VM_ARCH:-amd64}
VMTOOLS_AGENT_ARM64=${VMTOOLS_AGENT_ARM64:-$BUILD/arm64/vmtools-agent}
case $VM_ARCH in
amd64)
	VM_QEMU=qemu-system-x86_64
	VM_CONSOLE=ttyS0
	VM_ACCEL=${VMTOOLS_VM_ACCEL:-tcg}
	# shellcheck disable=SC2054 # the commas are qemu's syntax
	VM_MACHINE=(-machine q35 -accel "$VM_ACCEL" -cpu max)
	;;
arm64)
	VM_QEMU=qemu-system-aarch64
	VM_CONSOLE=ttyAMA0
	VM_ACCEL=tcg
	# Emulated whatever the host: -cpu max has every feature Debian's
	# kernel uses, pointer authentication among them (Neon's arm64 kernel
	# enables it); pauth-impdef=on computes its codes with QEMU's cheap
	# algorithm instead of the architected QARMA, which costs the emulated
	# guest half again its time.  SVE off: with it, the 6.1 kernel refuses
	# the user registers perf's --call-graph dwarf asks for (its mask has
	# SVE's vector length), and perf records nothing.  One host thread
	# per guest CPU.
	# shellcheck disable=SC2054 # the commas are qemu's syntax
	VM_MACHINE=(-machine virt -accel tcg,thread=multi -cpu max,pauth-impdef=on,sve=off)
	;;
*)
	echo "vm.sh: VM_ARCH=$VM_ARCH: amd64 or arm64" >&2
	return 1
	;;
esac
VM_TIME_LIMIT=${VM_TIME_LIMIT:-590}
# The guest's memory; a bigger initramfs (VM_INITRAMFS_EXTRA) needs more.
VM_MEMORY=${VM_MEMORY:-2G}
# The image build is reproducible: with a fixed epoch the same builder and
# kernel give the same bytes, whoever builds it.
VM_SOURCE_DATE_EPOCH=1700000000
# The kernel command line every test starts from.  loglevel=5 puts the
# backtraces of a lockup report on the console (they are printed at the
# default level, 4), and every CPU's, so a guest that hangs says where.
VM_APPEND_BASE="console=$VM_CONSOLE panic=-1 loglevel=5 mitigations=off softlockup_all_cpu_backtrace=1"

# vm_missing: what this machine lacks to boot the VM (empty: nothing), one
# reason per line.
vm_missing() {
	local r
	r=$(need_cmd "$VM_QEMU" cpio gzip curl ss setpriv)
	[ -n "$r" ] && echo "$r"
	if [ "$VM_ARCH" = arm64 ]; then
		r=$(need_cmd qemu-aarch64 mmdebstrap readelf)
		[ -n "$r" ] && echo "$r"
		[ -x "$(vm_pg17_arm64)/bin/postgres" ] || echo "needs $(vm_pg17_arm64) (ci/install-deps.sh)"
	else
		[ -x /bin/busybox ] || echo "needs busybox-static"
		[ -x /usr/lib/postgresql/15/bin/postgres ] || echo "needs postgresql-15"
	fi
	[ -x "$VMTOOLS_IMAGE" ] || echo "needs $VMTOOLS_IMAGE (make all)"
	[ -f "$BUILD/ui/index.html" ] || echo "needs $BUILD/ui (make all)"
	[ -x "$VMTOOLS_AGENT" ] || echo "needs $VMTOOLS_AGENT (make all)"
	return 0
}

# vm_free_port: a random loopback port nothing listens on (iproute2's ss).
# Between this probe and qemu's bind another process may take it: vm_start
# then tries another.
vm_free_port() {
	local port
	while :; do
		port=$((20000 + RANDOM % 40000))
		[ -z "$(ss -Htln "sport = :$port")" ] && break
	done
	echo "$port"
}

# vm_tools_image: build the image once per (vmtools-image binary, kernel,
# web UI), the UI of $BUILD/ui packed in it for the guest's agent to serve.
vm_tools_image() {
	local key
	key=$( (sha256sum <"$VMTOOLS_IMAGE" && echo "$KERNEL_RELEASE" &&
		cd "$BUILD/ui" && find . -type f | LC_ALL=C sort | xargs sha256sum) |
		sha256sum | cut -c1-16)
	VM_IMAGE=$VM_CACHE/tools-$KERNEL_RELEASE-$key.img
	(
		# One build at a time; a test that waited finds the image made.
		flock 9
		# Fresh mtime = in use: older images go after 30 minutes unused, so
		# a run never loses the image it is about to boot to another run.
		[ -e "$VM_IMAGE" ] && touch "$VM_IMAGE" && exit 0
		echo "# building the tools image for $KERNEL_RELEASE with vmtools-image build" >&2
		"$VMTOOLS_IMAGE" build --root "$KERNEL_ROOT" --kernel-release "$KERNEL_RELEASE" \
			${KERNEL_SYSROOT:+--sysroot "$KERNEL_SYSROOT"} \
			--source-date-epoch "$VM_SOURCE_DATE_EPOCH" --ui-dir "$BUILD/ui" \
			--output "$VM_IMAGE.tmp" >&2 || exit 1
		mv "$VM_IMAGE.tmp" "$VM_IMAGE"
		find "$VM_CACHE" -maxdepth 1 -name "tools-*-$VM_ARCH-*.img" ! -name "$(basename "$VM_IMAGE")" -mmin +30 -delete
	) 9>"$VM_CACHE/.tools-image.lock"
}

# vm_pg17_arm64: the install tree of the npm arm64 build of PostgreSQL 17
# (tests/pg-versions, installed by ci/install-deps.sh).
vm_pg17_arm64() { echo "$BUILD/npm/pg/node_modules/pg17.10-arm64/native"; }

# vm_agent_packages: the Debian packages of the libraries the agent loads
# (linked, and the two it opens with dlopen: initramfs.sh), as this
# machine's agent names them; the arm64 guest's root gets their arm64 builds.
vm_agent_packages() {
	local l
	for l in $(ldd "$VMTOOLS_AGENT" | awk '$3 ~ /^\// { print $3 }') \
		$(ldconfig -p | awk '$1 ~ /^(libmicrohttpd|libcrypto)\.so\.[0-9]+$/ && $NF ~ /^\// { print $NF }'); do
		dpkg -S "$l" 2>/dev/null || dpkg -S "$(readlink -f "$l")"
	done | sed 's/:.*//' | LC_ALL=C sort -u
}

# vm_arm64_agent: VM_AGENT set to the arm64 agent, or to none (with
# VM_AGENT_MISSING saying why) when there is none.
vm_arm64_agent() {
	VM_AGENT=$VMTOOLS_AGENT_ARM64 VM_AGENT_MISSING=
	if [ ! -x "$VM_AGENT" ]; then
		VM_AGENT_MISSING="there is no arm64 agent at $VM_AGENT (make ARCH=arm64)"
		VM_AGENT=none
	elif ! file -b "$VM_AGENT" | grep -q 'ARM aarch64'; then
		VM_AGENT_MISSING="$VM_AGENT is not an arm64 program: $(file -b "$VM_AGENT" | cut -c1-60)"
		VM_AGENT=none
	fi
}

vm_prepare() {
	local dir=$1 kernel pkgs
	mkdir -p "$dir" "$VM_CACHE"
	kernel=$(VMTOOLS_KERNEL_ARCH=$VM_ARCH bash "$SRC/tests/lib/fetch-kernel.sh") || return 1
	eval "$kernel"
	vm_tools_image || return 1
	VM_INITRD=$dir/initrd.img
	if [ "$VM_ARCH" = arm64 ]; then
		mapfile -t pkgs < <(vm_agent_packages)
		[ ${#pkgs[@]} -gt 0 ] || { echo "vm.sh: no package gives the libraries of $VMTOOLS_AGENT" >&2; return 1; }
		VM_GUEST_ROOT=$(bash "$VM_TOOLS_DIR/debian-root.sh" --arch arm64 --extract \
			busybox-static kmod postgresql-15 bpftool "${pkgs[@]}") || return 1
		vm_arm64_agent
		# bpftool for the SIGTERM check (tests/lib/vm/sigterm-check), and
		# what the caller adds: paths of the root.
		{ echo /usr/sbin/bpftool; [ -z "${VM_INITRAMFS_EXTRA:-}" ] || cat "$VM_INITRAMFS_EXTRA"; } >"$dir/extra.list"
		VM_GUEST_ROOT=$VM_GUEST_ROOT VM_PG17=$(vm_pg17_arm64) \
			bash "$VM_TOOLS_DIR/initramfs.sh" "$KERNEL_ROOT" "$KERNEL_RELEASE" \
			"$VM_AGENT" "$VM_INITRD" "$dir/extra.list" >/dev/null || return 1
		return 0
	fi
	bash "$VM_TOOLS_DIR/initramfs.sh" "$KERNEL_ROOT" "$KERNEL_RELEASE" \
		"$VMTOOLS_AGENT" "$VM_INITRD" ${VM_INITRAMFS_EXTRA:+"$VM_INITRAMFS_EXTRA"} >/dev/null || return 1
}

vm_start() {
	local dir=$1 mode=${2:-} tries=0 args
	VM_LOG=$dir/serial.log
	while :; do
		VM_PORT=$(vm_free_port)
		rm -f "$dir/qemu.pid" "$VM_LOG"
		# shellcheck disable=SC2054 # the commas are qemu's syntax
		args=("${VM_MACHINE[@]}" -m "$VM_MEMORY" -smp 2
			-kernel "$KERNEL_VMLINUZ" -initrd "$VM_INITRD"
			-append "${VM_APPEND:-$VM_APPEND_BASE vmtest.modprobe=xfs}"
			-netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$VM_PORT-:3080"
			-device virtio-net-pci,netdev=n0
			-display none -monitor none -serial "file:$VM_LOG"
			-no-reboot -pidfile "$dir/qemu.pid")
		[ -n "${VM_ROOT_DISK:-}" ] && args+=(-drive "file=$VM_ROOT_DISK,if=virtio,format=raw")
		[ -n "$VM_IMAGE" ] && args+=(-drive "file=$VM_IMAGE,if=virtio,format=raw,readonly=on")
		if [ "$mode" = daemon ]; then
			"$VM_QEMU" "${args[@]}" -daemonize 2>"$dir/qemu.err" && break
		else
			# qemu dies with timeout, timeout dies with this shell.
			setpriv --pdeathsig KILL timeout -k 10 "$VM_TIME_LIMIT" \
				setpriv --pdeathsig KILL "$VM_QEMU" "${args[@]}" 2>"$dir/qemu.err" &
			local i
			for i in $(seq 50); do
				[ -s "$dir/qemu.pid" ] && break
				kill -0 $! 2>/dev/null || break
				sleep 0.1
			done
			[ -s "$dir/qemu.pid" ] && break
		fi
		tries=$((tries + 1))
		# Another process may take the port between the probe and qemu.
		if [ $tries -ge 3 ] || ! grep -q 'hostfwd\|host forwarding' "$dir/qemu.err"; then
			cat "$dir/qemu.err" >&2
			return 1
		fi
	done
	VM_PID=$(cat "$dir/qemu.pid")
	echo "$VM_PORT" >"$dir/port"
}

vm_stop() {
	local dir=$1 pid i
	[ -s "$dir/qemu.pid" ] || return 0
	pid=$(cat "$dir/qemu.pid")
	# Only the qemu that wrote this pid file: a stale one must not kill a
	# stranger that got the same pid.
	if tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$dir/qemu.pid"; then
		kill "$pid" 2>/dev/null
		for i in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null
	fi
	rm -f "$dir/qemu.pid"
}

vm_alive() { [ -n "${VM_PID:-}" ] && kill -0 "$VM_PID" 2>/dev/null; }

vm_wait_log() {
	local pattern=$1 secs=$2 i
	for ((i = 0; i < secs; i++)); do
		grep -qE "$pattern" "$VM_LOG" 2>/dev/null && return 0
		vm_alive || return 1
		grep -q '^VMTEST fatal=' "$VM_LOG" 2>/dev/null && return 1
		sleep 1
	done
	return 1
}

vm_wait_healthz() {
	local secs=$1 i
	for ((i = 0; i < secs; i++)); do
		curl -s -o /dev/null --max-time 5 "http://127.0.0.1:$VM_PORT/healthz" && return 0
		vm_alive || return 1
		grep -q '^VMTEST fatal=' "$VM_LOG" 2>/dev/null && return 1
		sleep 1
	done
	return 1
}

vm_fail_log() {
	echo "not ok - $1"
	tr -d '\r' <"$VM_LOG" | grep -v '^$' >"$VM_LOG.txt"
	if grep -qE 'soft lockup|hung_task|rcu_.*stall|BUG:|Oops|Call Trace' "$VM_LOG.txt"; then
		echo "#   the guest kernel's first report:"
		sed -n '/soft lockup\|blocked for more than\|rcu_.*stall\|BUG:\|Oops\|Call Trace/,$p' "$VM_LOG.txt" |
			head -n 120 | sed 's/^/#   /'
		echo "#   the serial log's end:"
	fi
	tail -n 40 "$VM_LOG.txt" | sed 's/^/#   /'
	rm -f "$VM_LOG.txt"
}
