#!/usr/bin/env bash
# tests/integration/02-docs.sh - the documentation points only at what is
# there: README.md, docs/*.md and tests/README.md are read by whoever
# clones the repository, so
#   - every markdown link is relative, stays inside the repository and
#     resolves to a file that exists (and, with #anchor, to a heading of it);
#     no http(s):// link and no bare URL outside code;
#   - every agent/, common/, imagebuilder/, bpf/ or tests/ path written in
#     backticks exists (a glob must match something), so a renamed or
#     deleted file cannot stay named in the docs;
#   - README.md stays a front door: at most 200 lines, naming `make demo`
#     and `make check`, and its benchmark table is the one in
#     docs/benchmarks.md, row for row;
#   - tests/README.md says what every test covers: each
#     tests/unit/test_*.c, tests/integration/*.sh, tests/fuzz/fuzz_*.c,
#     tests/vm/*.sh and tests/lib/*.sh is named there in backticks (by its
#     name or a path ending in it), and every test_*.c, fuzz_*.c or
#     NN-name.sh it names in backticks exists, so adding, renaming or
#     deleting a test cannot leave the page behind.
# Pure text checks: no root, no build.
. "$(dirname "$0")/../lib/tap.sh"
cd "$SRC" || exit 1

README_MAX_LINES=200
PATH_PREFIXES='agent|common|imagebuilder|bpf|tests'

pages=(README.md tests/README.md)
if [ -d docs ]; then
	for f in docs/*.md; do
		[ -f "$f" ] && pages+=("$f")
	done
fi

# prose FILE: FILE with the lines of code blocks blanked, so line numbers
# stay right and nothing in a code block counts as markdown.  A block is
# fenced (```), or indented by 4 columns after a blank line (a list item's
# wrapped lines follow a line of text and stay prose).
prose() {
	awk '/^ *```/ { fenced = !fenced; print ""; blank = 0; next }
	     fenced { print ""; next }
	     /^[ \t]*$/ { print ""; blank = 1; next }
	     /^(    |\t)/ && (blank || code) { print ""; code = 1; blank = 0; next }
	     { print; code = 0; blank = 0 }' "$1"
}

# slugs FILE: the anchor of every heading, as GitHub makes them (lower case,
# punctuation dropped, spaces to hyphens, -1, -2 ... for repeats).
slugs() {
	prose "$1" | grep -E '^#{1,6} ' |
		sed -e 's/^#* *//' -e 's/ *#* *$//' | tr '[:upper:]' '[:lower:]' |
		LC_ALL=C sed -e 's/[^a-z0-9 _-]//g' -e 's/ /-/g' |
		awk '{ n = seen[$0]++; print (n ? $0 "-" n : $0) }'
}

# in_repo PATH: PATH (absolute) is the repository or inside it.
in_repo() {
	case $1 in
	"$SRC" | "$SRC"/*) return 0 ;;
	*) return 1 ;;
	esac
}

# generated PATH: git ignores PATH (a build output, absent from a clone).
generated() {
	git rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
		git check-ignore -q "$1" 2>/dev/null
}

# check_link PAGE LINE TARGET: print why TARGET is a bad link, if it is.
check_link() {
	local page=$1 line=$2 target=$3 path anchor file
	target=${target%% *} # a title after the address
	case $target in
	'')
		echo "$page:$line: empty link"
		return
		;;
	[a-zA-Z]*:*)
		case ${target%%:*} in
		*[!a-zA-Z0-9+.-]*) ;; # a colon further on, not a scheme
		*)
			echo "$page:$line: $target is not a relative link into the repository"
			return
			;;
		esac
		;;
	/*)
		echo "$page:$line: $target is an absolute path; link relative to $page"
		return
		;;
	esac
	path=${target%%#*}
	anchor=
	[ "$path" != "$target" ] && anchor=${target#*#}
	if [ -z "$path" ]; then
		file=$SRC/$page
	else
		file=$(realpath -m "$SRC/$(dirname "$page")/$path")
	fi
	if ! in_repo "$file"; then
		echo "$page:$line: $target leads outside the repository"
		return
	fi
	if [ ! -e "$file" ]; then
		echo "$page:$line: $target does not exist"
		return
	fi
	if generated "$file"; then
		echo "$page:$line: $target is a build output, not in the repository"
		return
	fi
	if [ -n "$anchor" ]; then
		if [ ! -f "$file" ] || [ "${file%.md}" = "$file" ]; then
			echo "$page:$line: $target: #$anchor in a file that is not markdown"
		elif ! slugs "$file" | grep -qxF -- "$anchor"; then
			echo "$page:$line: $target: ${file#"$SRC"/} has no heading for #$anchor"
		fi
	fi
}

# code_spans PAGE: the text of every `code span` in PAGE's prose, one a
# line, without its backticks.  Paragraphs are joined first: a code span
# may wrap.
code_spans() {
	prose "$1" | awk 'BEGIN { RS = "" } { gsub(/\n/, " "); print }' |
		grep -o '`[^`]*`' | tr -d '`'
}

# code_paths PAGE: the repository paths named inside code spans, one a line.
code_paths() {
	code_spans "$1" |
		grep -oE "(^|[[:space:](=])($PATH_PREFIXES)/[^][:space:]'\",;:()]*" |
		sed -e 's/^[[:space:](=]//' -e 's/\.$//' | sort -u
}

for page in "${pages[@]}"; do
	bad=$T/bad
	: >"$bad"
	n=0
	# Markdown links and images: ](target), and <scheme://...> autolinks.
	while IFS=: read -r line rest; do
		target=${rest#](}
		target=${target%)}
		n=$((n + 1))
		check_link "$page" "$line" "$target" >>"$bad"
	done < <(prose "$page" | grep -no '\]([^)]*)')
	prose "$page" | grep -noE '<[a-zA-Z][a-zA-Z0-9+.-]*://[^>]*>' |
		sed 's/^\([0-9]*\):/'"${page//\//\\/}"':\1: autolink /' >>"$bad"
	# Bare URLs in running text (code spans and blocks hold example URLs;
	# paragraphs are joined first, since a code span may wrap; link
	# targets were judged above).
	prose "$page" | awk 'BEGIN { RS = "" } { gsub(/\n/, " "); print }' |
		sed -e 's/\]([^)]*)/]/g' -e 's/`[^`]*`//g' |
		grep -oE '.{0,30}https?://[^[:space:]]*' |
		sed "s|^|$page: a URL outside code: |" >>"$bad"
	if [ -s "$bad" ]; then
		not_ok "$page: every link is relative and resolves inside the repository"
		diag "$bad"
	else
		ok "$page: every link ($n) is relative and resolves inside the repository"
	fi

	: >"$bad"
	n=0
	while IFS= read -r p; do
		[ -n "$p" ] || continue
		n=$((n + 1))
		case $p in
		*[\*\?\[]*)
			compgen -G "$SRC/$p" >/dev/null ||
				echo "$page: \`$p\` matches no file" >>"$bad"
			;;
		*)
			if [ ! -e "$SRC/$p" ]; then
				echo "$page: \`$p\` does not exist" >>"$bad"
			elif generated "$SRC/$p"; then
				echo "$page: \`$p\` is a build output, not in the repository" >>"$bad"
			fi
			;;
		esac
	done < <(code_paths "$page")
	if [ -s "$bad" ]; then
		not_ok "$page: every source path written in backticks exists"
		diag "$bad"
	else
		ok "$page: every source path written in backticks ($n) exists"
	fi
done

# docs/ exists and is indexed.
for f in docs/README.md docs/architecture.md docs/api.md docs/benchmarks.md; do
	check "$f exists" test -f "$f"
done
: >"$T/unindexed"
for f in docs/*.md; do
	[ "$f" = docs/README.md ] && continue
	grep -qF "(${f#docs/})" docs/README.md 2>/dev/null || echo "$f" >>"$T/unindexed"
done
if [ -s "$T/unindexed" ]; then
	not_ok "docs/README.md links every page of docs/"
	diag "$T/unindexed"
else
	ok "docs/README.md links every page of docs/"
fi

# The README is a front door.
lines=$(wc -l <README.md)
if [ "$lines" -le "$README_MAX_LINES" ]; then
	ok "README.md has $lines lines (at most $README_MAX_LINES)"
else
	not_ok "README.md has $lines lines, more than $README_MAX_LINES: move the details to docs/"
fi
check "README.md names make demo" grep -qF 'make demo' README.md
check "README.md names make check" grep -qF 'make check' README.md

# The README's benchmark table is docs/benchmarks.md's, row for row.
sed -n '/^## Benchmarks/,/^## /p' README.md | grep '^|' >"$T/readme-bench"
: >"$T/bench-drift"
while IFS= read -r row; do
	grep -qxF -- "$row" docs/benchmarks.md 2>/dev/null ||
		echo "${row:0:120}..." >>"$T/bench-drift"
done <"$T/readme-bench"
if [ ! -s "$T/readme-bench" ]; then
	not_ok "README.md has a benchmark table under ## Benchmarks"
elif [ -s "$T/bench-drift" ]; then
	not_ok "README.md's benchmark rows are in docs/benchmarks.md"
	diag "$T/bench-drift"
else
	ok "README.md's $(wc -l <"$T/readme-bench") benchmark table rows are in docs/benchmarks.md"
fi

# tests/README.md names every test file, and names no test file that is not
# there.
TESTS_PAGE=tests/README.md
code_spans "$TESTS_PAGE" | tr -s '[:space:]' '\n' | sort -u >"$T/words"

# named FILE: a word of a code span of the page is FILE's name, or a path
# ending in /NAME.
named() {
	awk -v b="${1##*/}" '$0 == b || substr($0, length($0) - length(b)) == "/" b { f = 1 }
		END { exit !f }' "$T/words"
}

for kind in "unit test file:tests/unit/test_*.c" \
	"integration script:tests/integration/*.sh" \
	"fuzz target:tests/fuzz/fuzz_*.c" \
	"VM test:tests/vm/*.sh" \
	"helper:tests/lib/*.sh"; do
	what=${kind%%:*}
	: >"$T/unnamed"
	n=0
	for f in ${kind#*:}; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		named "$f" || echo "$f is not named in $TESTS_PAGE: say what it covers" >>"$T/unnamed"
	done
	if [ "$n" = 0 ]; then
		not_ok "$TESTS_PAGE: no $what found at ${kind#*:}"
	elif [ -s "$T/unnamed" ]; then
		not_ok "$TESTS_PAGE names every ${what} (${kind#*:})"
		diag "$T/unnamed"
	else
		ok "$TESTS_PAGE names every ${what} ($n, ${kind#*:})"
	fi
done

# Every test_*.c, fuzz_*.c or NN-name.sh the page names exists where such
# files live (a name given with its folder is a path, checked above).
: >"$T/missing"
n=0
while IFS= read -r name; do
	n=$((n + 1))
	case $name in
	test_*) dirs=tests/unit ;;
	fuzz_*) dirs=tests/fuzz ;;
	*) dirs="tests/integration tests/vm" ;;
	esac
	found=
	for d in $dirs; do
		[ -f "$d/$name" ] && found=$d
	done
	[ -n "$found" ] || echo "\`$name\` is not in $dirs" >>"$T/missing"
done < <(grep -oE '(^|/)(test_[A-Za-z0-9_]+\.c|fuzz_[A-Za-z0-9_]+\.c|[0-9][0-9]-[A-Za-z0-9_-]+\.sh)$' "$T/words" |
	sed 's|^/||' | sort -u)
if [ -s "$T/missing" ]; then
	not_ok "$TESTS_PAGE: every test file it names in backticks exists"
	diag "$T/missing"
else
	ok "$TESTS_PAGE: every test file it names in backticks ($n) exists"
fi
