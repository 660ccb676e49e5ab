#!/usr/bin/env bash
# tests/fuzz/seeds/fuzz_elf.sh OUTDIR - makes the seed corpus of the ELF
# reader's fuzz target from the compiler, at build time (ELF files are build
# outputs, never committed): a relocatable object with symbols, the same
# truncated before its section headers, a stripped shared object
# carrying MiniDebugInfo (.gnu_debugdata), and an arm64 shared object
# calling through its PLT (mapping symbols, PLT stubs to name).  Run by
# the Makefile.
set -euo pipefail
out=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../lib/elf.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/seed.c" <<'C'
static int helper(int x) { return x * 3 + 1; }
int seed_exported(int x) { return helper(x) ^ 7; }
int seed_other(int x) { return seed_exported(x) + helper(x); }
C
gcc -O1 -g -c -o "$out/object.elf" "$tmp/seed.c"
head -c 700 "$out/object.elf" >"$out/truncated.elf"
gcc -O1 -g -shared -fPIC -Wl,--build-id -o "$tmp/seed.so" "$tmp/seed.c"
make_minidebuginfo "$tmp/seed.so" "$out/minidebuginfo.so"
cat >"$tmp/plt.c" <<'C'
#include <stdlib.h>
#include <string.h>
int seed_plt(int x) { char b[64]; memset(b, x, sizeof(b)); return abs(x) + b[3]; }
C
aarch64-linux-gnu-gcc -O1 -shared -fPIC -o "$out/plt-arm64.so" "$tmp/plt.c"
