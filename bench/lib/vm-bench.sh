# shellcheck shell=bash
# bench/lib/vm-bench.sh - the host half the VM benchmarks share
# (bench/offcpu-vm.sh, bench/unwind-vm.sh): they boot the guest of
# tests/vm/*.sh (tests/lib/vm/vm.sh: Debian's 6.1 cloud kernel, TCG), whose
# boot (tests/lib/vm/after-setup) starts PostgreSQL 15 with pgbench's
# tables and then runs the bench's guest half as /usr/lib/vmtest/bench
# instead of the VM test's load and agent, and powers off.  The guest half
# sources bench/lib/vm-guest.sh (installed beside it) and prints its
# figures on the console as `VMBENCH ...` lines.  Sourcing this brings
# bench/lib/measure.sh and tests/lib/vm/vm.sh.
#
#   vm_bench_prepare GUEST [PATH]...  exit 1 saying why when the VM cannot
#                         boot here or a PATH is missing; else prepare the
#                         VM in $VM with PATHs (and the libraries they
#                         load) in its initramfs, and stage $VM_BENCH_GUEST,
#                         a tree appended to it at boot, holding GUEST as
#                         /usr/lib/vmtest/bench and bench/lib/vm-guest.sh
#                         beside it (more files may go in its
#                         usr/lib/vmtest)
#   vm_bench_stats NAME...  the indexes in the profiler's `stats` map
#                         (bpf/profile.h's enum profile_stat) of
#                         PROFILE_STAT_NAME..., space-separated, for the
#                         guest half's STATS; exit 1 saying which is missing
#   vm_bench_run SETTINGS LIMIT  write SETTINGS (shell assignments) to the
#                         guest's /etc/vmtest/bench.conf, boot the guest
#                         (VM_MEMORY) and wait at most LIMIT seconds for
#                         the bench to end; its VMBENCH lines in
#                         $T/results, the error and info ones also on
#                         stderr; exit 1 saying why when it does not end

. "$(dirname "${BASH_SOURCE[0]}")/measure.sh"
. "$SRC/tests/lib/vm/vm.sh"

VM=$T/vm
VM_BENCH_GUEST=$T/guest
VM_BENCH_NAME=bench/$(basename "$0")

vm_bench_prepare() {
	local guest=$1 reason f
	shift
	reason=$(vm_missing)
	for f; do
		[ -e "$f" ] || reason=${reason:-needs $f (ci/install-deps.sh)}
	done
	if [ -n "$reason" ]; then
		echo "$VM_BENCH_NAME: cannot run: $reason" >&2
		exit 1
	fi
	VM_BENCH_STARTED=$(date +%s)
	[ $# -eq 0 ] || printf '%s\n' "$@" >"$T/extra.list"
	if ! VM_INITRAMFS_EXTRA=${1:+$T/extra.list} vm_prepare "$VM" >"$T/prepare.log" 2>&1; then
		echo "$VM_BENCH_NAME: preparing the VM failed:" >&2
		tail -n 20 "$T/prepare.log" >&2
		exit 1
	fi
	mkdir -p "$VM_BENCH_GUEST/usr/lib/vmtest" "$VM_BENCH_GUEST/etc/vmtest"
	install -m 755 "$guest" "$VM_BENCH_GUEST/usr/lib/vmtest/bench"
	install -m 644 "$SRC/bench/lib/vm-guest.sh" "$VM_BENCH_GUEST/usr/lib/vmtest/"
}

vm_bench_stats() {
	local s i stats=""
	for s; do
		i=$(awk -v want="PROFILE_STAT_$s" '
			$0 == "enum profile_stat {" { on = 1; next }
			on && $1 ~ /^}/ { exit }
			on && $1 ~ /^PROFILE_STAT_/ { sub(",", "", $1); if ($1 == want) { print i + 0; exit } i++ }' "$SRC/bpf/profile.h")
		[ -n "$i" ] || { echo "$VM_BENCH_NAME: no PROFILE_STAT_$s in bpf/profile.h" >&2; exit 1; }
		stats+=${stats:+ }$i
	done
	echo "$stats"
}

vm_bench_run() {
	local limit=$2
	echo "$1" >"$VM_BENCH_GUEST/etc/vmtest/bench.conf"
	# The guest half and its settings, appended as one more archive.
	(cd "$VM_BENCH_GUEST" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc --owner=0:0) |
		gzip -n >>"$VM_INITRD"
	echo "# initramfs $(($(stat -c %s "$VM_INITRD") / 1048576)) MiB, ready after $(($(date +%s) - VM_BENCH_STARTED))s" >&2
	VM_TIME_LIMIT=$limit
	at_exit "vm_stop '$VM'"
	if ! vm_start "$VM" 2>"$T/start.log"; then
		echo "$VM_BENCH_NAME: qemu does not start:" >&2
		cat "$T/start.log" >&2
		exit 1
	fi
	echo "# qemu pid $VM_PID ($VM_ACCEL, $VM_MEMORY), serial log $VM_LOG, at most ${limit}s" >&2
	if ! vm_wait_log '^VMTEST bench=' "$limit"; then
		echo "$VM_BENCH_NAME: the guest did not finish the bench (qemu alive: $(vm_alive && echo yes || echo no)):" >&2
		tail -n 40 "$VM_LOG" | tr -d '\r' >&2
		exit 1
	fi
	tr -d '\r' <"$VM_LOG" | grep '^VMBENCH ' >"$T/results"
	echo "# guest finished after $(($(date +%s) - VM_BENCH_STARTED))s" >&2
	grep -E '^VMBENCH (error|info) ' "$T/results" | sed 's/^VMBENCH /# /' >&2
}
