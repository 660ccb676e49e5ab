#!/usr/bin/env bash
# tests/integration/61-kconfig.sh - `vmtools-agent check-kernel` against real
# kernel configs: this machine's (/proc/config.gz, else /boot/config-$(uname -r))
# and Debian 12's cloud kernel (from tests/lib/fetch-kernel.sh).
#
# Every verdict the checker prints is compared with one computed here by awk
# from the same fragment (kernel-config/vmtools.config) and the same config,
# so a wrong verdict on any option fails.  Debian's config also gets fixed
# expectations (it is pinned by its ABI), and edited copies check the exit
# status when a required option is missing.  The fragment is merged the way
# scripts/kconfig/merge_config.sh -m merges (same option patterns), and the
# merged config must pass with nothing missing.
. "$(dirname "$0")/../lib/tap.sh"

FRAG=$SRC/kernel-config/vmtools.config
A=$VMTOOLS_AGENT

# expected CONFIG: print "NAME ok|MISSING" per fragment option, computed
# independently of the C code.
expected() {
	local cfg=$1
	{ if gzip -t "$cfg" 2>/dev/null; then zcat "$cfg"; else cat "$cfg"; fi; } >"$T/plain.config"
	awk '
	function sat(want, have) {
		if (want == "n") return (have == "" || have == "n")
		if (have == "") return 0
		if (want == "m") return (have == "y" || have == "m")
		if (want == "y") return (have == "y" || have == "m")
		return want == have
	}
	FNR == NR {
		if ($0 ~ /^CONFIG_[A-Za-z0-9_]+=/) { split($0, kv, "="); val[kv[1]] = substr($0, length(kv[1]) + 2) }
		else if ($0 ~ /^# CONFIG_[A-Za-z0-9_]+ is not set$/) val[$2] = "n"
		next
	}
	/^# (required|recommended|optional)[: ]/ {
		alts = ""
		if (match($0, /\(or [^)]*\)/)) alts = substr($0, RSTART + 4, RLENGTH - 5)
		next
	}
	/^CONFIG_[A-Za-z0-9_]+=/ || /^# CONFIG_[A-Za-z0-9_]+ is not set$/ {
		if ($0 ~ /^#/) { name = $2; want = "n" } else { split($0, kv, "="); name = kv[1]; want = kv[2] }
		ok = sat(want, val[name])
		n = split(alts, al, /, */)
		for (i = 1; i <= n && !ok; i++) { split(al[i], kv, "="); ok = sat(kv[2], val[kv[1]]) }
		print name, (ok ? "ok" : "MISSING")
		alts = ""
	}' "$T/plain.config" "$FRAG"
}

# actual CONFIG: the same from check-kernel's output.
actual() {
	"$A" check-kernel --config "$1" | awk '/^(ok|MISSING) +CONFIG_/ { split($2, kv, "="); print kv[1], $1 }'
}

# compare NAME CONFIG: every option's verdict matches the expected one.
compare() {
	local name=$1 cfg=$2
	expected "$cfg" >"$T/exp"
	actual "$cfg" >"$T/act"
	if [ -s "$T/exp" ] && diff -u "$T/exp" "$T/act" >"$T/diff"; then
		ok "$name: all $(wc -l <"$T/exp") verdicts match an independent reading of the config ($(grep -c MISSING "$T/exp") missing)"
	else
		not_ok "$name: verdicts differ from the expected ones"
		diag "$T/diff"
	fi
}

# --- this machine's kernel ------------------------------------------------
host_cfg=
if [ -r /proc/config.gz ]; then
	host_cfg=/proc/config.gz
elif [ -r "/boot/config-$(uname -r)" ]; then
	host_cfg=/boot/config-$(uname -r)
fi
if [ -n "$host_cfg" ]; then
	compare "this machine's kernel $(uname -r) ($host_cfg)" "$host_cfg"
	"$A" check-kernel >"$T/host.out" 2>&1
	st=$?
	if grep -q "^Checking $host_cfg against" "$T/host.out"; then
		ok "check-kernel without --config reads $host_cfg"
	else
		not_ok "check-kernel without --config did not read $host_cfg"
		diag "$T/host.out"
	fi
	req_missing=$(grep -c '^MISSING .*\[required\]' "$T/host.out")
	if { [ "$req_missing" = 0 ] && [ "$st" = 0 ]; } || { [ "$req_missing" != 0 ] && [ "$st" = 1 ]; }; then
		ok "exit status $st matches $req_missing required options missing here"
	else
		not_ok "exit status $st but $req_missing required options missing"
	fi
	# Each MISSING line is followed by what it costs, from the fragment.
	if awk '/^MISSING/ { getline; if ($0 !~ /^         without /) bad = 1 } END { exit bad }' "$T/host.out"; then
		ok "every missing option on this machine is followed by what it costs"
	else
		not_ok "a missing option has no cost line"
		diag "$T/host.out"
	fi
else
	skip "check-kernel on this machine's kernel" "neither /proc/config.gz nor /boot/config-$(uname -r)"
fi

# --- Debian 12's cloud kernel -----------------------------------------------
if ! eval "$(bash "$SRC/tests/lib/fetch-kernel.sh" 2>"$T/fetch.err")"; then
	skip "check-kernel on Debian's cloud kernel" "cannot fetch it: $(tail -n 1 "$T/fetch.err")"
	exit 0
fi
deb=$KERNEL_ROOT/boot/config-$KERNEL_RELEASE
compare "Debian $KERNEL_RELEASE" "$deb"
"$A" check-kernel --config "$deb" >"$T/deb.out" 2>&1
st=$?
check "Debian $KERNEL_RELEASE: exit 0, no required option missing" test "$st" = 0
for want in 'ok +CONFIG_BPF_SYSCALL=y$' 'ok +CONFIG_DEBUG_INFO_BTF=y$' \
	'ok +CONFIG_UNWINDER_ORC=y$' 'ok +CONFIG_KPROBES=y$' \
	'ok +CONFIG_VIRTIO_BLK=y, built as a module' \
	'MISSING +CONFIG_IKCONFIG=y \[recommended\], here not set' \
	'MISSING +CONFIG_IKHEADERS=m \[optional\], here not set' \
	'^Verdict: vmtools works on this kernel, with the losses listed above'; do
	check "Debian $KERNEL_RELEASE: /$want/" grep -Eq "$want" "$T/deb.out"
done

# --quiet: only what is missing, with its cost, and the verdict.
"$A" check-kernel -q --config "$deb" >"$T/quiet.out" 2>&1
check "--quiet prints only the missing options, their costs and the verdict" \
	bash -c "[ \$(grep -c '^MISSING' '$T/quiet.out') = \$(grep -c '^MISSING' '$T/deb.out') ] &&
		! grep -q '^ok ' '$T/quiet.out' && grep -q '^         without ' '$T/quiet.out' &&
		grep -q '^Verdict:' '$T/quiet.out'"

# The same config gzip-compressed, as /proc/config.gz is.
gzip -c "$deb" >"$T/config.gz"
"$A" check-kernel --config "$T/config.gz" >"$T/gz.out" 2>&1
check "a gzip-compressed config gives the same verdicts" \
	diff <(grep -v '^Checking' "$T/deb.out") <(grep -v '^Checking' "$T/gz.out")

# A kernel without the bpf() syscall: required option missing, exit 1.
sed -e 's/^CONFIG_BPF_SYSCALL=y/# CONFIG_BPF_SYSCALL is not set/' "$deb" >"$T/nobpf.config"
"$A" check-kernel --config "$T/nobpf.config" >"$T/nobpf.out" 2>&1
check_said $? 1 "$T/nobpf.out" "without CONFIG_BPF_SYSCALL: exit 1, the option and the verdict named" \
	'^MISSING  CONFIG_BPF_SYSCALL=y \[required\], here not set' '^Verdict: vmtools cannot work on this kernel'
# Frame pointers instead of ORC are accepted as the same job done.
sed -e 's/^CONFIG_UNWINDER_ORC=y/# CONFIG_UNWINDER_ORC is not set/' \
	-e 's/^# CONFIG_UNWINDER_FRAME_POINTER is not set/CONFIG_UNWINDER_FRAME_POINTER=y/' "$deb" >"$T/fp.config"
check "frame pointers instead of ORC count as the unwinder" \
	grep -q '^ok       CONFIG_UNWINDER_ORC=y, via CONFIG_UNWINDER_FRAME_POINTER=y instead' \
	<("$A" check-kernel --config "$T/fp.config")

# Merge the fragment the way merge_config.sh -m does: drop every option the
# fragment names (its two patterns), append the fragment.  Nothing may be
# missing afterwards, and every option line must be one merge_config sees.
sed -n -e 's/^\(CONFIG_[a-zA-Z0-9_]*\)=.*/\1/p' -e 's/^# \(CONFIG_[a-zA-Z0-9_]*\) is not set$/\1/p' "$FRAG" >"$T/frag.opts"
cp "$deb" "$T/merged.config"
while read -r opt; do
	sed -i -e "/^$opt[ =]/d" -e "/^# $opt is not set/d" "$T/merged.config"
done <"$T/frag.opts"
cat "$FRAG" >>"$T/merged.config"
n=$(wc -l <"$T/frag.opts")
"$A" check-kernel --config "$T/merged.config" >"$T/merged.out" 2>&1
check_said $? 0 "$T/merged.out" "Debian's config with the fragment merged in: all $n options present" \
	"^Summary: $n of $n present"
check "every option line of the fragment is one merge_config.sh recognises" \
	test "$(grep -cE '^CONFIG_|^# CONFIG_' "$FRAG")" = "$(wc -l <"$T/frag.opts")"

# Errors: a file that is not a config, a file that does not exist.
"$A" check-kernel --config /etc/hostname >"$T/err.out" 2>&1
check_said $? 2 "$T/err.out" "a file that is not a kernel config: exit 2, named" \
	'/etc/hostname has no CONFIG_ lines'
"$A" check-kernel --config "$T/missing.config" >"$T/err.out" 2>&1
check_said $? 2 "$T/err.out" "a missing config file: exit 2, named" \
	"cannot open kernel config $T/missing.config"
