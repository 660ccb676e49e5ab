#!/usr/bin/env bash
# tests/vm/20-systemd-guest.sh - the packages in a Debian 12 guest whose
# PID 1 is systemd, as a distribution guest runs them: a root made by
# mmdebstrap from the archive this machine's apt uses
# (tests/lib/vm/debian-root.sh, cached), the vmtools-agent and vmtools-image
# packages of `make deb` installed into it with dpkg, its
# /etc/default/vmtools-agent set to listen beyond the guest and profile
# continuously; booted in qemu (TCG) with Debian's cloud kernel, a small
# initramfs that loads the virtio modules and switches to the root disk
# (tests/lib/vm/init-switch-root), and the tools image as a second disk.
# At boot vmtools-setup.service mounts the disk and links the tools, and
# vmtools-agent.service serves; the guest reports what the host cannot see
# (tests/lib/vm/systemd-report: units, mount, links, capabilities), and
# from the host the test takes a CPU profile (eBPF) of a busy process, a
# Perf profile with the disk's perf, the history of the unit's
# StateDirectory and the web UI of the package.
#
# Checked from the guest's report: PID 1 is systemd; vmtools-setup.service
# is active with exit status 0 and its journal says what it mounted and
# linked; the disk is mounted ro,nosuid,nodev at /run/vm-tools,
# /lib/modules/REL and perf are linked and `modprobe xfs` loads from it;
# vmtools-agent.service runs `serve --no-setup` with the options file's
# options, NoNewPrivs and exactly its unit's capabilities (CapBnd), and
# the guest's own `systemd-analyze security` score; its resource bounds
# (MemoryHigh, MemoryMax, CPUWeight, IOWeight, Nice, TasksMax) are those
# `systemctl show` gives and those its cgroup and process have, and the
# most memory its cgroup took over the test stays under MemoryHigh.  From the host:
# /healthz (the eBPF backend usable under the unit's hardening, the disk
# the setup unit mounted), an eBPF and a Perf CPU profile of the guest's
# busy process read by `go tool pprof` with its comm label, an off-CPU
# profile, the history with window files in the StateDirectory, and /ui/
# from /usr/share/vmtools/ui.  Then the guest powers off cleanly when the
# host asks (it polls a port of the host's loopback) and boots again from
# the same disk without the tools disk: the first boot's links are gone
# (the setup unit's stop ran `setup --undo`), vmtools-setup.service is
# active with exit status 2 and its journal says no disk has the label,
# nothing is mounted, /healthz says so, and the agent still takes an eBPF
# profile.  The console is kept in $BUILD/test-logs/vm-systemd-serial.log.
#
# Skipped only on a machine without qemu (anything else missing is a
# failure); bounded by VM_TIME_LIMIT.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/vm/vm.sh"
. "$SRC/tests/lib/agent.sh"

if [ -n "$(need_cmd qemu-system-x86_64)" ]; then
	skip "the packages in a Debian 12 systemd guest" "needs qemu-system-x86_64"
	exit 0
fi
started=$(date +%s)
# Root: mmdebstrap's root mode, the root tree's owners, dpkg --root.
missing=$( (vm_missing; need_root; need_cmd mmdebstrap mke2fs dpkg-deb go) | grep -v '^$' | paste -sd ';' -)
if [ -n "$missing" ]; then
	not_ok "what the systemd guest needs is here: $missing (make all; ci/install-deps.sh)"
	exit 0
fi
pprof_home

# --- the packages, the root, the kernel, the tools image ----------------------
if ! make -C "$SRC" --no-print-directory BUILD="$BUILD" deb >"$T/deb.log" 2>&1; then
	not_ok "make deb"
	diag "$T/deb.log"
	exit 0
fi
AGENT_DEB=$(ls "$BUILD"/deb/vmtools-agent_*.deb)
IMAGE_DEB=$(ls "$BUILD"/deb/vmtools-image_*.deb)
# Their dependencies go into the cached root; the packages themselves are
# installed on every run.
mapfile -t DEPS < <(for d in "$AGENT_DEB" "$IMAGE_DEB"; do dpkg-deb -f "$d" Depends Recommends; done |
	sed -e 's/^[A-Za-z]*: //' | tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/ //g' | grep -v '^$' | LC_ALL=C sort -u)
t0=$(date +%s)
if ! ROOT_TAR=$(bash "$SRC/tests/lib/vm/debian-root.sh" "${DEPS[@]}" 2>"$T/mmdebstrap.log"); then
	not_ok "mmdebstrap makes a Debian 12 root from this machine's archive"
	diag "$T/mmdebstrap.log"
	exit 0
fi
ok "a Debian 12 root with systemd from this machine's archive (mmdebstrap, $(du -m "$ROOT_TAR" | cut -f1) MB, ready in $(($(date +%s) - t0))s; cached as $(basename "$ROOT_TAR"))"

VM=$T/vm
mkdir -p "$VM" "$VM_CACHE"
if ! kernel=$(bash "$SRC/tests/lib/fetch-kernel.sh" 2>"$T/kernel.log"); then
	not_ok "Debian's cloud kernel is fetched"
	diag "$T/kernel.log"
	exit 0
fi
eval "$kernel"
if ! vm_tools_image 2>"$T/image.log" ||
	! VM_INIT=$SRC/tests/lib/vm/init-switch-root bash "$SRC/tests/lib/vm/initramfs.sh" "$KERNEL_ROOT" \
		"$KERNEL_RELEASE" "$VMTOOLS_AGENT" "$VM/initrd.img" >/dev/null 2>"$T/initrd.log"; then
	not_ok "the tools image and the initramfs are made"
	cat "$T/image.log" "$T/initrd.log" | diag
	exit 0
fi
VM_INITRD=$VM/initrd.img

# --- the guest's root: the packages installed, as an operator would --------
R=$T/root
mkdir -p "$R"
tar -C "$R" --numeric-owner -xpf "$ROOT_TAR"
if dpkg --root="$R" -i "$AGENT_DEB" "$IMAGE_DEB" >"$T/dpkg.log" 2>&1; then
	ok "dpkg installs vmtools-agent and vmtools-image into the guest's root; its postinst enables $(cd "$R"/etc/systemd/system/multi-user.target.wants && echo vmtools-*)"
else
	not_ok "dpkg -i of the packages into the guest's root"
	diag "$T/dpkg.log"
	exit 0
fi
# The host reaches the guest's 3080 through qemu: the agent listens beyond
# loopback there (the forward binds the host's loopback only), and keeps
# its history in the unit's StateDirectory.
sed -i 's|^VMTOOLS_AGENT_OPTS=.*|VMTOOLS_AGENT_OPTS="--listen 0.0.0.0:3080 --continuous --continuous-interval 5 --history-dir /var/lib/vmtools/history"|' \
	"$R/etc/default/vmtools-agent"
echo vmtest-systemd >"$R/etc/hostname"
printf '[Match]\nName=eth0\n\n[Network]\nAddress=10.0.2.15/24\nGateway=10.0.2.2\n' >"$R/etc/systemd/network/10-vmtest.network"
# Something busy to profile, under a command name of its own.
cp "$R/usr/bin/yes" "$R/usr/local/bin/vmburn"
printf '[Unit]\nDescription=vmtest: a busy process to profile\n\n[Service]\nExecStart=/usr/local/bin/vmburn\nStandardOutput=null\nNice=5\n\n[Install]\nWantedBy=multi-user.target\n' \
	>"$R/etc/systemd/system/vmtest-burn.service"
install -m 0755 "$SRC/tests/lib/vm/systemd-report" "$R/usr/local/sbin/vmtest-report"
printf '[Unit]\nDescription=vmtest: report the units to the serial console\nAfter=vmtools-setup.service vmtools-agent.service\n\n[Service]\nType=oneshot\nExecStart=/usr/local/sbin/vmtest-report\n\n[Install]\nWantedBy=multi-user.target\n' \
	>"$R/etc/systemd/system/vmtest-report.service"
# A clean shutdown when the host asks, by listening on a port of its
# loopback (10.0.2.2 to the guest): the setup unit's stop must undo setup.
POWEROFF_PORT=$(vm_free_port)
# Before it does, it says what the agent's cgroup took by then, every
# profile of the test taken: the most memory, and the tasks it has.
cat >"$R/usr/local/sbin/vmtest-poweroff" <<EOF
#!/bin/bash
# the guest powers off once the host listens on its port $POWEROFF_PORT
until (exec 3<>/dev/tcp/10.0.2.2/$POWEROFF_PORT) 2>/dev/null; do sleep 2; done
cg=/sys/fs/cgroup/system.slice/vmtools-agent.service
echo "VMTEST agent-used=memory.peak=\$(cat \$cg/memory.peak) pids.current=\$(cat \$cg/pids.current)" >/dev/ttyS0
echo "VMTEST poweroff=asked" >/dev/ttyS0
exec systemctl poweroff
EOF
chmod 755 "$R/usr/local/sbin/vmtest-poweroff"
printf '[Unit]\nDescription=vmtest: power off when the host asks\nAfter=vmtest-report.service\n\n[Service]\nExecStart=/usr/local/sbin/vmtest-poweroff\n\n[Install]\nWantedBy=multi-user.target\n' \
	>"$R/etc/systemd/system/vmtest-poweroff.service"
# No login on the serial console: agetty would hang up the report's lines.
systemctl --root="$R" enable systemd-networkd.service vmtest-burn.service vmtest-report.service \
	vmtest-poweroff.service >"$T/enable.log" 2>&1 &&
	systemctl --root="$R" mask serial-getty@ttyS0.service >>"$T/enable.log" 2>&1 ||
	{ not_ok "systemctl --root enable in the guest's root"; diag "$T/enable.log"; exit 0; }
VM_ROOT_DISK=$T/root.img
if ! mke2fs -q -t ext4 -L vmtest-root -d "$R" "$VM_ROOT_DISK" 2G >"$T/mke2fs.log" 2>&1; then
	not_ok "mke2fs -d makes the guest's root disk"
	diag "$T/mke2fs.log"
	exit 0
fi
rm -rf "$R"

# --- boot -------------------------------------------------------------------
VM_APPEND="$VM_APPEND_BASE net.ifnames=0 systemd.show_status=0"
at_exit "vm_stop '$VM'"
mkdir -p "$BUILD/test-logs"
at_exit "cp '$VM/serial.log' '$BUILD/test-logs/vm-systemd-serial.log'"
if ! vm_start "$VM" 2>"$T/start.log"; then
	not_ok "qemu starts"
	diag "$T/start.log"
	exit 0
fi
echo "# qemu pid $VM_PID ($VM_ACCEL), guest port 3080 at 127.0.0.1:$VM_PORT, serial log $VM_LOG"
boot0=$(date +%s)
log_value() { sed -n "s/^VMTEST $1=//p" "$VM_LOG" | tr -d '\r' | head -n 1; }
if ! vm_wait_log '^VMTEST report=done' 420; then
	vm_fail_log "the guest boots with systemd and reports within 420s (qemu alive: $(vm_alive && echo yes || echo no))"
	exit 0
fi
ok "the guest booted and reported $(($(date +%s) - boot0))s after qemu started"

[ "$(log_value pid1)" = systemd ] && [ "$(log_value kernel)" = "$KERNEL_RELEASE" ] &&
	ok "PID 1 is systemd, the kernel Debian's $KERNEL_RELEASE" ||
	vm_fail_log "PID 1 is '$(log_value pid1)', kernel '$(log_value kernel)'"
[ "$(log_value setup-unit)" = "active status=0" ] &&
	ok "vmtools-setup.service ran at boot: active, exit 0; its journal: $(sed -n 's/^VMTEST setup-journal=//p' "$VM_LOG" | tr -d '\r' | head -n 3 | paste -sd '|' - | cut -c1-300)" ||
	vm_fail_log "vmtools-setup.service: $(log_value setup-unit)"
case $(log_value mount) in
/dev/vdb\ ext4\ ro,nosuid,nodev*) ok "the tools disk is mounted at /run/vm-tools: $(log_value mount)" ;;
*) vm_fail_log "the tools disk's mount: '$(log_value mount)'" ;;
esac
[ "$(log_value link-modules)" = "/run/vm-tools/lib/modules/$KERNEL_RELEASE" ] && [ -n "$(log_value link-perf)" ] &&
	ok "setup linked /lib/modules/$KERNEL_RELEASE and /usr/local/bin/perf -> $(log_value link-perf)" ||
	vm_fail_log "links: modules '$(log_value link-modules)', perf '$(log_value link-perf)'"
[ "$(log_value modprobe)" = "ok xfs" ] && ok "modprobe xfs in the guest loads the module from the tools disk" ||
	vm_fail_log "modprobe from the tools disk: $(log_value modprobe)"
case $(log_value agent-unit)\ $(log_value agent-cmdline) in
"active /usr/sbin/vmtools-agent serve --no-setup --listen 0.0.0.0:3080 --continuous"*)
	ok "vmtools-agent.service serves, with the options of /etc/default/vmtools-agent: $(log_value agent-cmdline)" ;;
*) vm_fail_log "vmtools-agent.service: $(log_value agent-unit) $(log_value agent-cmdline)" ;;
esac
# CAP_DAC_READ_SEARCH(2) CAP_SYS_PTRACE(19) CAP_SYS_ADMIN(21)
# CAP_SYS_RESOURCE(24) CAP_SYSLOG(34) CAP_PERFMON(38) CAP_BPF(39).
[ "$(log_value agent-capbnd)" = 000000c401280004 ] && [ "$(log_value agent-nonewprivs)" = 1 ] &&
	ok "the agent runs with NoNewPrivs and only CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_SYSLOG, CAP_SYS_RESOURCE (CapBnd $(log_value agent-capbnd)); systemd-analyze security in the guest: $(log_value agent-security)" ||
	vm_fail_log "the agent's CapBnd $(log_value agent-capbnd), NoNewPrivs $(log_value agent-nonewprivs)"

# The resource bounds of the unit, as the package installs it, as systemd
# has them and as the kernel applies them to the running agent (its
# cgroup, its nice value); the profiles below are taken under them.
dpkg-deb --fsys-tarfile "$AGENT_DEB" | tar -xO ./lib/systemd/system/vmtools-agent.service >"$T/agent.service"
unit() { sed -n "s/^$1=//p" "$T/agent.service" | tail -n 1; }
unit_bytes() { numfmt --from=iec "$(unit "$1")" 2>/dev/null; }
high=$(unit_bytes MemoryHigh)
bounds="CPUWeight=$(unit CPUWeight) IOWeight=$(unit IOWeight) MemoryHigh=$high MemoryMax=$(unit_bytes MemoryMax) Nice=$(unit Nice) TasksMax=$(unit TasksMax)"
case $(log_value agent-cgroup) in
"cpu.weight=$(unit CPUWeight) "*" memory.high=$high memory.max=$(unit_bytes MemoryMax) nice=$(unit Nice) pids.max=$(unit TasksMax)")
	[ -n "$high" ] && [ "$(log_value agent-bounds)" = "$bounds" ] &&
		ok "the agent runs under its unit's bounds: $bounds; its cgroup and process: $(log_value agent-cgroup)" ||
		vm_fail_log "systemctl show vmtools-agent: '$(log_value agent-bounds)', not '$bounds'" ;;
*) vm_fail_log "the agent's cgroup and nice value: '$(log_value agent-cgroup)', not the unit's '$bounds' (systemctl show: '$(log_value agent-bounds)')" ;;
esac

URL=http://127.0.0.1:$VM_PORT
AGENT_URL=$URL
if ! vm_wait_healthz 120; then
	vm_fail_log "GET /healthz answers through the forwarded port"
	exit 0
fi
code=$(curl -sS -o "$T/healthz.json" -w '%{http_code}' --max-time 10 "$URL/healthz")
# serve --no-setup reports the disk the setup unit mounted, read as it is.
if [ "$code" = 200 ] && python3 -c "import json, sys; h = json.load(open(sys.argv[1])); d = h['disk']
sys.exit(0 if h['bpf']['usable'] and d['mounted'] and d['device'] == '/dev/vdb' and not d['setup_ran']
	and 'error' not in d and h['kernel']['match'] else 1)" "$T/healthz.json"; then
	ok "GET /healthz from the host is 200, the eBPF backend usable under the unit's hardening, and the disk the setup unit mounted reported: $(tr -d '\n ' <"$T/healthz.json" | cut -c1-200)"
else
	not_ok "GET /healthz is $code"
	diag "$T/healthz.json"
fi

# Each POST: the body in $T/NAME.pb, the status code in NAME.code, what
# curl says in NAME.err.
for backend in BccProfile Perf; do
	agent_post profile/cpu '{"profiler": {"'"$backend"'": null}, "sampling_frequency": 99, "timeout_seconds": 3, "targets": {"comm": ["vmburn"]}}' \
		"$T/$backend.pb" -S --max-time 120 >"$T/$backend.code" 2>"$T/$backend.err"
	go tool pprof -tags "$T/$backend.pb" >"$T/$backend.tags" 2>&1
	if [ "$(cat "$T/$backend.code")" = 200 ] && grep -q 'vmburn' "$T/$backend.tags" &&
		go tool pprof -top "$T/$backend.pb" >"$T/$backend.top" 2>&1; then
		ok "a $backend CPU profile of the guest's vmburn through the hardened unit: 200, $(sed -n 's/.*Total samples = \([^ ]*\) .*/\1/p' "$T/$backend.top") of samples labelled comm vmburn"
	else
		not_ok "a $backend profile from the guest: $(cat "$T/$backend.code")"
		cat "$T/$backend.err" "$T/$backend.tags" | diag
		head -c 400 "$T/$backend.pb" | diag
	fi
done

# The off-CPU programs (sched_switch) under the unit's hardening too: the
# guest's journald and systemd block, whatever vmburn does.
code=$(curl -sS -X POST -H 'Content-Type: application/json' -d '{"timeout_seconds": 2, "targets": {"comm": ["systemd-journal", "systemd", "vmburn"]}}' \
	--max-time 60 -w '%{http_code}' -o "$T/offcpu.pb" "$URL/profile/offcpu" 2>"$T/offcpu.err")
if [ "$code" = 200 ] && go tool pprof -top -sample_index=offcpu "$T/offcpu.pb" >"$T/offcpu.top" 2>"$T/offcpu.err"; then
	ok "an off-CPU profile through the hardened unit: 200, read by go tool pprof ($(sed -n 's/.*Total samples = \(.*\)/\1/p' "$T/offcpu.top" | head -n 1))"
else
	not_ok "an off-CPU profile from the guest: $code"
	cat "$T/offcpu.err" | diag
	head -c 400 "$T/offcpu.pb" | diag
fi

# The history lives in the unit's StateDirectory, writable under
# ProtectSystem=strict.
code=$(curl -sS -o "$T/history.json" -w '%{http_code}' --max-time 10 "$URL/profile/cpu/history")
n=$(python3 -c "import json; print(len(json.load(open('$T/history.json'))['windows']))" 2>/dev/null)
case $(log_value history-files) in
0\ * | '') not_ok "no window file in /var/lib/vmtools/history: $(log_value history-files)" ;;
*) [ "$code" = 200 ] && [ "${n:-0}" -ge 1 ] &&
	ok "the continuous history: $n windows on GET /profile/cpu/history, $(log_value history-files | cut -d' ' -f1) files in the StateDirectory /var/lib/vmtools/history" ||
	{ not_ok "GET /profile/cpu/history: $code"; diag "$T/history.json"; } ;;
esac

dpkg-deb --fsys-tarfile "$AGENT_DEB" | tar -xO ./usr/share/vmtools/ui/index.html >"$T/ui-packaged.html"
code=$(curl -sS -o "$T/ui.html" -w '%{http_code}' --max-time 30 "$URL/ui/")
[ "$code" = 200 ] && cmp -s "$T/ui.html" "$T/ui-packaged.html" &&
	ok "the guest's agent serves /ui/ from the package's /usr/share/vmtools/ui" ||
	{ not_ok "GET /ui/ from the systemd guest: $code"; head -c 400 "$T/ui.html" | diag; }

vm_alive && ok "the VM still runs after the checks ($(($(date +%s) - started))s since the test started)" ||
	vm_fail_log "the VM died during the checks"

# A clean shutdown: systemd stops the agent, then the setup unit, whose stop
# runs `setup --undo` (checked on the next boot: no link left behind).
python3 -c 'import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
s.settimeout(120)
s.accept()[0].close()
time.sleep(1)' "$POWEROFF_PORT" >"$T/listen.log" 2>&1 &
t0=$(date +%s)
for _ in $(seq 240); do
	vm_alive || break
	sleep 0.5
done
if ! vm_alive && grep -q '^VMTEST poweroff=asked' "$VM_LOG"; then
	ok "the guest powers off cleanly when asked ($(($(date +%s) - t0))s)"
	# What every profile above took, against MemoryHigh.
	used=$(log_value agent-used)
	peak=$(sed -n 's/^memory.peak=\([0-9]*\) .*/\1/p' <<<"$used")
	[ -n "$peak" ] && [ -n "$high" ] && [ "$peak" -lt "$high" ] &&
		ok "the agent took its profiles within its bounds: $((peak >> 20)) MiB of memory at most (MemoryHigh $((high >> 20)) MiB), $used" ||
		vm_fail_log "the agent's cgroup after the profiles: '$used'"
else
	vm_fail_log "the guest did not power off within 120s of being asked"
fi
vm_stop "$VM"

# --- the same guest, booted again with no tools disk -------------------------
# The links the first boot made are gone (the setup unit's stop undid them);
# vmtools-setup.service is a clean no-op that says why in the journal; the
# agent serves all the same (the eBPF backend needs no disk).
VM2=$T/vm2
mkdir -p "$VM2"
at_exit "vm_stop '$VM2'"
at_exit "cp '$VM2/serial.log' '$BUILD/test-logs/vm-systemd-nodisk-serial.log'"
VM_IMAGE=
if ! vm_start "$VM2" 2>"$T/start2.log"; then
	not_ok "qemu starts the guest without the tools disk"
	diag "$T/start2.log"
	exit 0
fi
boot0=$(date +%s)
if ! vm_wait_log '^VMTEST report=done' 420; then
	vm_fail_log "the guest without a tools disk boots and reports within 420s"
	exit 0
fi
journal=$(sed -n 's/^VMTEST setup-journal=//p' "$VM_LOG" | tr -d '\r' | paste -sd '|' -)
if [ "$(log_value setup-unit)" = "active status=2" ] && grep -q "no disk with the ext4 label 'vm-tools'" <<<"$journal" &&
	[ -z "$(log_value mount)" ] && [ -z "$(log_value link-modules)" ]; then
	ok "booted again without a tools disk: the links of the first boot are gone (undone at its shutdown), and vmtools-setup.service is a clean no-op: active (exit 2 counts as done), nothing mounted or linked, its journal saying why: $journal"
else
	vm_fail_log "vmtools-setup.service without a tools disk: $(log_value setup-unit), mount '$(log_value mount)', journal: $journal"
fi
URL=http://127.0.0.1:$VM_PORT
AGENT_URL=$URL
if vm_wait_healthz 120 && curl -sS -o "$T/healthz2.json" --max-time 10 "$URL/healthz" &&
	grep -q '"mounted":false' "$T/healthz2.json" && grep -q 'no tools disk is mounted at /run/vm-tools' "$T/healthz2.json"; then
	ok "/healthz says no tools disk is mounted, and to run setup"
else
	not_ok "/healthz without the tools disk"
	diag "$T/healthz2.json"
fi
if [ "$(log_value agent-unit)" = active ] &&
	agent_post profile/cpu '{"sampling_frequency": 99, "timeout_seconds": 2, "targets": {"comm": ["vmburn"]}}' \
		"$T/nodisk.pb" -S --max-time 120 >"$T/nodisk.code" 2>"$T/nodisk.err" &&
	[ "$(cat "$T/nodisk.code")" = 200 ]; then
	ok "and vmtools-agent.service serves without it: an eBPF profile is 200 ($(($(date +%s) - boot0))s after boot)"
else
	vm_fail_log "vmtools-agent.service without a tools disk: $(log_value agent-unit), POST $(cat "$T/nodisk.code" 2>/dev/null)"
fi
vm_stop "$VM2"
