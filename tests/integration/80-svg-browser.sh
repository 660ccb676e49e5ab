#!/usr/bin/env bash
# tests/integration/80-svg-browser.sh - the SVG flame graph as a person
# sees it: xmllint --noout accepts every SVG the tests make (the unit
# test's, hostile names among them, and a real profile's), and Chromium
# opens the SVG of the 3:1 burner (tests/programs/burn) with its two
# functions 3:1 wide, zooms on a click, resets, highlights a search, and
# opens the hostile SVG as a document whose script runs
# (tests/browser/svg.mjs).
# In Chromium the two functions are 3:1 wide within 3 points, a click zooms
# burn_hot_a to the full width, Reset zoom undoes it, the search highlights
# it with its share, and no console error is logged.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/burn.sh"
. "$SRC/tests/lib/browser.sh"

skip_unless "the SVG flame graph in a browser" "$(need_cmd xmllint)" \
	"$(need_bpf)" "$(need_burn)" "$(need_browser)"

mkdir -p "$T/svgs"
VMTOOLS_SVG_DIR=$T/svgs CMOCKA_MESSAGE_OUTPUT=TAP "$BUILD/tests/test_svg" \
	>"$T/unit.out" 2>&1
check "the unit test writes its SVGs" test -s "$T/svgs/hostile.svg"

run_burn burnsvg 6
sleep 0.5
"$VMTOOLS_AGENT" profile --comm burnsvg --seconds 4 --frequency 499 \
	--format svg --output "$T/burn.svg" >"$T/profile.out" 2>&1
check_said $? 0 "$T/profile.out" "profile --format svg writes the burner's flame graph"

for f in "$T"/svgs/*.svg "$T/burn.svg"; do
	check "xmllint --noout $(basename "$f")" xmllint --noout "$f"
done
check "the SVG loads nothing from elsewhere (no href, no src, no url())" \
	bash -c "! grep -qE 'href=|src=|url\\(' '$T/burn.svg'"
run_browser svg.mjs "$T/burn.svg" "$T/svgs/hostile.svg"
