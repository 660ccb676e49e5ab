#!/usr/bin/env bash
# tests/vm/10-end-to-end.sh - the system as its users meet it: Debian 12's
# cloud kernel boots in qemu with the tools image (built by `vmtools-image
# build` from the same kernel packages) as a read-only virtio disk; the
# guest's /init (tests/lib/vm/init) hands over to busybox init, whose
# inittab runs `vmtools-agent setup` and respawns `vmtools-agent serve` with
# the two lines docs/guest-setup.md gives (checked to be those, as written
# there), and runs PostgreSQL under pgbench; from the host, the README's curl
# commands (and an off-CPU profile, its wait-event labels checked) go
# through the forwarded port and `go tool pprof` reads what
# comes back.  In-guest facts (setup, modprobe, perf) come from the serial
# log, where /init prints them as `VMTEST name=value` lines.
#
# Checked: the inittab lines; from the serial log, that setup mounted and
# linked the image, that `modprobe xfs` loads a module only the image has,
# and that the image's perf runs in a guest that has none of perf's
# libraries; through the port, the README's POST, GET and DELETE with
# their status codes, `go tool pprof -top` showing PostgreSQL functions
# named in the guest (the host's binaries hidden from pprof), every
# location with a function and `-tags` the `client backend` label;
# `archive: true` a valid gzip; DELETE ending a running profile early with
# a profile that reads; an off-CPU profile read silently, its samples
# labelled with the background processes' Activity:* wait events and
# sched_state; /debug/pprof/profile; a Perf profile of PostgreSQL with the
# tools image's perf; the guest agent's continuous history (its index, the
# last 5 minutes merged with PostgreSQL functions in it); and the web UI
# served from the tools disk, fetched and opened in Chromium
# (tests/browser/ui.mjs: a profile in speedscope listing PostgresMain).
# Bounded by VM_TIME_LIMIT (590 s), the VM always killed at the end, its
# console kept in $BUILD/test-logs/vm-serial.log.
#
# Every check runs for real; the only skip is for a machine that lacks qemu,
# busybox, PostgreSQL or the built binaries.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/vm/vm.sh"
. "$SRC/tests/lib/agent.sh"
. "$SRC/tests/lib/browser.sh"

reason=$(need_cmd qemu-system-x86_64 cpio gzip curl ss setpriv file go python3)
[ -x /bin/busybox ] || reason=${reason:-needs busybox-static}
[ -x /usr/lib/postgresql/15/bin/postgres ] || reason=${reason:-needs postgresql-15}
[ -x "$VMTOOLS_AGENT" ] || reason=${reason:-needs $VMTOOLS_AGENT (make all)}
[ -x "$VMTOOLS_IMAGE" ] || reason=${reason:-needs $VMTOOLS_IMAGE (make all)}
[ -f "$BUILD/ui/index.html" ] || reason=${reason:-needs $BUILD/ui (make all)}
if [ -n "$reason" ]; then
	skip "end-to-end VM test" "$reason"
	exit 0
fi
# Names must come from the guest's symbolizer, not from the host's binaries;
# pprof keeps what it fetches in $PPROF_TMPDIR.
export PPROF_BINARY_PATH=$T/no-binaries PPROF_TMPDIR=$T/pprof
VM=$T/vm
started=$(date +%s)
if ! vm_prepare "$VM" >"$T/prepare.log" 2>&1; then
	not_ok "kernel, tools image and initramfs are prepared"
	diag "$T/prepare.log"
	exit 0
fi
ok "kernel $KERNEL_RELEASE, tools image ${VM_IMAGE:+$(basename "$VM_IMAGE") }and initramfs ready in $(($(date +%s) - started))s"
at_exit "vm_stop '$VM'"
# The guest's console outlives $T, for whoever reads a failure.
mkdir -p "$BUILD/test-logs"
at_exit "cp '$VM/serial.log' '$BUILD/test-logs/vm-serial.log'"
if ! vm_start "$VM" 2>"$T/start.log"; then
	not_ok "qemu starts"
	diag "$T/start.log"
	exit 0
fi
echo "# qemu pid $VM_PID ($VM_ACCEL), guest port 3080 at 127.0.0.1:$VM_PORT, serial log $VM_LOG"

# log_has PATTERN: the serial log has a line matching the extended regex.
log_has() { grep -qE "$1" "$VM_LOG"; }
log_value() { sed -n "s/^VMTEST $1=//p" "$VM_LOG" | tr -d '\r' | head -n 1; }

# The guest's sysinit steps end with `boot=done`, then init respawns the
# agent and the load; everything below reads it.
if ! vm_wait_log '^VMTEST boot=done' 400; then
	vm_fail_log "guest boots to the end of its sysinit steps within 400s (qemu alive: $(vm_alive && echo yes || echo no))"
	exit 0
fi
echo "# guest booted and started the agent after $(($(date +%s) - started))s: initdb $(log_value initdb), pgbench -i $(log_value pgbench-init)"
vm_wait_log '^VMTEST pgbench=running' 60

# The guest's inittab starts the agent with docs/guest-setup.md's lines.
sed -n 's/^    \(::[a-z]*:.*vmtools-agent.*\)$/\1/p' "$SRC/docs/guest-setup.md" >"$T/inittab.doc"
sed -n 's/^VMTEST inittab=//p' "$VM_LOG" | tr -d '\r' >"$T/inittab.guest"
if [ "$(wc -l <"$T/inittab.doc")" = 2 ] && cmp -s "$T/inittab.doc" "$T/inittab.guest"; then
	ok "the guest's busybox init runs setup and serve with the two inittab lines of docs/guest-setup.md, as written there"
else
	not_ok "the guest's inittab lines for vmtools-agent are not docs/guest-setup.md's"
	diff "$T/inittab.doc" "$T/inittab.guest" | diag
fi

[ "$(log_value kernel)" = "$KERNEL_RELEASE" ] &&
	ok "guest runs Debian's cloud kernel $KERNEL_RELEASE from the same packages as the image" ||
	vm_fail_log "guest kernel is $(log_value kernel), expected $KERNEL_RELEASE"
[ "$(log_value network)" = 10.0.2.15/24 ] &&
	ok "guest network is up (virtio_net loaded from the initramfs, 10.0.2.15/24)" ||
	vm_fail_log "guest network: $(log_value network)"
log_has '^VMTEST pgbench=running' &&
	ok "PostgreSQL 15 runs in the guest as postgres, with pgbench -S as load" ||
	vm_fail_log "PostgreSQL and pgbench in the guest"

[ "$(log_value disk)" = /dev/vda ] && ok "guest sees the tools image as /dev/vda (virtio_blk from the initramfs)" ||
	vm_fail_log "guest disk: $(log_value disk)"

{
	# setup's own lines (inittab's sysinit line) sit between the network
	# line and the status after-setup reports.
	sed -n '/^VMTEST network=/,/^VMTEST setup=/p' "$VM_LOG" | grep -v '^VMTEST' >"$T/setup.out"
	if [ "$(log_value setup)" = 0 ] && [ -s "$T/setup.out" ]; then
		ok "vmtools-agent setup at sysinit mounts the disk in the guest and says what it did on the console"
		diag "$T/setup.out"
	else
		vm_fail_log "vmtools-agent setup in the guest (status $(log_value setup))"
	fi
	case $(log_value modprobe) in
	ok\ *) ok "modprobe in the guest loads $(log_value modprobe | cut -d' ' -f2) (not built in, not in the initramfs) from the image" ;;
	*) vm_fail_log "modprobe from the image: $(log_value modprobe)" ;;
	esac
	case $(log_value perf) in
	ok\ *)
		if [ "$(log_value perf-libraries-in-guest)" = 0 ]; then
			ok "perf from the image runs in the guest ($(log_value perf | cut -d' ' -f2-)) though none of its libraries is installed there"
		else
			vm_fail_log "the guest itself has perf libraries ($(log_value perf-libraries-in-guest)): the check proves nothing"
		fi
		;;
	*) vm_fail_log "perf from the image in the guest: $(log_value perf)" ;;
	esac
}

URL=http://127.0.0.1:$VM_PORT
AGENT_URL=$URL
if ! vm_wait_healthz 120; then
	vm_fail_log "GET /healthz answers through the forwarded port"
	exit 0
fi
code=$(curl -sS -o "$T/healthz.json" -w '%{http_code}' --max-time 10 "$URL/healthz")
[ "$code" = 200 ] && ok "GET /healthz through 127.0.0.1:$VM_PORT is 200: $(tr -d '\n' <"$T/healthz.json" | cut -c1-300)" ||
	{ not_ok "GET /healthz is $code"; diag "$T/healthz.json"; }
if grep -q '"mounted": *true' "$T/healthz.json" && grep -q '"match": *true' "$T/healthz.json"; then
	ok "/healthz reports the tools disk mounted and built for the running kernel"
else
	not_ok "/healthz does not report the disk mounted and the kernel matching"
	diag "$T/healthz.json"
fi

# The README's three commands, as a user types them (status codes kept).
# Each POST: the body in $T/NAME.pb, the status code in NAME.code, the
# headers in NAME.headers, what curl says in NAME.err.
get_status() { curl -sS --max-time 10 -o "$T/get.json" -w '%{http_code}' "$URL/profile/cpu" 2>&1; }
delete() { curl -sS -X DELETE --max-time 10 -o "$T/delete.json" -w '%{http_code}' "$URL/profile/cpu" 2>&1; }
# wait_running [PATTERN]: GET /profile/cpu says a profile is running (or
# matches PATTERN), within 30s.
wait_running() {
	local i
	for i in $(seq 150); do
		[ "$(get_status)" = 200 ] && grep -qE "${1:-\"running\": *true}" "$T/get.json" && return 0
		sleep 0.2
	done
	return 1
}

code=$(get_status)
[ "$code" = 200 ] && grep -qE '"running": *false' "$T/get.json" &&
	ok "GET /profile/cpu with none running is 200 and says so" ||
	{ not_ok "GET /profile/cpu with none running is $code"; diag "$T/get.json"; }
code=$(delete)
[ "$code" = 412 ] && ok "DELETE /profile/cpu with none running is 412" ||
	{ not_ok "DELETE /profile/cpu with none running is $code, expected 412"; diag "$T/delete.json"; }

README_BODY='{"profiler": {"BccProfile": null}, "sampling_frequency": 99, "timeout_seconds": 5, "archive": false}'
agent_post profile/cpu "$README_BODY" "$T/bcc.pb" -S --max-time 120 \
	-D "$T/bcc.headers" >"$T/bcc.code" 2>"$T/bcc.err" &
post_pid=$!
wait_running
get_ok=$?
wait $post_pid
if [ "$(cat "$T/bcc.code")" = 200 ] && [ -s "$T/bcc.pb" ] && grep -qi '^content-type: application/octet-stream' "$T/bcc.headers"; then
	ok "POST /profile/cpu with the README's body is 200 with a pprof ($(stat -c %s "$T/bcc.pb") bytes)"
else
	not_ok "POST /profile/cpu is $(cat "$T/bcc.code")"
	cat "$T/bcc.headers" "$T/bcc.err" | diag
	head -c 600 "$T/bcc.pb" | diag
fi
[ $get_ok = 0 ] && ok "GET /profile/cpu is 200 and reports the running profile: $(tr -d '\n' <"$T/get.json" | cut -c1-200)" ||
	{ not_ok "GET /profile/cpu did not report the running profile"; diag "$T/get.json"; }

# pg_functions PROFILE: the PostgreSQL functions pprof lists for PROFILE
# (names the postgres binary defines), one per line.
nm -D --defined-only /usr/lib/postgresql/15/bin/postgres | awk '$2 ~ /^[TtWw]$/ { print $3 }' | sort -u >"$T/pg.symbols"
pg_functions() {
	go tool pprof -top -nodecount=100000 -nodefraction=0 -edgefraction=0 "$1" 2>"$T/pprof.err" |
		awk 'NR > 1 && $NF != "" { print $NF }' | sort -u | comm -12 - "$T/pg.symbols"
}
check_pprof() {
	local what=$1 file=$2 n
	n=$(pg_functions "$file" | wc -l)
	if [ "$n" -ge 3 ]; then
		ok "go tool pprof -top on the $what profile shows $n PostgreSQL functions ($(pg_functions "$file" | head -n 5 | tr '\n' ' '))"
	else
		not_ok "go tool pprof -top on the $what profile shows $n PostgreSQL functions, expected >= 3"
		{ go tool pprof -top "$file" 2>&1 | head -n 30; cat "$T/pprof.err"; } | diag
	fi
}
check_pprof BccProfile "$T/bcc.pb"
# Every frame named in the guest: no location without a function (a
# stripped PostgreSQL's static functions are postgres+0xSTART).
go tool pprof -raw "$T/bcc.pb" >"$T/bcc.raw" 2>&1
if awk '/^Locations/ {on = 1; next} /^Mappings/ {on = 0}
	on && /^ +[0-9]+: / {n++; if (NF < 4 || ($3 ~ /^M=/ && NF < 5)) bad++}
	END {exit !(n > 0 && bad == 0)}' "$T/bcc.raw"; then
	ok "every location of the guest's profile has a function ($(grep -c 'postgres+0x' "$T/bcc.raw") postgres+0xSTART ones)"
else
	not_ok "a location of the guest's profile has no function"
	sed -n '/^Locations/,/^Mappings/p' "$T/bcc.raw" | head -n 30 | diag
fi
if go tool pprof -tags "$T/bcc.pb" 2>&1 | grep -q 'client backend'; then
	ok "the profile labels PostgreSQL samples with the backend type 'client backend'"
else
	not_ok "no 'client backend' label in the profile"
	go tool pprof -tags "$T/bcc.pb" 2>&1 | diag
fi

agent_post profile/cpu '{"profiler": {"BccProfile": null}, "sampling_frequency": 99, "timeout_seconds": 2, "archive": true}' "$T/archive.pb" -S --max-time 120 \
	-D "$T/archive.headers" >"$T/archive.code" 2>"$T/archive.err"
if [ "$(cat "$T/archive.code")" = 200 ] && gzip -t "$T/archive.pb" 2>"$T/gzip.err" &&
	gzip -dc "$T/archive.pb" >"$T/archive.raw" && go tool pprof -top "$T/archive.raw" >/dev/null 2>&1; then
	ok "archive: true returns a valid gzip of a pprof ($(grep -i '^content-type' "$T/archive.headers" | tr -d '\r'))"
else
	not_ok "archive: true (status $(cat "$T/archive.code"))"
	cat "$T/archive.headers" "$T/gzip.err" | diag
fi

# DELETE ends a long profile early; the POST returns what was collected.
agent_post profile/cpu '{"profiler": {"BccProfile": null}, "sampling_frequency": 99, "timeout_seconds": 60, "archive": false}' "$T/early.pb" -S --max-time 120 \
	-D "$T/early.headers" >"$T/early.code" 2>"$T/early.err" &
post_pid=$!
t0=$(date +%s)
code=none
# Sampling (not still loading the BPF program), then a second of samples.
wait_running '"state": *"running"' && sleep 1 && code=$(delete)
wait $post_pid
if [ "$code" = 200 ] && [ "$(cat "$T/early.code")" = 200 ] && [ $(($(date +%s) - t0)) -lt 50 ] &&
	go tool pprof -top "$T/early.pb" >"$T/early.top" 2>&1; then
	ok "DELETE /profile/cpu stops a running 60s profile: 200, and the POST returns 200 after $(($(date +%s) - t0))s with a pprof of $(sed -n 's/.*Total samples = \([^ ]*\) .*/\1/p' "$T/early.top") of samples"
else
	not_ok "DELETE of a running profile: DELETE $code, POST $(cat "$T/early.code")"
	cat "$T/delete.json" "$T/early.err" | diag
fi

# An off-CPU profile of the guest's PostgreSQL, its blocks labelled with
# the wait events pg_stat_activity names: the background processes' are
# always there (Activity:*); pgbench's backend waits for its client
# (Client:ClientRead) when the emulated guest gets far enough to run it.
agent_post profile/offcpu '{"timeout_seconds": 3}' "$T/offcpu.pb" -S --max-time 120 \
	-D "$T/offcpu.headers" >"$T/offcpu.code" 2>"$T/offcpu.err"
if [ "$(cat "$T/offcpu.code")" = 200 ] &&
	go tool pprof -top -sample_index=offcpu "$T/offcpu.pb" >"$T/offcpu.top" 2>"$T/offcpu.err" &&
	[ ! -s "$T/offcpu.err" ] && grep -q '^Type: offcpu' "$T/offcpu.top"; then
	ok "POST /profile/offcpu in the guest: 200, and go tool pprof -sample_index=offcpu reads it without a warning"
else
	not_ok "POST /profile/offcpu in the guest: $(cat "$T/offcpu.code")"
	cat "$T/offcpu.err" "$T/offcpu.top" 2>/dev/null | diag
fi
go tool pprof -tags "$T/offcpu.pb" >"$T/offcpu.tags" 2>&1
if grep -qE 'Activity:(CheckpointerMain|AutoVacuumMain|WalWriterMain|BgWriterMain|BgWriterHibernate|LogicalLauncherMain)' "$T/offcpu.tags" &&
	grep -q 'sched_state' "$T/offcpu.tags"; then
	ok "the guest's off-CPU profile labels wait events: $(grep -oE '(Client|Activity|IO|LWLock|Lock|IPC|Timeout):[A-Za-z]+' "$T/offcpu.tags" | sort -u | head -n 6 | tr '\n' ' ')"
else
	not_ok "no Activity:* wait_event or sched_state labels in the guest's off-CPU profile"
	diag "$T/offcpu.tags"
fi

if go tool pprof -top "$URL/debug/pprof/profile?seconds=2" >"$T/go-pprof.out" 2>&1 &&
	grep -q '^Type: cpu' "$T/go-pprof.out"; then
	ok "go tool pprof fetches $URL/debug/pprof/profile?seconds=2 from the VM"
else
	not_ok "go tool pprof against /debug/pprof/profile"
	diag "$T/go-pprof.out"
fi

agent_post profile/cpu '{"profiler": {"Perf": null}, "sampling_frequency": 99, "timeout_seconds": 5, "archive": false}' "$T/perf.pb" -S --max-time 120 \
	-D "$T/perf.headers" >"$T/perf.code" 2>"$T/perf.err"
if [ "$(cat "$T/perf.code")" = 200 ]; then
	check_pprof Perf "$T/perf.pb"
else
	not_ok "the Perf backend in the guest: POST is $(cat "$T/perf.code")"
	head -c 600 "$T/perf.pb" | diag
fi

# The guest agent runs with --continuous: by now windows are sealed.
code=$(curl -sS -o "$T/history.json" -w '%{http_code}' --max-time 10 "$URL/profile/cpu/history")
if [ "$code" = 200 ] && python3 -c "import json,sys; d=json.load(open('$T/history.json'));
sys.exit(0 if d['continuous'] and d['frequency']==19 and len(d['windows'])>=1 else 1)"; then
	ok "GET /profile/cpu/history: the guest agent profiles continuously ($(python3 -c "import json; print(len(json.load(open('$T/history.json'))['windows']))") windows)"
else
	not_ok "GET /profile/cpu/history: $code"
	diag "$T/history.json"
fi
code=$(curl -sS -o "$T/last5m.pb" -w '%{http_code}' --max-time 30 "$URL/profile/cpu/history/profile?from=-5m")
if [ "$code" = 200 ]; then
	check_pprof "continuous history (last 5 minutes)" "$T/last5m.pb"
else
	not_ok "GET /profile/cpu/history/profile?from=-5m: $code"
	head -c 600 "$T/last5m.pb" | diag
fi

# The web UI, which the guest's agent serves from the tools disk (no
# --ui-dir there: MOUNTPOINT/usr/share/vmtools/ui), through the forwarded port.
code=$(curl -s -o "$T/ui.html" -w '%{http_code}' --max-time 30 "$URL/ui/")
if [ "$code" = 200 ] && cmp -s "$T/ui.html" "$BUILD/ui/index.html"; then
	ok "the guest's agent serves the web UI from the tools disk at $URL/ui/"
else
	not_ok "GET $URL/ui/ from the guest: $code"
	head -c 600 "$T/ui.html" | diag
fi
if [ -n "$(need_browser)" ]; then
	skip "the guest's web UI in Chromium" "$(need_browser)"
else
	SCREENSHOT_PREFIX=vm- run_browser ui.mjs "$URL"
fi

if vm_alive; then
	ok "the VM is still running after the checks ($(($(date +%s) - started))s in all)"
else
	vm_fail_log "the VM died during the checks"
fi
