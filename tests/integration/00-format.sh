#!/usr/bin/env bash
# tests/integration/00-format.sh - the C sources follow the committed
# .clang-format (kernel style); the same check as `make format-check`.
. "$(dirname "$0")/../lib/tap.sh"

skip_unless "sources match .clang-format" "$(need_cmd clang-format git)"
cd "$SRC"
files=$(git ls-files '*.c' '*.h' 2>/dev/null)
[ -n "$files" ] || files=$(find common imagebuilder agent bpf tests -name '*.[ch]')
# shellcheck disable=SC2086
check "sources match .clang-format (make format-check)" clang-format --dry-run --Werror $files
