#!/usr/bin/env bash
# tests/integration/78-nofp-vdso.sh - frames in the vDSO are unwound with
# its own table, with both backends (a test program of our own).  The
# vDSO has no file: its table is built from the agent's own (the same
# image in every process on one kernel).  `tests/programs/nofp --vdso`
# (built -O2 -fomit-frame-pointer) calls clock_gettime() in a loop, which
# libc answers in the vDSO without a system call; `nofp --vdso --expect`
# prints the chain from main down to the loop, nofp_vdso_inner.  For each
# backend (-p bpf, -p perf; pprof read with `go tool pprof -raw`), every
# sample whose innermost user frame is in the [vdso] mapping is exactly
# libc's outermost frames (from _start), the chain, one frame of libc's
# (its clock_gettime) and then only frames of the vDSO.  Without the
# table, the vDSO's frame pointer is followed instead, which loses the
# caller wherever it is not set up (the function's first instruction, the
# epilogue past `pop %rbp`): some samples in a hundred, and the pprof's
# comment counts one caller a sample found by frame pointer; with it, at
# most 1% of the callers are.  At least 30% of the samples are in the
# vDSO, so the verdict is about something.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/user-stacks.sh"

NOFP=$BUILD/programs/nofp
skip_unless "vDSO frames unwound by table" "$(need_root)" \
	"$([ -x "$NOFP" ] || echo "needs $NOFP (make tests)")" "$(need_cmd go)"
bpf_why=$(need_bpf)
perf_why=$(need_perf)
[ -n "$bpf_why" ] && [ -n "$perf_why" ] &&
	skip_unless "vDSO frames unwound by table" "$bpf_why; $perf_why"
pprof_home # perf keeps its build-id cache in HOME too

SECONDS_EACH=4
FREQ=499
COMM=c78vdso$$
COMM=${COMM:0:15}
read -r _ _ chain < <("$NOFP" --vdso --expect)
"$NOFP" --vdso --seconds 60 --comm "$COMM" &
at_exit "kill $!"
sleep 0.3

for b in bpf perf; do
	why=bpf_why
	[ "$b" = perf ] && why=perf_why
	if [ -n "${!why}" ]; then
		skip "$b: vDSO frames unwound by table" "${!why}"
		continue
	fi
	if ! "$VMTOOLS_AGENT" profile -p "$b" -c "$COMM" -s "$SECONDS_EACH" \
		-F "$FREQ" -o "$T/$b.pb" 2>"$T/$b.err" ||
		! user_stacks "$T/$b.pb" "$T/$b.stacks"; then
		not_ok "$b: profiles nofp --vdso"
		diag "$T/$b.err"
		continue
	fi
	ok "$b: profiles nofp --vdso ($(grep -o '[0-9]* samples ([0-9]* lost)' "$T/$b.err"))"

	# "ALL VDSO EXACT", and the first three wrong stacks in $b.bad.
	read -r all got exact < <(awk -v chain="$chain" -v bad="$T/$b.bad" '
		{ n = $1; all += n; k = split($2, f, ";")
		  split(f[k], leaf, "@"); if (leaf[2] != "[vdso]") next
		  got += n
		  # The names down to main, then the chain, in nofp.
		  for (i = 1; i <= k && f[i] != "main@nofp"; i++) ;
		  c = split(chain, want, ";"); good = f[1] == "_start@nofp" && i <= k
		  for (j = 1; good && j <= c; j++) good = f[i + j - 1] == want[j] "@nofp"
		  # One frame of libc, then the vDSO only.
		  i += c; good = good && i < k && f[i] ~ /@libc\.so/
		  for (i++; good && i <= k; i++) good = f[i] ~ /@\[vdso\]$/
		  if (good) exact += n
		  else if (shown++ < 3) printf "%d sample(s): %s\n", n, $2 >bad }
		END { print all + 0, got + 0, exact + 0 }' "$T/$b.stacks")
	check "$b: at least 30% of the samples are in the vDSO ($got of $all)" \
		test $((got * 100)) -ge $((all * 30))
	if [ "$got" -gt 0 ] && [ "$exact" = "$got" ]; then
		ok "$b: $exact of $got samples in the vDSO are the exact chain from _start"
	else
		not_ok "$b: $exact of $got samples in the vDSO are the exact chain from _start"
		[ -s "$T/$b.bad" ] && diag "$T/$b.bad"
	fi
	read -r by_table by_fp cut < <(unwind_comment "$T/$b.pb")
	check "$b: the pprof's comment: ${by_table:-?} callers found by unwind tables, ${by_fp:-?} by frame pointer (at most 1%), ${cut:-?} walks cut" \
		test "$((${by_fp:-1} * 100))" -le "$((${by_table:-0}))"
done
