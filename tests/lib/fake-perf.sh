# shellcheck shell=bash
# tests/lib/fake-perf.sh - stand-ins for perf that fail the ways the real
# one does, for the perf backend's error paths; sourced after tap.sh.
#
#   make_fake_perfs   makes, under $T, directories to put on PATH in place
#                     of the real perf's:
#     none/           no perf at all
#     paranoid/perf   refused by perf_event_paranoid, before recording
#     garbage/perf    speaks perf's --control protocol, then writes
#                     something that is not a perf.data; says "fake perf:
#                     stopped" when stopped
#     dies/perf       speaks the protocol, then exits 1 while recording
#                     with perf's "Cannot allocate memory"

make_fake_perfs() {
	mkdir -p "$T/none" "$T/paranoid" "$T/garbage" "$T/dies"
	cat >"$T/paranoid/perf" <<'SH'
#!/bin/sh
echo "Error: Access to performance monitoring and observability operations is limited." >&2
echo "Consider adjusting /proc/sys/kernel/perf_event_paranoid setting." >&2
exit 255
SH
	cat >"$T/garbage/perf" <<'SH'
#!/bin/bash
while [ $# -gt 0 ]; do case $1 in --control) c=${2#fd:}; shift ;; -o) o=$2; shift ;; esac; shift; done
echo "not a perf.data file" >"$o"
read -r _ <&"${c%,*}"; echo ack >&"${c#*,}"
trap 'echo "fake perf: stopped" >&2; exit 0' INT
while :; do /bin/sleep 0.1; done
SH
	cat >"$T/dies/perf" <<'SH'
#!/bin/bash
while [ $# -gt 0 ]; do case $1 in --control) c=${2#fd:}; shift ;; esac; shift; done
read -r _ <&"${c%,*}"; echo ack >&"${c#*,}"
/bin/sleep 0.3
echo "fake perf: failed to mmap with 12 (Cannot allocate memory)" >&2
exit 1
SH
	chmod +x "$T"/paranoid/perf "$T"/garbage/perf "$T"/dies/perf
}
