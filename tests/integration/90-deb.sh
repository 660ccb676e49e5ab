#!/usr/bin/env bash
# tests/integration/90-deb.sh - the Debian packages as a user meets them:
# `make deb` builds vmtools-image and vmtools-agent, twice with the same
# SOURCE_DATE_EPOCH into the same bytes; lintian finds no error; on this
# machine `apt-get install ./vmtools-agent_*.deb ./vmtools-image_*.deb`
# resolves every dependency from the archive; `dpkg -L` lists the binaries,
# units, man pages and web UI; both binaries answer --version; the units
# pass `systemd-analyze verify`, and `systemd-analyze security` scores the
# agent's (beside the same unit without its hardening); the installed
# `vmtools-agent serve --no-setup` serves /ui/ with no --ui-dir; `apt-get
# purge` leaves no file behind, the units' state and cache directories
# included.
#
# This test changes the host, and puts it back: packages it installs (the two
# and the dependencies apt pulled in) are purged at exit, whatever happened,
# and a policy-rc.d it adds (so that no service starts on the host) is
# removed; a run killed before that is cleaned up by the next ($MARK).  It
# does not run where either package was installed otherwise: it could not
# put that one back.
# Also: lintian --pedantic; the agent's Depends from dpkg-shlibdeps plus the
# dlopen'ed libmicrohttpd12 and libssl3, libdebuginfod1 and libcurl4
# recommended; man 8 vmtools-agent has serve's options; the agent's unit
# scores at most 4.0; purge leaves no new path under /etc, /usr, /lib, /opt,
# /var or /srv.  What it installed is listed in $BUILD/.90-deb-installed
# until purged.
. "$(dirname "$0")/../lib/tap.sh"

skip_unless "Debian packages" "$(need_root)" "$(need_cmd dpkg-buildpackage dh apt-get lintian git curl)"
if [ ! -d "$SRC/.git" ] && [ ! -f "$SRC/.git" ]; then
	skip "Debian packages" "make deb packs the files git tracks; $SRC is no git checkout"
	exit 0
fi
APT=(apt-get -y -q -o DPkg::Lock::Timeout=300)
export DEBIAN_FRONTEND=noninteractive
POLICY=/usr/sbin/policy-rc.d
# What a run installs is listed in MARK until its purge: a run killed before
# it (SIGKILL at the time limit) is cleaned up by the next, as is its
# policy-rc.d.
MARK=$BUILD/.90-deb-installed
if [ -s "$MARK" ]; then
	# shellcheck disable=SC2046 # one word per package
	left=$(for p in $(cat "$MARK"); do dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "$p" 2>/dev/null; done |
		awk '$1 !~ /^.n/ { print $2 }' | tr '\n' ' ')
	echo "# an earlier run was stopped before its purge; purging what it installed: ${left:-nothing left}"
	# shellcheck disable=SC2086 # one word per package
	[ -z "$left" ] || "${APT[@]}" purge $left >"$T/earlier-purge.log" 2>&1 || {
		not_ok "purge what an earlier run left installed: $left"
		diag "$T/earlier-purge.log"
		exit 0
	}
	rm -f "$MARK"
fi
[ -f "$POLICY" ] && grep -q '90-deb.sh' "$POLICY" && rm -f "$POLICY"
for p in vmtools-agent vmtools-image; do
	if dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' installed$'; then
		skip "Debian packages" "$p is installed on this machine; the test would not put it back after its purge"
		exit 0
	fi
done
EPOCH=1764000000

# --- build, twice ---------------------------------------------------------
DEBS=$BUILD/deb
for run in 1 2; do
	t0=$(date +%s)
	if ! SOURCE_DATE_EPOCH=$EPOCH make -C "$SRC" --no-print-directory BUILD="$BUILD" deb >"$T/make-deb-$run.log" 2>&1; then
		not_ok "make deb (run $run)"
		diag "$T/make-deb-$run.log"
		exit 0
	fi
	mkdir -p "$T/$run"
	cp "$DEBS"/*.deb "$T/$run/"
	(cd "$T/$run" && sha256sum -- *.deb) >"$T/sums-$run"
	secs[run]=$(($(date +%s) - t0))
done
ok "make deb builds $(cd "$T/1" && ls -- *.deb | tr '\n' ' ')in ${secs[1]}s ($(cd "$T/1" && stat -c '%n %s' vmtools-agent_*.deb vmtools-image_*.deb | tr '\n' ' ' | sed 's/ $//') bytes)"
if cmp -s "$T/sums-1" "$T/sums-2"; then
	ok "two builds with SOURCE_DATE_EPOCH=$EPOCH are byte-identical ($(wc -l <"$T/sums-1") packages)"
else
	not_ok "two builds with SOURCE_DATE_EPOCH=$EPOCH differ"
	diff "$T/sums-1" "$T/sums-2" | diag
fi
AGENT_DEB=$(ls "$T"/1/vmtools-agent_*.deb)
IMAGE_DEB=$(ls "$T"/1/vmtools-image_*.deb)

lintian --pedantic -I "$T"/1/*.deb >"$T/lintian" 2>&1
if grep -q '^E: ' "$T/lintian"; then
	not_ok "lintian reports errors"
	grep '^E: ' "$T/lintian" | diag
else
	ok "lintian reports no error ($(grep -c '^W: ' "$T/lintian") warnings, $(grep -c '^I: ' "$T/lintian") infos)"
	grep '^W: ' "$T/lintian" | diag
fi

# What dpkg-shlibdeps found, and the dlopen'ed libraries named by hand.
depends=$(dpkg-deb -f "$AGENT_DEB" Depends)
case $depends in
*libbpf1*libmicrohttpd12*libssl3*) ok "vmtools-agent depends on what it links (libbpf1, ...) and what it dlopens (libmicrohttpd12, libssl3)" ;;
*) not_ok "vmtools-agent's Depends: $depends" ;;
esac
[ "$(dpkg-deb -f "$AGENT_DEB" Recommends)" = "libdebuginfod1, libcurl4" ] &&
	ok "vmtools-agent recommends libdebuginfod1 and libcurl4 (dlopen'ed for --debuginfod-url and --push-url)" ||
	not_ok "vmtools-agent's Recommends: $(dpkg-deb -f "$AGENT_DEB" Recommends)"

# --- install --------------------------------------------------------------
# snapshot FILE: every path under the places a package may write, but for
# the package managers' own records and logs.
snapshot() {
	find /etc /usr /lib /opt /var /srv \
		\( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/log -o -path /var/cache/apt \
		-o -path /var/cache/man -o -path /var/cache/debconf -o -path /var/cache/ldconfig \
		-o -path /var/tmp -o -path /var/lib/systemd/deb-systemd-helper-enabled \
		-o -path /var/lib/systemd/deb-systemd-helper-masked \) -prune -o -print 2>/dev/null | LC_ALL=C sort
}
installed() { dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' 2>/dev/null | awk '$1 ~ /^.i/ { print $2 }' | LC_ALL=C sort; }
installed >"$T/pkgs-before"
snapshot >"$T/files-before"

# No service may start on this host: policy-rc.d says so to
# deb-systemd-invoke (when the host runs systemd), unless one is there.
if [ ! -e "$POLICY" ]; then
	printf '#!/bin/sh\n# made by vmtools tests/integration/90-deb.sh, removed at its exit\nexit 101\n' >"$POLICY"
	chmod 755 "$POLICY"
	at_exit "rm -f '$POLICY'"
fi
# purge_new: purge the two packages and whatever was installed since the
# snapshot (their dependencies), whatever state they are in.
purge_new() {
	local new
	new=$(installed | LC_ALL=C comm -13 "$T/pkgs-before" - | tr '\n' ' ')
	for p in vmtools-agent vmtools-image; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -qv '^unknown ok not-installed' && new="$new $p"
	done
	if [ -n "${new// /}" ]; then
		# shellcheck disable=SC2086 # one word per package
		"${APT[@]}" purge $new || return 1
	fi
	rm -f "$MARK"
}
at_exit purge_new

cp "$AGENT_DEB" "$IMAGE_DEB" "$T/"
t0=$(date +%s)
echo vmtools-agent vmtools-image >"$MARK"
(cd "$T" && "${APT[@]}" install ./"$(basename "$AGENT_DEB")" ./"$(basename "$IMAGE_DEB")") >"$T/install.log" 2>&1
st=$?
installed | LC_ALL=C comm -13 "$T/pkgs-before" - >"$MARK"
echo vmtools-agent vmtools-image >>"$MARK"
(exit $st)
check_said $? 0 "$T/install.log" \
	"apt-get install ./vmtools-agent_*.deb ./vmtools-image_*.deb resolves every dependency from the archive and installs ($(($(date +%s) - t0))s; new: $(installed | LC_ALL=C comm -13 "$T/pkgs-before" - | tr '\n' ' '))" ||
	exit 0

dpkg -L vmtools-agent vmtools-image >"$T/listed"
missing=
for f in /usr/bin/vmtools-image /usr/sbin/vmtools-agent \
	/lib/systemd/system/vmtools-setup.service /lib/systemd/system/vmtools-agent.service \
	/etc/default/vmtools-agent /usr/share/man/man1/vmtools-image.1.gz \
	/usr/share/man/man8/vmtools-agent.8.gz /usr/share/vmtools/ui/index.html \
	/usr/share/vmtools/ui/speedscope/index.html /usr/share/vmtools/vmtools.config; do
	grep -qxF "$f" "$T/listed" && [ -e "$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && ok "dpkg -L lists the binaries, both units, the options file, both man pages and the web UI ($(wc -l <"$T/listed") paths)" ||
	not_ok "dpkg -L lacks:$missing"

for b in /usr/bin/vmtools-image /usr/sbin/vmtools-agent; do
	out=$("$b" --version 2>&1)
	[ "$out" = "$(basename "$b") $(dpkg-query -W -f='${Version}' "$(basename "$b")")" ] &&
		ok "$b --version says '$out', the package's version" ||
		not_ok "$b --version says '$out'"
done
if command -v man >/dev/null 2>&1; then
	MANWIDTH=80 man 8 vmtools-agent 2>&1 | col -b >"$T/man8"
	grep -q 'COMMAND SERVE' "$T/man8" && grep -q -- '--history-dir' "$T/man8" &&
		ok "man 8 vmtools-agent shows the page, with serve's options from its --help" ||
		{ not_ok "man 8 vmtools-agent"; diag "$T/man8"; }
fi

# The units, as installed.
systemd-analyze verify /lib/systemd/system/vmtools-setup.service /lib/systemd/system/vmtools-agent.service >"$T/verify" 2>&1
st=$?
[ $st = 0 ] && [ ! -s "$T/verify" ] && ok "systemd-analyze verify finds nothing to say about either unit" ||
	{ not_ok "systemd-analyze verify (exit $st)"; diag "$T/verify"; }
exposure() { systemd-analyze security --offline=true "$1" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\) .*/\1/p'; }
sed -n '/^\[Unit\]/,/^\[Service\]/p' /lib/systemd/system/vmtools-agent.service >"$T/bare-agent.service"
grep -E '^(Type|EnvironmentFile|ExecStart|Restart)=' /lib/systemd/system/vmtools-agent.service >>"$T/bare-agent.service"
after=$(exposure /lib/systemd/system/vmtools-agent.service)
before=$(exposure "$T/bare-agent.service")
setup_after=$(exposure /lib/systemd/system/vmtools-setup.service)
if [ -n "$after" ] && [ -n "$before" ] && awk -v a="$after" 'BEGIN { exit !(a <= 4.0) }'; then
	ok "systemd-analyze security: vmtools-agent.service's exposure $after (the same unit without its hardening: $before); vmtools-setup.service's $setup_after"
else
	not_ok "systemd-analyze security: vmtools-agent.service's exposure '$after' (bound 4.0; without hardening '$before')"
	systemd-analyze security --offline=true /lib/systemd/system/vmtools-agent.service 2>&1 | grep '✗' | diag
fi

# The installed agent finds its web UI where the package put it.
port=$((20000 + RANDOM % 40000))
/usr/sbin/vmtools-agent serve --no-setup --listen "127.0.0.1:$port" >"$T/serve.log" 2>&1 &
serve_pid=$!
at_exit "kill $serve_pid"
for _ in $(seq 100); do
	curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$port/healthz" && break
	sleep 0.1
done
code=$(curl -s -o "$T/ui.html" -w '%{http_code}' --max-time 10 "http://127.0.0.1:$port/ui/")
if [ "$code" = 200 ] && cmp -s "$T/ui.html" /usr/share/vmtools/ui/index.html; then
	ok "the installed vmtools-agent serve --no-setup serves /ui/ from /usr/share/vmtools/ui with no --ui-dir"
else
	not_ok "GET /ui/ from the installed agent: $code"
	cat "$T/serve.log" "$T/ui.html" 2>/dev/null | diag
fi
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$port/ui/speedscope/index.html")
[ "$code" = 200 ] && ok "and speedscope under /ui/speedscope/" || not_ok "GET /ui/speedscope/index.html: $code"
kill "$serve_pid" 2>/dev/null
wait "$serve_pid" 2>/dev/null
# What vmtools-agent.service writes (its StateDirectory and CacheDirectory)
# goes with the purge too; made here as the unit would, unless they are
# there already (then they are not this test's to lose).
state_made=
if [ ! -e /var/lib/vmtools ] && [ ! -e /var/cache/vmtools ]; then
	mkdir -p /var/lib/vmtools/history /var/cache/vmtools/debuginfod
	touch /var/lib/vmtools/history/cpu-20261125T000000Z-20261125T000010Z.pb.gz /var/cache/vmtools/debuginfod/x
	state_made=yes
fi

# --- purge ------------------------------------------------------------------
"${APT[@]}" purge vmtools-agent vmtools-image >"$T/purge.log" 2>&1
check_said $? 0 "$T/purge.log" "apt-get purge vmtools-agent vmtools-image"
left=
while read -r f; do
	[ -e "$f" ] || [ -L "$f" ] || continue
	# Directories of the system (/., the /lib link) and of other packages
	# (/usr/sbin, /lib/systemd/system ...) stay.
	if [ -d "$f" ] && { [ "$f" = /. ] || [ -L "$f" ] || [ -n "$(dpkg-query -S "$f" 2>/dev/null)" ]; }; then
		continue
	fi
	left="$left $f"
done <"$T/listed"
[ -n "$state_made" ] && { [ -e /var/lib/vmtools ] || [ -e /var/cache/vmtools ]; } && left="$left /var/lib/vmtools /var/cache/vmtools"
[ -z "$left" ] && ok "after apt-get purge, nothing the packages listed is left${state_made:+, nor the state and cache directories of the units}" ||
	not_ok "after apt-get purge these are left:$left"
purge_new >"$T/purge-deps.log" 2>&1
installed | LC_ALL=C comm -3 "$T/pkgs-before" - >"$T/pkgs-diff"
[ ! -s "$T/pkgs-diff" ] && ok "the dependencies apt pulled in are purged too: the machine has the packages it had" ||
	{ not_ok "installed packages differ from before"; diag "$T/pkgs-diff"; }
[ -e "$POLICY" ] && grep -q '90-deb.sh' "$POLICY" && rm -f "$POLICY"
snapshot | LC_ALL=C comm -13 "$T/files-before" - | grep -v "^${TMPDIR:-/tmp}" >"$T/files-new"
if [ ! -s "$T/files-new" ]; then
	ok "no file is left behind: /etc, /usr, /lib, /opt, /var and /srv hold no path they did not hold before"
else
	not_ok "files left behind after the purge"
	diag "$T/files-new"
fi
