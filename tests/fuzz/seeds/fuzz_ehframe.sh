#!/usr/bin/env bash
# tests/fuzz/seeds/fuzz_ehframe.sh OUTDIR - makes the seed corpus of the
# .eh_frame_hdr reader's fuzz target from the compiler, at build time: the
# .eh_frame_hdr of a small program and of a shared object, each after the
# target's first byte (0: 64-bit, little-endian), and one cut short.  Run
# by the Makefile.
set -euo pipefail
out=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/seed.c" <<'C'
static int helper(int x) { return x * 3 + 1; }
int seed_exported(int x) { return helper(x) ^ 7; }
int main(int argc, char **argv) { (void)argv; return seed_exported(argc); }
C
gcc -O1 -o "$tmp/seed" "$tmp/seed.c"
gcc -O1 -shared -fPIC -o "$tmp/seed.so" "$tmp/seed.c"
for f in seed seed.so; do
	objcopy -O binary --only-section=.eh_frame_hdr "$tmp/$f" "$tmp/$f.hdr"
	{ printf '\0'; cat "$tmp/$f.hdr"; } >"$out/$f.ehframe"
done
head -c 20 "$out/seed.ehframe" >"$out/truncated.ehframe"
