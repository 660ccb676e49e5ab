#!/usr/bin/env bash
# tests/integration/02-docs.sh - the documentation points only at what is
# there: README.md, docs/*.md and tests/README.md are read by whoever
# clones the repository, so
#   - every markdown link is relative, stays inside the repository and
#     resolves to a file that exists (and, with #anchor, to a heading of it);
#     no http(s):// link and no bare URL outside code;
#   - every agent/, common/, imagebuilder/, bpf/, tests/ or tools/ path
#     written in backticks exists (a glob must match something), so a
#     renamed or deleted file cannot stay named in the docs;
#   - so does every .c, .h, .sh or .py file the comments of the tree's own
#     such files name: a path with a slash, from the top or from the
#     commenting file's folder or one above it; a bare name is some file's
#     name.  Not checked: names in <...> (system headers), placeholders in
#     capitals (pgwait_NN.c, $T/NAME.h), and the other projects' files and
#     the build's outputs listed in NOT_OURS below;
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
PATH_PREFIXES='agent|common|imagebuilder|bpf|tests|tools'
# Files the comments may name that no checkout holds (extended regular
# expressions, matched against the name as written): the kernel's, perf's,
# libbpf's and PostgreSQL's, and what the build writes under build/.
NOT_OURS=(
	'^include/linux/' '^scripts/kconfig/' '^merge_config\.sh$' '^vmlinux\.h$'
	'^tools/perf/'
	'^bpf/(bpf|bpf_core_read|bpf_endian|bpf_helpers|bpf_tracing|btf|libbpf)\.h$'
	'^(src/include/)?(storage|utils)/[a-z_]+\.h$' '^lwlocknames\.h$'
	'^build/' '\.skel\.h$' '^profile\.pb-c\.[ch]$' '^kconfig_fragment\.h$'
	'^flame_js\.h$'
)

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

# tree_files: the files a clone has (tracked, or new and not ignored), one
# a line, from the top; every file but .git/ and build/ outside git.
tree_files() {
	git ls-files --cached --others --exclude-standard 2>/dev/null | grep . ||
		find . -path ./.git -prune -o -path ./build -prune -o -type f -print |
		sed 's|^\./||'
}

# comment_paths FILE...: for each file of this tree named in a comment of
# FILE... (C: /* */ and //, outside strings; shell and Python: # starting
# a word outside quotes, and Python's docstrings) that is not there, a
# sentence with the comment's FILE:LINE.
comment_paths() {
	local not_ours
	not_ours=$(
		IFS='|'
		echo "${NOT_OURS[*]}"
	)
	{
		tree_files
		echo "--"
	} | awk -v not_ours="$not_ours" '
	NR == FNR {
		if ($0 == "--")
			next
		tree[$0] = 1
		b = $0
		sub(/.*\//, "", b)
		base[b] = 1
		next
	}
	FNR == 1 { st = ""; doc = 0 }
	function check(text, line,    p, pre, dir, found) {
		while (match(text, /[A-Za-z0-9_][A-Za-z0-9_.-]*(\/[A-Za-z0-9_.-]+)*\.(c|h|sh|py)([^A-Za-z0-9_]|$)/)) {
			p = substr(text, RSTART, RLENGTH)
			pre = RSTART > 1 ? substr(text, RSTART - 1, 1) : ""
			text = substr(text, RSTART + RLENGTH - 1)
			sub(/[^A-Za-z0-9_]$/, "", p)
			# Part of a longer word or path, a variable, an include.
			if (pre ~ /[A-Za-z0-9_.\/<$~-]/)
				continue
			if (p ~ /(^|[^A-Za-z0-9])[A-Z][A-Z0-9]*([^A-Za-z0-9]|$)/)
				continue # a placeholder: pgwait_NN.c, NAME.h
			if (p ~ not_ours)
				continue
			if (p !~ /\//) {
				if (!(p in base))
					printf "%s:%d: the comment names %s, and no file of the tree has that name\n", FILENAME, line, p
				continue
			}
			found = p in tree
			for (dir = FILENAME; !found && dir ~ /\//;) {
				sub(/\/[^\/]*$/, "", dir)
				found = (dir "/" p) in tree
			}
			if (!found)
				printf "%s:%d: the comment names %s, which is not a file of the tree\n", FILENAME, line, p
		}
	}
	FILENAME ~ /\.[ch]$/ {
		out = ""
		n = length($0)
		for (i = 1; i <= n; i++) {
			c = substr($0, i, 1)
			c2 = substr($0, i, 2)
			if (st == "block") {
				if (c2 == "*/") {
					st = ""
					i++
					out = out " "
				} else
					out = out c
			} else if (st == "str" || st == "chr") {
				if (c == "\\")
					i++
				else if ((st == "str" && c == "\"") || (st == "chr" && c == "\047"))
					st = ""
			} else if (c2 == "/*") {
				st = "block"
				i++
				out = out " "
			} else if (c2 == "//") {
				out = out " " substr($0, i + 2)
				break
			} else if (c == "\"")
				st = "str"
			else if (c == "\047")
				st = "chr"
		}
		if (st != "block")
			st = ""
		check(out, FNR)
		next
	}
	FNR == 1 && /^#!/ { next }
	FILENAME ~ /\.py$/ && doc {
		if (index($0, "\"\"\""))
			doc = 0
		check($0, FNR)
		next
	}
	FILENAME ~ /\.py$/ && match($0, /^[ \t]*[rub]?"""/) {
		rest = substr($0, RSTART + RLENGTH)
		if (!index(rest, "\"\"\""))
			doc = 1
		check(rest, FNR)
		next
	}
	{
		q = ""
		n = length($0)
		for (i = 1; i <= n; i++) {
			c = substr($0, i, 1)
			if (q != "") {
				if (c == "\\" && q == "\"")
					i++
				else if (c == q)
					q = ""
			} else if (c == "\\")
				i++
			else if (c == "\"" || c == "\047")
				q = c
			else if (c == "#" && (i == 1 || substr($0, i - 1, 1) ~ /[ \t;(]/)) {
				check(substr($0, i + 1), FNR)
				break
			}
		}
	}' - "$@"
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

# The files the tree's comments name are there.
mapfile -t sources < <(tree_files | grep -E '\.(c|h|sh|py)$' | grep -v '^build/')
comment_paths "${sources[@]}" >"$T/named"
if [ -s "$T/named" ]; then
	not_ok "every file the comments of the ${#sources[@]} source files name exists"
	echo "(another project's file, or one the build writes, goes in NOT_OURS in $0)" >>"$T/named"
	diag "$T/named"
else
	ok "every file the comments of the ${#sources[@]} source files name exists"
fi
# ... and a comment naming what is not there is caught, in C and in shell,
# while names that are there, system headers, placeholders and the
# build's outputs pass, as does a path in code rather than a comment.
mkdir -p "$T/probe"
cat >"$T/probe/probe.c" <<'PROBE'
#include <linux/bpf.h> /* <linux/bpf.h>, <bpf/libbpf.h>, profile.skel.h */
static const char *s = "agent/not/in/a/comment.c";
/*
 * agent/profile/engine.h, engine.c, pgwait_NN.c and build/gen/flame_js.h
 * pass; agent/no/such_file.c and no_such_file.h do not.
 */
PROBE
printf '%s\n' '#!/bin/bash' \
	'echo "tests/not/a/comment.sh" # tests/lib/tap.sh passes; tests/lib/no-such.sh not' \
	>"$T/probe/probe.sh"
comment_paths "$T/probe/probe.c" "$T/probe/probe.sh" | sed "s|^$T/||" >"$T/caught"
cat >"$T/want" <<'WANT'
probe/probe.c:5: the comment names agent/no/such_file.c, which is not a file of the tree
probe/probe.c:5: the comment names no_such_file.h, and no file of the tree has that name
probe/probe.sh:2: the comment names tests/lib/no-such.sh, which is not a file of the tree
WANT
if cmp -s "$T/want" "$T/caught"; then
	ok "a comment naming a file that is not there is caught, and nothing else"
else
	not_ok "a comment naming a file that is not there is caught, and nothing else"
	diff "$T/want" "$T/caught" | diag
fi

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
