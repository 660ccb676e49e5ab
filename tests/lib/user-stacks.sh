# shellcheck shell=bash
# tests/lib/user-stacks.sh - the user stacks of a vmtools pprof with the
# file each frame is in, for the tests that judge frames by where they
# are, not only by name (77-nofp-dlopen.sh: a library loaded during the
# profile; 78-nofp-vdso.sh: the vDSO, which no file on disk holds).
# Sourced after tap.sh; needs `go tool pprof` (pprof_home first).
#
#   user_stacks PB OUT   `go tool pprof -raw PB` (kept in PB.raw; fails on
#                        a warning or an error) into OUT, a sample a line:
#                        "COUNT FRAME;FRAME;..." outermost first, each
#                        FRAME NAME@FILE, FILE the basename of its
#                        mapping's file ([vdso], libc.so.6, ...; ? for a
#                        frame in no mapping); kernel frames left out
#   unwind_comment PB    the pprof's comment on how user stacks were
#                        unwound, "TABLE FRAME_POINTER CUT": callers found
#                        by unwind tables, by frame pointer, walks cut

user_stacks() {
	go tool pprof -raw "$1" >"$1.raw" 2>"$1.err" && ! grep -qi 'warn\|error' "$1.err" || return 1
	awk '
		/^Samples:/ { part = "s"; next }
		/^Locations/ { part = "l"; next }
		/^Mappings/ { part = "m"; next }
		part == "s" && /^ +[0-9]+ +[0-9]+: / {
			n++; count[n] = $1; locs[n] = ""
			for (i = 3; i <= NF; i++) locs[n] = locs[n] " " $i
			next }
		# "ID: ADDRESS M=MAP NAME :LINE s=START", or "[unknown]" and no M=.
		part == "l" && /^ +[0-9]+: 0x/ { id = $1; sub(":", "", id)
			map[id] = ""; name[id] = "?"
			if ($3 ~ /^M=/) { map[id] = substr($3, 3); name[id] = $4 }
			else name[id] = $3
			next }
		part == "m" && /^[0-9]+: / { id = $1; sub(":", "", id)
			f = $3; sub(/.*\//, "", f); file[id] = f }
		END { for (s = 1; s <= n; s++) {
			k = split(locs[s], l, " "); out = ""
			for (i = k; i >= 1; i--) {
				f = map[l[i]] == "" ? "?" : file[map[l[i]]]
				if (f == "[kernel.kallsyms]") continue
				out = out (out == "" ? "" : ";") name[l[i]] "@" f }
			print count[s], out } }' "$1.raw" >"$2"
}

unwind_comment() {
	sed -n 's/^Comment: vmtools: user stacks unwound with .eh_frame: \([0-9]*\) callers found by unwind tables, \([0-9]*\) by frame pointer; \([0-9]*\) stacks cut.*/\1 \2 \3/p' "$1.raw"
}
