# shellcheck shell=bash
# tests/lib/memcg.sh - a memory cgroup of a test's own, with a small limit,
# sourced after tap.sh: cgroup v2's where the unified hierarchy has the
# memory controller, else cgroup v1's memory hierarchy (a hybrid host),
# made below the test's own cgroup and removed when the script ends, the
# processes left in it moved back first.
#
#   memcg_reason         why no memory cgroup can be made here (empty: it can)
#   memcg_make BYTES     make one limited to BYTES, no swap; sets MEMCG_DIR
#                        and MEMCG_VERSION (v2 or v1)
#   memcg_add PID        move the process PID into it (its children to be
#                        forked follow it)

memcg_v2_root() {
	local m
	m=$(findmnt -n -t cgroup2 -o TARGET 2>/dev/null | head -1)
	[ -n "$m" ] && grep -qw memory "$m/cgroup.subtree_control" 2>/dev/null && echo "$m"
}

memcg_v1_root() {
	findmnt -n -t cgroup -O memory -o TARGET 2>/dev/null | head -1
}

memcg_reason() {
	[ "$(id -u)" = 0 ] || { echo "needs root to make a memory cgroup"; return; }
	[ -n "$(memcg_v2_root)" ] || [ -n "$(memcg_v1_root)" ] ||
		echo "no memory controller, neither on cgroup v2 nor v1"
}

# memcg_drop DIR PARENT: its processes back to PARENT, then DIR removed.
memcg_drop() {
	local p
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		for p in $(cat "$1/cgroup.procs" 2>/dev/null); do
			echo "$p" >"$2/cgroup.procs" 2>/dev/null
		done
		rmdir "$1" 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}

memcg_make() {
	local root own parent
	root=$(memcg_v2_root)
	if [ -n "$root" ]; then
		MEMCG_VERSION=v2
		own=$(sed -n 's/^0:://p' /proc/self/cgroup)
	else
		MEMCG_VERSION=v1
		root=$(memcg_v1_root)
		own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)
	fi
	parent=$root${own%/}
	# A v2 cgroup with processes cannot have children with controllers:
	# then the root's.
	[ "$MEMCG_VERSION" = v2 ] && ! grep -qw memory "$parent/cgroup.subtree_control" 2>/dev/null && parent=$root
	MEMCG_DIR=$parent/vmtools-test-$$
	mkdir "$MEMCG_DIR" || return 1
	at_exit "memcg_drop '$MEMCG_DIR' '$parent'"
	if [ "$MEMCG_VERSION" = v2 ]; then
		echo "$1" >"$MEMCG_DIR/memory.max" &&
			{ echo 0 >"$MEMCG_DIR/memory.swap.max" 2>/dev/null || true; }
	else
		echo "$1" >"$MEMCG_DIR/memory.limit_in_bytes" &&
			{ echo 0 >"$MEMCG_DIR/memory.swappiness" 2>/dev/null || true; }
	fi
}

memcg_add() {
	echo "$1" >"$MEMCG_DIR/cgroup.procs"
}
