# shellcheck shell=bash
# tests/lib/browser.sh - the browser tests' driver, sourced after tap.sh:
# Debian's chromium driven by playwright-core, which ci/install-deps.sh
# installs with npm ci (pinned in tests/browser/package-lock.json) into
# $BUILD/npm/browser.  Screenshots go to $BUILD/test-logs/screenshots.
#
#   need_browser           why the browser tests cannot run (empty: they can)
#   run_browser SCRIPT ARG...  node tests/browser/SCRIPT ARG...; its TAP
#                          lines pass through, and a script that dies
#                          without saying why counts as one failure

PLAYWRIGHT_DIR=${PLAYWRIGHT_DIR:-$BUILD/npm/browser}
SCREENSHOT_DIR=${SCREENSHOT_DIR:-$BUILD/test-logs/screenshots}
export PLAYWRIGHT_DIR SCREENSHOT_DIR

need_browser() {
	need_cmd node chromium
	[ -d "$PLAYWRIGHT_DIR/node_modules/playwright-core" ] ||
		echo "needs playwright-core in $PLAYWRIGHT_DIR (ci/install-deps.sh installs it)"
}

run_browser() {
	local script=$1 st
	shift
	timeout 600 node "$SRC/tests/browser/$script" "$@" >"$T/browser.out" 2>&1
	st=$?
	cat "$T/browser.out"
	if [ "$st" != 0 ] && ! grep -q '^not ok' "$T/browser.out"; then
		not_ok "node tests/browser/$script exited $st"
	fi
}
