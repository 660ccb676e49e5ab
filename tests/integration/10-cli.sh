#!/usr/bin/env bash
# tests/integration/10-cli.sh - both binaries answer --help and --version and
# refuse unknown commands with status 2.
. "$(dirname "$0")/../lib/tap.sh"

for bin in "$VMTOOLS_IMAGE" "$VMTOOLS_AGENT"; do
	name=$(basename "$bin")
	check "$name --help exits 0 and shows usage" \
		bash -c "'$bin' --help | grep -q '^Usage: $name'"
	check "$name --version prints the version" \
		bash -c "'$bin' --version | grep -qE '^$name [0-9]+\.[0-9]+\.[0-9]+'"
	"$bin" no-such-command >"$T/out" 2>&1
	st=$?
	if [ "$st" = 2 ] && grep -q "unknown command 'no-such-command'" "$T/out"; then
		ok "$name refuses an unknown command with status 2"
	else
		not_ok "$name unknown command: status $st"
		diag "$T/out"
	fi
done
