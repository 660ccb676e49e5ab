#!/usr/bin/env bash
# tests/integration/77-nofp-dlopen.sh - a library loaded with dlopen()
# while a profile runs is unwound with its own table (a test program of
# our own).  `tests/programs/nofp --dlopen 1` (built -O2
# -fomit-frame-pointer) runs its own code for a second, then loads
# libnofpdl.so (tests/programs/nofpdl.c, built the same way, not linked)
# and burns CPU in it three calls deep, called through the pointer
# dlsym() gives; `nofp --dlopen 1 --expect` prints that chain from main.
# A 4 s profile starts before the load (the library not yet mapped, which
# the test checks).  With the eBPF backend, the first pc in the library
# is in no mapping the agent gave the programs: they ask it to read the
# process's mappings again (PROFILE_EVENT_MAPS), and it adds the
# library's table.  For each backend (-p bpf, -p perf; pprof read with
# `go tool pprof -raw`), at least 95% of the samples whose innermost user
# frame is in libnofpdl.so are exactly libc's outermost frames (from
# _start), then the chain from main down to that frame (the samples
# before the programs have the table go without); the library holds at
# least 40% of the samples; and the pprof's comment counts callers found
# by tables, at least those of the exact samples in the library, and at
# most 2% found by frame pointer.  Without the table, the library's frames
# are walked by frame pointer and lose every caller.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/user-stacks.sh"

NOFP=$BUILD/programs/nofp
skip_unless "a library loaded during the profile unwound by table" \
	"$(need_root)" "$(need_cmd go)" \
	"$([ -x "$NOFP" ] && [ -f "$BUILD/programs/libnofpdl.so" ] ||
		echo "needs $NOFP and libnofpdl.so (make tests)")"
bpf_why=$(need_bpf)
perf_why=$(need_perf)
[ -n "$bpf_why" ] && [ -n "$perf_why" ] &&
	skip_unless "a library loaded during the profile unwound by table" \
		"$bpf_why; $perf_why"
pprof_home # perf keeps its build-id cache in HOME too

LOAD_AT=1
SECONDS_PROFILED=4
FREQ=299
read -r _ _ chain < <("$NOFP" --dlopen "$LOAD_AT" --expect)

for b in bpf perf; do
	why=bpf_why
	[ "$b" = perf ] && why=perf_why
	if [ -n "${!why}" ]; then
		skip "$b: a library loaded during the profile unwound by table" "${!why}"
		continue
	fi
	# A process of its own for each backend: it loads the library once.
	comm=c77$b$$
	comm=${comm:0:15}
	"$NOFP" --dlopen "$LOAD_AT" --seconds $((SECONDS_PROFILED + 4)) \
		--comm "$comm" &
	pid=$!
	at_exit "kill $pid"
	sleep 0.2
	check "$b: libnofpdl.so is not mapped when the profile starts" \
		eval "! grep -q libnofpdl.so /proc/$pid/maps"
	if ! "$VMTOOLS_AGENT" profile -p "$b" -c "$comm" -s "$SECONDS_PROFILED" \
		-F "$FREQ" -o "$T/$b.pb" 2>"$T/$b.err" ||
		! user_stacks "$T/$b.pb" "$T/$b.stacks"; then
		not_ok "$b: profiles nofp --dlopen $LOAD_AT"
		diag "$T/$b.err"
		continue
	fi
	ok "$b: profiles nofp --dlopen $LOAD_AT ($(grep -o '[0-9]* samples ([0-9]* lost)' "$T/$b.err"))"
	check "$b: libnofpdl.so was mapped during the profile" \
		grep -q libnofpdl.so "/proc/$pid/maps"

	# "ALL IN_LIB EXACT CALLERS": CALLERS those of the exact samples in
	# the library (each frame's but the outermost); the first three wrong
	# stacks in $b.bad.
	read -r all got exact callers < <(awk -v chain="$chain" -v bad="$T/$b.bad" '
		{ n = $1; all += n; k = split($2, f, ";")
		  split(f[k], leaf, "@"); if (leaf[2] != "libnofpdl.so") next
		  got += n
		  # From main: the chain down to the leaf, in nofp, then the
		  # library; libc above main.
		  for (i = 1; i <= k && f[i] != "main@nofp"; i++) ;
		  good = f[1] == "_start@nofp" && i <= k
		  for (j = 2; good && j < i; j++) good = f[j] ~ /@libc\.so/
		  c = split(chain, want, ";")
		  for (j = 1; good && i <= k; i++) {
			split(f[i], g, "@")
			good = j <= c && g[1] == want[j++] &&
			       g[2] == (want[j - 1] ~ /^nofpdl_/ ? "libnofpdl.so" : "nofp") }
		  if (good) { exact += n; callers += n * (k - 1) }
		  else if (shown++ < 3) printf "%d sample(s): %s\n", n, $2 >bad }
		END { print all + 0, got + 0, exact + 0, callers + 0 }' "$T/$b.stacks")
	check "$b: at least 40% of the samples are in libnofpdl.so ($got of $all)" \
		test $((got * 100)) -ge $((all * 40))
	pct=$((got ? exact * 1000 / got : 0))
	pct=$((pct / 10)).$((pct % 10))
	if [ "$got" -gt 0 ] && [ $((exact * 100)) -ge $((got * 95)) ]; then
		ok "$b: $exact of $got samples in libnofpdl.so ($pct%, at least 95%) are the exact chain from _start"
	else
		not_ok "$b: $exact of $got samples in libnofpdl.so ($pct%, at least 95%) are the exact chain from _start"
	fi
	[ -s "$T/$b.bad" ] && diag "$T/$b.bad"
	read -r by_table by_fp cut < <(unwind_comment "$T/$b.pb")
	check "$b: the pprof's comment: ${by_table:-?} callers found by unwind tables (at least the $callers of the exact samples in the library), ${by_fp:-?} by frame pointer (at most 2%), ${cut:-?} walks cut" \
		test "${by_table:-0}" -ge "$callers" -a \
		"$((${by_fp:-1} * 50))" -le "${by_table:-0}"
done
