#!/usr/bin/env bash
# tests/integration/01-layers.sh - include lines only reach down the layers.
#
# The agent's folders are layers (docs/architecture.md); a file may include
# headers of its own folder and of lower layers, never of a higher layer or
# of a sibling at the same height.  Each folder's layer, lowest first:
#   0 common          shared with the image builder
#   1 agent/samples   the sample model and process capture
#   2 agent/symbolize names for addresses
#   3 agent/encode    pprof, folded, gzip
#   4 agent/profile   the engine and its backends (bpf/, perf/)
#   4 agent/setup     mount, verify, link (a sibling of profile)
#   4 agent/history   continuous profiling windows kept (a sibling too)
#   5 agent/continuous the always-on session: windows kept, stored, pushed
#   6 agent/serve     the REST service
#   7 agent           the subcommands and main.c
# And the two binaries share code only through common/: imagebuilder/
# includes itself and common/, agent/ never includes imagebuilder/.
. "$(dirname "$0")/../lib/tap.sh"
cd "$SRC"

# layer FOLDER: print "RANK GROUP" for a folder (a group is a top folder).
layer() {
	case $1 in
	common) echo "0 common" ;;
	agent/samples) echo "1 samples" ;;
	agent/symbolize) echo "2 symbolize" ;;
	agent/encode) echo "3 encode" ;;
	agent/profile | agent/profile/*) echo "4 profile" ;;
	agent/setup) echo "4 setup" ;;
	agent/history) echo "4 history" ;;
	agent/continuous) echo "5 continuous" ;;
	agent/serve) echo "6 serve" ;;
	agent) echo "7 agent" ;;
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
