#!/usr/bin/env bash
# tools/demo.sh - `make demo` and `make demo-stop`: the main job end to
# end.  Fetches Debian's cloud kernel packages, builds the tools image from
# them with `vmtools-image build`, builds the guest's initramfs (busybox,
# PostgreSQL 15 under pgbench, the agent), boots it in qemu, and leaves the VM
# running with the agent's port 3080 forwarded to a loopback port of the host.
# Then it prints the commands to try and how to stop it.  Everything slow is
# cached in $VMTOOLS_CACHE (~/.cache/vmtools): a second run only boots.
# With VM_ARCH=arm64 (`make demo ARCH=arm64`) the guest is the arm64 one of
# tests/vm/40-arm64.sh, emulated: Debian's arm64 cloud kernel and its tools
# image, PostgreSQL 15 and 17, the arm64 agent of $VMTOOLS_AGENT_ARM64.
#
# usage: demo.sh [start|stop]      (state in $BUILD/demo)
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
export SRC BUILD
. "$SRC/tests/lib/tap.sh"
. "$SRC/tests/lib/vm/vm.sh"
DIR=$BUILD/demo

case ${1:-start} in
stop)
	if [ -s "$DIR/qemu.pid" ]; then
		echo "Stopping the demo VM (pid $(cat "$DIR/qemu.pid"))."
		vm_stop "$DIR"
	else
		echo "No demo VM is running."
	fi
	exit 0
	;;
start) ;;
*)
	echo "usage: $0 [start|stop]" >&2
	exit 2
	;;
esac

die() {
	echo "make demo: $*" >&2
	exit 1
}

missing=$(vm_missing)
[ -z "$missing" ] || die "cannot boot the demo VM: $(echo "$missing" | paste -sd ';' -)"
if [ -s "$DIR/qemu.pid" ]; then
	echo "Stopping the previous demo VM (pid $(cat "$DIR/qemu.pid"))."
	vm_stop "$DIR"
fi

echo "Preparing the kernel, the tools image and the initramfs (cached in $VM_CACHE) ..."
vm_prepare "$DIR" || die "preparing the VM failed (see the messages above)"
echo "  kernel:    $KERNEL_VMLINUZ"
echo "  image:     $VM_IMAGE"
echo "  initramfs: $VM_INITRD"
# An emulated arm64 guest boots and answers some times slower.
boot_secs=400 agent_secs=120 pgs="PostgreSQL 15 runs"
if [ "$VM_ARCH" = arm64 ]; then
	boot_secs=900 agent_secs=600 pgs="PostgreSQL 15 and 17 (npm's arm64 build) run"
fi
echo "Booting Debian's $VM_ARCH cloud kernel $KERNEL_RELEASE in $VM_QEMU ($VM_ACCEL; serial console in $DIR/serial.log) ..."
vm_start "$DIR" daemon || die "qemu did not start (see $DIR/qemu.err)"
started=$(date +%s)
if ! vm_wait_log '^VMTEST boot=done' "$boot_secs"; then
	tail -n 30 "$VM_LOG" >&2
	vm_stop "$DIR"
	die "the guest did not finish booting; its console is in $VM_LOG"
fi
URL=http://127.0.0.1:$VM_PORT
if [ "${VM_AGENT:-}" = none ]; then
	cat <<EOF

The $VM_ARCH VM is up after $(($(date +%s) - started))s: $pgs there under pgbench,
but it has no agent: $VM_AGENT_MISSING.  Once there is one, make demo
ARCH=$VM_ARCH again and take a profile with:

  curl -X POST -H 'Content-Type: application/json' -d '{"timeout_seconds": 5}' \\
       $URL/profile/cpu --output profile.pb

Guest console: $VM_LOG.  Stop the VM with:  make demo-stop
EOF
	exit 0
fi
if ! vm_wait_healthz "$agent_secs"; then
	tail -n 30 "$VM_LOG" >&2
	die "the agent in the guest does not answer on 127.0.0.1:$VM_PORT; its console is in $VM_LOG"
fi

cat <<EOF

The $VM_ARCH VM is up after $(($(date +%s) - started))s: $pgs there under pgbench, and the
agent's port 3080 is at $URL.

See it in a browser: $URL/ui/
(take a profile there and it opens in speedscope; the guest's agent serves
the page from the tools disk)

Take a 5-second CPU profile of the postgres processes and read it:

  curl -X POST -H 'Content-Type: application/json' \\
       -d '{"profiler": {"BccProfile": null}, "sampling_frequency": 99, "timeout_seconds": 5, "archive": false}' \\
       $URL/profile/cpu --output profile.pb
  go tool pprof -top profile.pb

While a profile runs, see it, or stop it early:

  curl $URL/profile/cpu
  curl -X DELETE $URL/profile/cpu

The agent also profiles all the time at 19 Hz (--continuous), one window
every 10 s.  What PostgreSQL did in the last 5 minutes, merged:

  curl "$URL/profile/cpu/history/profile?from=-5m" --output last5m.pb
  go tool pprof -top last5m.pb
  curl $URL/profile/cpu/history          # the windows kept

A flame graph to open from a file: add "format": "svg" to the body (profile.svg).
Also: curl $URL/healthz ; go tool pprof -http=: $URL/debug/pprof/profile?seconds=10
Perf instead of eBPF: "profiler": {"Perf": null}.  Guest console: $VM_LOG

Stop the VM with:  make demo-stop   (or: kill \$(cat $DIR/qemu.pid))
EOF
