#!/usr/bin/env bash
# tests/integration/76-nofp-chains.sh - every sampled stack of code built
# without frame pointers is exactly its known chain, with both backends
# (a test program of our own).  tests/programs/nofp
# --chains, built -O2 -fomit-frame-pointer as is libnofp.so
# (tests/programs/nofplib.c), burns CPU in turn in five chains, each
# ending in a leaf of its own; `nofp --expect` prints each chain from main
# (or the thread's function) down to its leaf:
#   - recursion exactly 100 calls deep;
#   - a call through the PLT into libnofp.so, three calls deep there;
#   - a SIGALRM handler, below __restore_rt and the loop it interrupted;
#   - two frames sized by alloca (%rbp-based CFA) above a leaf;
#   - a second thread, below libc's start_thread.
# For each backend (-p bpf, -p perf; folded), and each chain, every sample
# whose stack holds the chain's leaf is exactly COMM, libc's outermost
# frames, then the chain, then nothing but kernel frames (a sample taken
# in an interrupt's exit); libc's frames above main and above the thread's
# function are whatever both backends name them, the same in every
# sample.  Each chain has at least 10% of the samples, so no verdict is
# about nothing, and at least 99% of all samples reach main or the
# thread's function.
. "$(dirname "$0")/../lib/tap.sh"

NOFP=$BUILD/programs/nofp
skip_unless "exact chains without frame pointers" "$(need_root)" \
	"$([ -x "$NOFP" ] || echo "needs $NOFP (make tests)")"
bpf_why=$(need_bpf)
perf_why=$(need_perf)
[ -n "$bpf_why" ] && [ -n "$perf_why" ] &&
	skip_unless "exact chains without frame pointers" "$bpf_why; $perf_why"
export HOME=$T # perf keeps its build-id cache there

SECONDS_EACH=6
COMM=c76nofp$$
COMM=${COMM:0:15}
"$NOFP" --expect >"$T/expect"
"$NOFP" --chains --seconds 120 --comm "$COMM" &
at_exit "kill $!"
sleep 0.3
# The kernel's names: a sample taken in the kernel ends with them.
awk '{ print $3 }' /proc/kallsyms >"$T/kallsyms"

backends=()
for b in bpf perf; do
	why=bpf_why
	[ "$b" = perf ] && why=perf_why
	if [ -n "${!why}" ]; then
		skip "$b: exact chains without frame pointers" "${!why}"
		continue
	fi
	"$VMTOOLS_AGENT" profile -p "$b" -c "$COMM" -s "$SECONDS_EACH" -f folded \
		-o "$T/$b.folded" 2>"$T/$b.err"
	if grep -q '^[0-9a-z]' "$T/$b.folded" 2>/dev/null; then
		ok "$b: profiles nofp --chains ($(grep -o '[0-9]* samples ([0-9]* lost)' "$T/$b.err"))"
		backends+=("$b")
	else
		not_ok "$b: profiles nofp --chains"
		diag "$T/$b.err"
	fi
done
[ ${#backends[@]} -gt 0 ] || exit 0

# outer FILE FIRST: the frames between COMM and FIRST (main or the
# thread's function) in most samples of FILE.
outer() {
	awk -v first="$2" '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";")
		for (i = 2; i <= k; i++) if (f[i] == first) break
		if (i > 2 && i <= k) { p = f[2]; for (j = 3; j < i; j++) p = p ";" f[j]; c[p] += n } }
		END { for (p in c) if (c[p] > best) { best = c[p]; o = p }; print o }' "$1"
}

main_outer=$(outer "$T/${backends[0]}.folded" main)
thread_outer=$(outer "$T/${backends[0]}.folded" nofp_thread_main)
for b in "${backends[@]}"; do
	diag <<<"$b: libc's frames above main: $(outer "$T/$b.folded" main); above the thread: $(outer "$T/$b.folded" nofp_thread_main)"
done
if [ ${#backends[@]} = 2 ]; then
	check "both backends name libc's frames above main alike ($main_outer)" \
		test "$(outer "$T/perf.folded" main)" = "$main_outer"
	check "both backends name libc's frames above the thread alike ($thread_outer)" \
		test "$(outer "$T/perf.folded" nofp_thread_main)" = "$thread_outer"
fi
starts_with() { [[ $1 == "$2"* ]]; }
ends_with() { [[ $1 == *"$2" ]]; }
check "the stacks above main start at _start ($main_outer)" \
	starts_with "$main_outer" _start
check "the thread's stacks start at start_thread or above ($thread_outer)" \
	ends_with "$thread_outer" start_thread

# judge FILE: per chain of $T/expect, "NAME SAMPLES EXACT SHARE%", then
# "all ALL REACHED"; the first two wrong stacks of each chain (with the
# one expected) and the first three reaching neither main nor the thread's
# function in FILE.bad.
judge() {
	awk -v comm="$COMM" -v mo="$main_outer" -v to="$thread_outer" -v bad="$1.bad" '
		# runs of one frame as NAME*N, to be read
		function short(s,   k, f, i, o, r) { k = split(s, f, ";")
			for (i = 1; i <= k; i += r) { for (r = 1; f[i + r] == f[i]; r++) ;
				o = o (i > 1 ? ";" : "") f[i] (r > 1 ? "*" r : "") }
			return o }
		FILENAME == ARGV[1] { kernel[$1] = 1; next }
		FILENAME == ARGV[2] { name[$2] = $1; order[++chains] = $2
			want[$2] = comm ";" ($3 ~ /^main;/ ? mo : to) ";" $3; next }
		{ n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, f, ";")
		  all += n
		  if (index(line, comm ";" mo ";main;") == 1 ||
		      index(line, comm ";" to ";nofp_thread_main;") == 1) reached += n
		  else if (unreached++ < 3)
			printf "%d sample(s) reaching neither: %s\n", n, short(line) >bad
		  for (i = k; i >= 2; i--) if (f[i] in name) break
		  if (i < 2) next
		  leaf = f[i]; got[leaf] += n
		  user = f[1]; for (j = 2; j <= i; j++) user = user ";" f[j]
		  good = user == want[leaf]
		  for (j = i + 1; j <= k; j++) if (!(f[j] in kernel)) good = 0
		  if (good) { exact[leaf] += n; next }
		  if (shown[leaf]++ < 2)
			printf "%s: %d sample(s)\n  got:  %s\n  want: %s\n", name[leaf], n, short(line), short(want[leaf]) >bad }
		END { for (c = 1; c <= chains; c++) { l = order[c]
			printf "%s %d %d %d\n", name[l], got[l], exact[l], all ? 100 * got[l] / all : 0 }
		      printf "all %d %d\n", all, reached }' "$T/kallsyms" "$T/expect" "$1"
}

declare -A what=(
	[recursion]="the 100-deep recursion"
	[plt]="the call through the PLT into libnofp.so"
	[signal]="the signal handler (via __restore_rt)"
	[alloca]="the alloca frames"
	[thread]="the second thread"
)
for b in "${backends[@]}"; do
	: >"$T/$b.folded.bad"
	judge "$T/$b.folded" >"$T/$b.judged"
	while read -r name got exact share; do
		if [ "$name" = all ]; then
			check "$b: at least 99% of all samples reach main or the thread's function ($exact of $got)" \
				test $((exact * 100)) -ge $((got * 99))
			grep 'reaching neither' "$T/$b.folded.bad" | diag
			continue
		fi
		check "$b: at least 10% of the samples are in ${what[$name]} ($got, $share%)" \
			test "$share" -ge 10
		if [ "$got" -gt 0 ] && [ "$exact" = "$got" ]; then
			ok "$b: $exact of $got samples of ${what[$name]} are the exact chain"
		else
			not_ok "$b: $exact of $got samples of ${what[$name]} are the exact chain"
			grep -A2 "^$name:" "$T/$b.folded.bad" | diag
		fi
	done <"$T/$b.judged"
done
