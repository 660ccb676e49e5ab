#!/usr/bin/env bash
# tests/vm/30-interpreter.sh - the BPF programs that walk user stacks with
# unwind tables (bpf/unwind.bpf.h) on a kernel that runs them interpreted:
# Neon's guest kernels are built without CONFIG_BPF_JIT.  The VM test's
# guest (Debian 12's cloud kernel, the same initramfs as 10-end-to-end.sh)
# boots with `vmtest.jit=0`, and its /init sets net.core.bpf_jit_enable=0
# before the agent starts.  From the host:
#   - the guest's agent found where its kernel keeps user registers
#     (/healthz unwind.user_registers: the calibration, on the 6.1 kernel);
#   - a CPU profile of PostgreSQL under pgbench -S loads and runs
#     interpreted: 200, and its pprof says how many callers the unwind
#     tables found (more than none);
#   - at least 99% of the PostgreSQL samples' stacks reach main, through
#     PostgresMain for the client backend's;
#   - an off-CPU profile's ClientRead time reaches PostgresMain too;
#   - a faults profile (every fault sampled) runs interpreted: its client
#     backends' faults reach PostgresMain (at least 90% of their bytes);
#   - a memory snapshot of the guest's PostgreSQL: every context path
#     starts at TopMemoryContext, and the total is more than nothing.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/vm/vm.sh"
. "$SRC/tests/lib/agent.sh"

reason=$(need_cmd qemu-system-x86_64 cpio gzip curl go python3)
[ -x /bin/busybox ] || reason=${reason:-needs busybox-static}
[ -x /usr/lib/postgresql/15/bin/postgres ] || reason=${reason:-needs postgresql-15}
[ -x "$VMTOOLS_AGENT" ] || reason=${reason:-needs $VMTOOLS_AGENT (make all)}
[ -x "$VMTOOLS_IMAGE" ] || reason=${reason:-needs $VMTOOLS_IMAGE (make all)}
if [ -n "$reason" ]; then
	skip "BPF unwinding interpreted in a VM" "$reason"
	exit 0
fi
export HOME=$T PPROF_BINARY_PATH=$T/no-binaries PPROF_TMPDIR=$T/pprof
VM=$T/vm
if ! vm_prepare "$VM" >"$T/prepare.log" 2>&1; then
	not_ok "kernel, tools image and initramfs are prepared"
	diag "$T/prepare.log"
	exit 0
fi
at_exit "vm_stop '$VM'"
VM_APPEND="$VM_APPEND_BASE vmtest.modprobe=xfs vmtest.jit=0 vmtest.clients=2"
export VM_APPEND
if ! vm_start "$VM" 2>"$T/start.log"; then
	not_ok "qemu starts"
	diag "$T/start.log"
	exit 0
fi
if ! vm_wait_log '^VMTEST pgbench=running' 400 || ! vm_wait_healthz 120; then
	vm_fail_log "the guest boots, runs pgbench and the agent answers"
	exit 0
fi
grep -q '^VMTEST bpf_jit=0' "$VM_LOG" &&
	ok "the guest runs BPF programs interpreted (net.core.bpf_jit_enable=0)" ||
	vm_fail_log "the guest's BPF JIT could not be turned off"

URL=http://127.0.0.1:$VM_PORT
AGENT_URL=$URL
curl -sS --max-time 30 "$URL/healthz" >"$T/healthz.json" 2>&1
if python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["unwind"]["user_registers"]; sys.exit(0 if r["found"] and r["thread_size"] > 0 else 1)' "$T/healthz.json" 2>/dev/null; then
	ok "the guest's agent found where its 6.1 kernel keeps user registers: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["unwind"]["user_registers"])' "$T/healthz.json")"
else
	not_ok "the guest's agent did not find the user registers"
	diag "$T/healthz.json"
fi

# Each POST: the response in $T/NAME, its status in NAME.code, what curl
# says in NAME.err.
agent_post profile/cpu '{"timeout_seconds": 5}' "$T/cpu.pb" -S --max-time 180 \
	>"$T/cpu.pb.code" 2>"$T/cpu.pb.err"
go tool pprof -raw "$T/cpu.pb" >"$T/cpu.raw" 2>/dev/null
by_table=$(sed -n 's/.*unwound with .eh_frame: \([0-9]*\) callers found by unwind tables.*/\1/p' "$T/cpu.raw")
if [ "$(cat "$T/cpu.pb.code")" = 200 ] && [ "${by_table:-0}" -gt 0 ]; then
	ok "a CPU profile runs interpreted: 200, $by_table callers found by unwind tables"
else
	not_ok "a CPU profile interpreted: $(cat "$T/cpu.pb.code") ($(grep Comment "$T/cpu.raw" | head -3))"
	diag "$T/cpu.pb.err"
	curl -sS --max-time 30 "$URL/healthz" | diag
	diag "$T/cpu.pb"
fi

agent_post profile/cpu '{"timeout_seconds": 5, "format": "folded"}' "$T/cpu.folded" -S --max-time 180 \
	>"$T/cpu.folded.code" 2>"$T/cpu.folded.err"
read -r all main backend pm < <(awk '
	{ n = $NF; all += n; if ($0 ~ /;main;/) m += n
	  if ($0 ~ /exec_simple_query|ReadCommand|pq_getbyte|secure_read/) { b += n; if ($0 ~ /;main;.*;PostgresMain;/) p += n } }
	END { printf "%d %d %d %d\n", all, m, b, p }' "$T/cpu.folded")
diag <<<"interpreted: $main of $all PostgreSQL samples reach main; $pm of $backend client-backend samples reach PostgresMain"
check "at least 99% of $all PostgreSQL samples reach main ($main), interpreted" \
	test "$all" -gt 0 -a $((main * 100)) -ge $((all * 99))
check "at least 99% of $backend client-backend samples reach main through PostgresMain ($pm)" \
	test "$backend" -gt 0 -a $((pm * 100)) -ge $((backend * 99))

agent_post profile/offcpu '{"timeout_seconds": 3, "format": "folded"}' "$T/off.folded" -S --max-time 180 \
	>"$T/off.folded.code" 2>"$T/off.folded.err"
read -r reads reach < <(awk '
	{ n = $NF; if ($0 ~ /secure_read|pq_recvbuf/) { r += n; if ($0 ~ /;PostgresMain;/) p += n } }
	END { printf "%d %d\n", r, p }' "$T/off.folded")
check "an off-CPU profile's client reads reach PostgresMain, interpreted ($reach of $reads ns)" \
	test "${reads:-0}" -gt 0 -a "$reach" = "$reads"

agent_post profile/faults '{"timeout_seconds": 5, "period": 1}' "$T/faults.pb" -S --max-time 180 \
	>"$T/faults.pb.code" 2>"$T/faults.pb.err"
go tool pprof -raw "$T/faults.pb" >"$T/faults.raw" 2>/dev/null
read -r fb_all fb_pm < <(python3 "$SRC/tests/lib/pg-stacks.py" reach "$T/faults.raw" \
	--label 'backend_type:[client backend]' PostgresMain 2>/dev/null)
diag <<<"interpreted faults: $(cat "$T/faults.pb.code"), $((${fb_all:-0} / 1024)) KiB of client-backend faults, $((${fb_pm:-0} / 1024)) KiB reaching PostgresMain"
check "a faults profile runs interpreted and its client backends' faults reach PostgresMain (${fb_pm:-0} of ${fb_all:-0} bytes)" \
	test "$(cat "$T/faults.pb.code")" = 200 -a "${fb_all:-0}" -gt 0 -a $((${fb_pm:-0} * 100)) -ge $((${fb_all:-0} * 90))

agent_post profile/memory '{"format": "folded"}' "$T/memory.folded" -S --max-time 180 \
	>"$T/memory.folded.code" 2>"$T/memory.folded.err"
read -r m_total m_ctx m_bad < <(awk '
	{ n = $NF; t += n; split($1, f, ";")
	  if (f[2] !~ /^\[/) { c++; if (f[2] != "TopMemoryContext") b++ } }
	END { printf "%d %d %d\n", t, c, b }' "$T/memory.folded")
diag <<<"memory snapshot: $(cat "$T/memory.folded.code"), $((${m_total:-0} / 1048576)) MiB in all, $m_ctx context paths"
check "a memory snapshot of the guest's PostgreSQL: 200, every context path rooted at TopMemoryContext ($m_ctx, ${m_bad:-?} not), total ${m_total:-0} bytes > 0" \
	test "$(cat "$T/memory.folded.code")" = 200 -a "${m_total:-0}" -gt 0 -a "${m_ctx:-0}" -gt 0 -a "${m_bad:-1}" = 0
