# shellcheck shell=bash
# tests/lib/image.sh - the checks every real image gets, shared by the
# image tests of each architecture (21, 22).  Sourced after tap.sh.
#
#   image_built_clean WHAT OUT ARG...   `vmtools-image build ARG... --output
#                                       OUT` (WHAT says of what), then e2fsck
#                                       -fn, verify, and a second build
#                                       byte-identical to the first: four
#                                       TAP lines

image_built_clean() {
	local what=$1 out=$2
	shift 2
	check "build $what" "$VMTOOLS_IMAGE" build "$@" --output "$out"
	check "e2fsck -fn finds nothing to fix" e2fsck -fn "$out"
	check "verify re-hashes every file" "$VMTOOLS_IMAGE" verify "$out"
	if "$VMTOOLS_IMAGE" build "$@" --output "$out.again" >/dev/null 2>&1 &&
		cmp -s "$out" "$out.again"; then
		ok "a second build is byte-identical (cmp)"
	else
		not_ok "a second build is byte-identical (cmp $out $out.again)"
	fi
	rm -f "$out.again"
}
