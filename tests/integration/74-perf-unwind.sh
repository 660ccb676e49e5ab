#!/usr/bin/env bash
# tests/integration/74-perf-unwind.sh - complete stacks for code built
# without frame pointers, with the perf backend:
# tests/programs/nofp, built -O2 -fomit-frame-pointer as most code is, has
# known call chains (main -> nofp_outer -> nofp_middle -> ten
# nofp_recurse -> nofp_leaf, and nofp_middle -> libc's qsort ->
# nofp_compare).  The agent sees that its executable sets up a frame
# pointer in almost none of its functions, records with perf's
# --call-graph dwarf and walks each copied user stack with unwind tables
# from .eh_frame (agent/unwind/unwind_table.c, unwind.c):
#   - at least 99% of the samples reach main and _start, the recursion
#     exactly ten deep, and libc's qsort between nofp_middle and
#     nofp_compare;
#   - the pprof's comment counts the callers found by the tables;
#   - a binary with frame pointers (the burner) is recorded with dwarf too,
#     because the libc it maps (Debian's) has none: its pprof has the
#     comment, and its samples are named.
# The eBPF backend's figure, for comparison, is reported, not judged here
# (76-nofp-chains.sh judges both backends' stacks frame by frame).
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"

skip_unless "perf's dwarf stacks walked with .eh_frame" "$(need_perf)" \
	"$(need_cmd go)" "$(need_burn)"
NOFP=$BUILD/programs/nofp
[ -x "$NOFP" ] || skip_unless "perf's dwarf stacks" "needs $NOFP (make tests)"
export HOME=$T # go tool pprof keeps its cache there

COMM=c24nofp$$
COMM=${COMM:0:15}
"$NOFP" --seconds 60 --comm "$COMM" &
at_exit "kill $!"
sleep 0.3

"$VMTOOLS_AGENT" profile -p perf -c "$COMM" -s 3 -f folded -o "$T/perf.folded" 2>"$T/perf.err"
check "the perf backend profiles it" grep -q '^[0-9a-z]' "$T/perf.folded"
read -r all main exact qsort < <(awk -v c="$COMM" '
	{ n = $NF; all += n
	  if (index($0, c ";_start;__libc_start_main;__libc_start_call_main;main;nofp_outer;nofp_middle;") == 1) main += n
	  if ($0 ~ /;nofp_leaf /) { k = gsub(/;nofp_recurse/, "&"); if (k == 10 && $0 ~ /;nofp_middle;nofp_recurse;/) exact += n; leaf += n }
	  if ($0 ~ /;nofp_compare /) { cmp += n; if ($0 ~ /;nofp_middle;qsort_r;/) q += n } }
	END { printf "%d %d %d %d\n", all, main, exact - leaf, q - cmp }' "$T/perf.folded")
diag <<<"perf --call-graph dwarf: $main of $all samples reach main and _start"
check "at least 99% of $all samples reach main and _start ($main)" \
	test $((main * 100)) -ge $((all * 99))
check "every nofp_leaf sample has the recursion exactly ten deep under nofp_middle" test "$exact" = 0
check "every nofp_compare sample has libc's qsort between it and nofp_middle" test "$qsort" = 0

"$VMTOOLS_AGENT" profile -p perf -c "$COMM" -s 2 -o "$T/perf.pb" 2>/dev/null
go tool pprof -raw "$T/perf.pb" >"$T/perf.raw" 2>/dev/null
check "the pprof's comment counts the callers found by unwind tables" \
	grep -Eq 'Comment: vmtools: user stacks unwound with .eh_frame: [1-9][0-9]* callers found by unwind tables' "$T/perf.raw"

"$VMTOOLS_AGENT" profile -p bpf -c "$COMM" -s 2 -f folded -o "$T/bpf.folded" 2>/dev/null
read -r ball bmain < <(awk '{ n = $NF; all += n; if ($0 ~ /;main;/) m += n } END { printf "%d %d\n", all, m }' "$T/bpf.folded")
diag <<<"the eBPF backend, for comparison: $bmain of $ball samples reach main"

BCOMM=c24fp$$
BCOMM=${BCOMM:0:15}
"$BURN" --threads 1 --seconds 30 --comm "$BCOMM" >/dev/null &
at_exit "kill $!"
sleep 0.3
"$VMTOOLS_AGENT" profile -p perf -c "$BCOMM" -s 2 -o "$T/fp.pb" 2>/dev/null
go tool pprof -raw "$T/fp.pb" >"$T/fp.raw" 2>/dev/null
check "a binary with frame pointers but a libc without is recorded with dwarf: samples, and the unwind comment" \
	bash -c "grep -q burn_hot '$T/fp.raw' && grep -q 'unwound with .eh_frame' '$T/fp.raw'"
