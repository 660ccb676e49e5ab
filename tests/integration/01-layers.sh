#!/usr/bin/env bash
# tests/integration/01-layers.sh - include lines only reach down the layers.
#
# The agent's folders are layers (docs/architecture.md); a file may include
# headers of its own folder and of lower layers, never of a higher layer or
# of a sibling at the same height.  Each folder's layer, lowest first:
#   0 common          shared with the image builder
#   1 agent/iopool    reads of a target's files on workers that may hang
#   1 agent/binaries  one home per binary, its facets bounded together
#                     (a sibling of iopool)
#   2 agent/samples   the sample model and process capture
#   3 agent/unwind    unwind tables, their cache, the user-space walk, the vDSO
#   4 agent/symbolize names for addresses
#   5 agent/encode    pprof, folded, gzip
#   6 agent/profile   the engine and its backends (bpf/, perf/)
#   6 agent/setup     mount, verify, link (a sibling of profile)
#   6 agent/history   continuous profiling windows kept (a sibling too)
#   7 agent/continuous the always-on session: windows kept, stored, pushed
#   7 agent/oom       OOM reports: victims described, kept, served (a sibling)
#   8 agent/serve     the REST service
#   9 agent           the subcommands and main.c
# And the two binaries share code only through common/: imagebuilder/
# includes itself and common/, agent/ never includes imagebuilder/.
# A backend's folder (agent/profile/bpf/, agent/profile/perf/) is its own:
# no file outside agent/profile/ includes its headers (what a backend
# reports goes through engine.h and backend.h), but the tests of its parts
# (tests/unit/, tests/fuzz/) may; a file made to break the rule shows the
# check catches it.
# Inside a folder too the files form a stack: no two source files call
# each other (A calls a function B defines and B one A defines), read from
# the symbols of the built objects under $BUILD/obj with nm.
. "$(dirname "$0")/../lib/tap.sh"
cd "$SRC"

# layer FOLDER: print "RANK GROUP" for a folder (a group is a top folder).
layer() {
	case $1 in
	common) echo "0 common" ;;
	agent/iopool) echo "1 iopool" ;;
	agent/binaries) echo "1 binaries" ;;
	agent/samples) echo "2 samples" ;;
	agent/unwind) echo "3 unwind" ;;
	agent/symbolize) echo "4 symbolize" ;;
	agent/encode) echo "5 encode" ;;
	agent/profile | agent/profile/*) echo "6 profile" ;;
	agent/setup) echo "6 setup" ;;
	agent/history) echo "6 history" ;;
	agent/continuous) echo "7 continuous" ;;
	agent/oom) echo "7 oom" ;;
	agent/serve) echo "8 serve" ;;
	agent) echo "9 agent" ;;
	*) echo "" ;;
	esac
}

bad=$T/bad
: >"$bad"
unknown=$T/unknown
: >"$unknown"
files=$(git ls-files 'agent/*.[ch]' 'common/*.[ch]' 2>/dev/null)
[ -n "$files" ] || files=$(find agent common -name '*.[ch]')
for f in $files; do
	from=$(layer "$(dirname "$f")")
	if [ -z "$from" ]; then
		echo "$f: its folder has no layer in $0" >>"$unknown"
		continue
	fi
	grep -n '^#include "\(agent\|common\)/' "$f" | while IFS= read -r line; do
		inc=${line#*\"}
		inc=${inc%\"*}
		to=$(layer "$(dirname "$inc")")
		if [ -z "$to" ]; then
			echo "$f:${line%%:*}: includes $inc, whose folder has no layer" >>"$bad"
		elif [ "${to#* }" != "${from#* }" ] && [ "${to%% *}" -ge "${from%% *}" ]; then
			echo "$f:${line%%:*}: ${from#* } (layer ${from%% *}) includes $inc (${to#* }, layer ${to%% *})" >>"$bad"
		fi
	done
done

# The two binaries share code only through common/: the image builder
# includes itself and common/, the agent never includes the image builder,
# and common/ includes neither.
split=$T/split
: >"$split"
files=$(git ls-files 'agent/*.[ch]' 'common/*.[ch]' 'imagebuilder/*.[ch]' 2>/dev/null)
[ -n "$files" ] || files=$(find agent common imagebuilder -name '*.[ch]')
for f in $files; do
	case $f in
	imagebuilder/*) wrong='^#include "agent/' ;;
	agent/*) wrong='^#include "imagebuilder/' ;;
	common/*) wrong='^#include "\(agent\|imagebuilder\)/' ;;
	esac
	grep -n "$wrong" "$f" | sed "s|^|$f:|" >>"$split"
done

# backend_private FILE...: each include line of FILE... (outside
# agent/profile/ and the backend's tests) that reaches into a backend's own
# folder, as a sentence.
backend_private() {
	local f
	for f; do
		case $f in
		agent/profile/* | tests/unit/* | tests/fuzz/*) continue ;;
		esac
		grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"agent/profile/\(bpf\|perf\)/' "$f" |
			sed 's|^\([0-9]*\):[^"]*"\([^"]*\)".*|'"$f"':\1: includes \2, a private header of a backend; use agent/profile/engine.h (or backend.h)|'
	done
}

private=$T/private
files=$(git ls-files '*.[ch]' 2>/dev/null)
[ -n "$files" ] || files=$(find agent common imagebuilder bpf bench tests -name '*.[ch]')
# shellcheck disable=SC2086 # one path a word
backend_private $files >"$private"
mkdir -p "$T/agent/serve"
printf '#include "agent/profile/engine.h"\n#include "agent/profile/bpf/bpf_pg.h"\n' >"$T/agent/serve/health.c"
backend_private "$T/agent/serve/health.c" >"$T/caught"

# Calls in circles: for every product source file, the functions its
# object defines (T, W) and the ones it calls outside itself (U); a pair
# of files where each calls one the other defines is refused.  Only the
# objects of files git knows are read, so a stale object of a removed file
# does not count.
pairs=$T/pairs
syms=$T/syms
: >"$pairs"
: >"$syms"
missing=0
files=$(git ls-files 'agent/*.c' 'common/*.c' 'imagebuilder/*.c' 2>/dev/null)
[ -n "$files" ] || files=$(find agent common imagebuilder -name '*.c')
for f in $files; do
	o=$BUILD/obj/${f%.c}.o
	case $f in imagebuilder/launcher/*) continue ;; esac
	if [ ! -f "$o" ]; then
		missing=$((missing + 1))
		continue
	fi
	nm "$o" | awk -v f="$f" '
		$1 == "U" { print "U", $2, f }
		NF == 3 && ($2 == "T" || $2 == "W") { print "D", $3, f }' >>"$syms"
done
awk '
	$1 == "D" { def[$2] = $3 }
	$1 == "U" { n++; use[n] = $2; user[n] = $3 }
	END {
		for (i = 1; i <= n; i++) {
			b = def[use[i]]
			if (b == "" || b == user[i])
				continue
			k = user[i] " " b
			if (index(" " calls[k] " ", " " use[i] " ") == 0)
				calls[k] = calls[k] (calls[k] == "" ? "" : " ") use[i]
		}
		for (k in calls) {
			split(k, ab, " ")
			r = ab[2] " " ab[1]
			if ((r in calls) && ab[1] < ab[2])
				printf "%s and %s call each other: %s calls %s; %s calls %s\n",
					ab[1], ab[2], ab[1], calls[k], ab[2], calls[r]
		}
	}' "$syms" | sort >"$pairs"

if [ -s "$unknown" ]; then
	not_ok "every agent folder has a layer"
	diag "$unknown"
else
	ok "every agent folder has a layer"
fi
if [ -s "$bad" ]; then
	not_ok "no include reaches up or sideways between the agent's layers"
	diag "$bad"
else
	ok "no include reaches up or sideways between the agent's layers"
fi
if [ -s "$split" ]; then
	not_ok "the agent and the image builder share code only through common/"
	diag "$split"
else
	ok "the agent and the image builder share code only through common/"
fi
if [ -s "$private" ]; then
	not_ok "no file outside agent/profile/ includes a backend's own headers"
	diag "$private"
else
	ok "no file outside agent/profile/ includes a backend's own headers"
fi
if [ "$(wc -l <"$T/caught")" = 1 ] && grep -q ':2: includes agent/profile/bpf/bpf_pg.h' "$T/caught"; then
	ok "the backend header check catches an include of agent/profile/bpf/ from agent/serve/"
else
	not_ok "the backend header check catches an include of agent/profile/bpf/ from agent/serve/"
	diag "$T/caught"
fi
if [ "$missing" -gt 0 ]; then
	skip "no two source files call each other" "$missing objects are not built under $BUILD/obj (make first)"
elif [ -s "$pairs" ]; then
	not_ok "no two source files call each other (make a stack: move what both use below both, or pass a callback down)"
	diag "$pairs"
else
	ok "no two source files call each other"
fi
