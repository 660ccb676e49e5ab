#!/usr/bin/env bash
# tests/fuzz/seeds/fuzz_unwind.sh OUTDIR - makes the seed corpus of the
# unwind table builder's fuzz target from the compiler, at build time (ELF
# files are build outputs, never committed): a small shared object built
# without frame pointers, with its .eh_frame and .eh_frame_hdr, calling
# through its PLT; the same truncated inside its .eh_frame; the same
# built for arm64 with pointer authentication (its rules the arm64
# registers' and DW_CFA_AARCH64_negate_ra_state).  Run by the Makefile.
set -euo pipefail
out=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/seed.c" <<'C'
#include <stdlib.h>
#include <string.h>
static int helper(int x) { return x * 3 + 1; }
int seed_exported(int x) { char *p = alloca(x & 63); memset(p, 0, x & 63); return helper(x) ^ p[0]; }
int seed_other(int x) { return seed_exported(x) + abs(helper(x)); }
C
gcc -O2 -fomit-frame-pointer -shared -fPIC -o "$out/unwind.so" "$tmp/seed.c"
aarch64-linux-gnu-gcc -O2 -fomit-frame-pointer -mbranch-protection=standard -shared -fPIC \
	-o "$out/unwind-arm64.so" "$tmp/seed.c"
size=$(stat -c %s "$out/unwind.so")
head -c $((size * 2 / 3)) "$out/unwind.so" >"$out/truncated.so"
