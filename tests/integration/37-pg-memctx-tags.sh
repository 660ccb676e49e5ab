#!/usr/bin/env bash
# tests/integration/37-pg-memctx-tags.sh - the memory-context tags the
# agent's walk trusts (agent/samples/pg_memctx.c's table, a row per major
# version) are those of every real build: PostgreSQL 15 as Debian
# installed it, and 15.10, 16.14, 17.2, 17.10, 18.4 (the builds
# tests/pg-versions pins).  Each context type's create function
# (AllocSetContextCreateInternal, GenerationContextCreate,
# SlabContextCreate, BumpContextCreate from 17) passes its NodeTag to
# MemoryContextCreate as an immediate in %esi: objdump reads it off the
# executable (Debian's is stripped, but these functions are in .dynsym).
# A type the build has no create function for must have no tag.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/pg.sh"

skip_unless "memory-context tags against each PostgreSQL build" "$(need_cmd objdump awk)"

# The tag function $2 passes to MemoryContextCreate in executable $1
# (empty when it has no such function).
create_tag() {
	objdump -d --no-show-raw-insn --disassemble="$2" "$1" 2>/dev/null | awk '
		/mov +\$0x[0-9a-f]+,%esi/ { sub(/.*\$/, ""); sub(/,.*/, ""); last = $0 }
		/call.*<MemoryContextCreate/ && last != "" { seen[last] = 1 }
		END { for (t in seen) print t }'
}

# The agent's row for major version $1: "0xdf 0xe1 0xe0 0".
agent_row() {
	sed -n "s/^\t{ $1, { \(.*\) } },\$/\1/p" "$SRC/agent/samples/pg_memctx.c" | tr -d ,
}

for r in 15 15.10 16.14 17.2 17.10 18.4; do
	bin=$(pg_release_bin "$r")/postgres
	if [ ! -x "$bin" ]; then
		not_ok "PostgreSQL $r: $bin is there (run ci/install-deps.sh)"
		continue
	fi
	v=${r%%.*}
	got=""
	for f in AllocSetContextCreateInternal GenerationContextCreate SlabContextCreate BumpContextCreate; do
		t=$(create_tag "$bin" "$f")
		[ "$(echo "$t" | wc -w)" -le 1 ] || { got="$got ambiguous($t)"; continue; }
		got="$got ${t:-0}"
	done
	got=${got# }
	want=$(agent_row "$v")
	check "PostgreSQL $r: the agent's tags (AllocSet Generation Slab Bump) are the build's: $got" \
		test "$got" = "$want"
done
