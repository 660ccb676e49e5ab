#!/usr/bin/env bash
# tests/integration/03-anywhere.sh - no test depends on the checkout being
# a place another user may enter.  A clone in a directory only root can
# enter (mode 0700, as /root is on Debian) once failed some twenty checks
# that passed in a 0755 one: psql run as postgres from the checkout warned
# on stderr that it could not change to it, and the tests read that as
# data; a program of $BUILD run as nobody could not be executed at all.
# So every command another user runs goes through run_as (tests/lib/tap.sh),
# which runs it from a directory given for it and refuses a path in the
# checkout or the build whatever the directory's mode, and this checks that:
#   - no test script or helper switches users by itself (runuser, su,
#     sudo, setpriv, chroot --userspec) outside run_as; the guest's own
#     scripts (tests/lib/vm/, bench/lib/*-guest.sh) run as root in the VM;
#   - run_as refuses a program of $BUILD and an argument in $SRC, saying
#     so, and runs nothing;
#   - with root, run_as runs its command from the directory it was given.
# Cheap enough for every make check: the postgres-user scripts (34, 36,
# 56, 75, 87 ...) then pass in a 0700 clone as in a 0755 one, without
# running them twice.
. "$(dirname "$0")/../lib/tap.sh"
cd "$SRC" || exit 1

: >"$T/switches"
for f in tests/integration/*.sh tests/vm/*.sh tests/lib/*.sh bench/*.sh bench/lib/*.sh; do
	case $f in
	bench/lib/*-guest.sh) continue ;;
	esac
	# A user switch in command position; comments and run_as's own body
	# aside.
	awk -v f="$f" '
		/^run_as\(\) \{/ { body = 1 }
		body { if (/^}/) body = 0; next }
		{ line = $0; sub(/(^|[ \t])#.*/, "", line) }
		line ~ /(^|[;&|(!{"]|then|do|else)[ \t]*(exec[ \t]+)?(runuser|sudo|su)[ \t]/ ||
		line ~ /setpriv[^|;&]*--re[ug]id/ || line ~ /chroot[^|;&]*--userspec/ {
			print f ":" NR ": " $0
		}' "$f" >>"$T/switches"
done
if [ -s "$T/switches" ]; then
	not_ok "every command run as another user goes through run_as"
	diag "$T/switches"
else
	ok "every command run as another user goes through run_as (tests/lib/tap.sh)"
fi

run_as nobody / "$BUILD/vmtools-agent" --version >"$T/build.out" 2>&1
check_said $? 126 "$T/build.out" "run_as refuses a program of the build, saying where to copy it" \
	"is in the checkout" 'copy it into \$T'
run_as nobody / cat "$SRC/Makefile" >"$T/src.out" 2>&1
check_said $? 126 "$T/src.out" "run_as refuses an argument in the checkout" "is in the checkout"

if [ -n "$(need_root)" ] || ! id nobody >/dev/null 2>&1; then
	skip "run_as runs its command from the directory given" "needs root and the user nobody"
else
	mkdir -m 0700 "$T/closed"
	(cd "$T/closed" && run_as nobody / pwd) >"$T/pwd.out" 2>&1
	check_said $? 0 "$T/pwd.out" "run_as runs its command from the directory given, not the caller's (one only root may enter)" '^/$'
fi
