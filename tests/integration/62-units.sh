#!/usr/bin/env bash
# tests/integration/62-units.sh - the systemd units as the Makefile makes
# them from systemd/*.service.in (here with this build's agent as their
# program): `systemd-analyze verify` has nothing to say about either, and
# vmtools-agent.service has its resource bounds (docs/install.md, "The
# agent's bounds"), given as they are set there, in guest-setup.md and
# the man page, each fitting what the agent bounds by itself:
# MemoryHigh above what it keeps (the home of binaries' bound, as a
# running agent reports it on /healthz, and the history's default, as
# `serve --help` says it) with room to spare, MemoryMax above that with
# room for a request's own memory, TasksMax above a thread per connection
# at --max-connections' default, and a CPU and I/O weight below the
# default of 100 and a positive nice value, so that PostgreSQL comes
# first.  That a running agent has them and still profiles under them is
# tests/vm/20-systemd-guest.sh's.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/agent.sh"

skip_unless "the systemd units" "$(need_cmd systemd-analyze numfmt python3 make)"

U=$T/units
if ! make -s -C "$SRC" BUILD="$U" SBINDIR="$(dirname "$VMTOOLS_AGENT")" SYSCONFDIR=/etc \
	"$U/systemd/vmtools-agent.service" "$U/systemd/vmtools-setup.service" >"$T/make.log" 2>&1; then
	not_ok "make writes the units"
	diag "$T/make.log"
	exit 0
fi
UNIT=$U/systemd/vmtools-agent.service

# No man page here: that is the package's (90-deb.sh verifies the units
# as installed, man pages included).
systemd-analyze verify --man=no "$UNIT" "$U/systemd/vmtools-setup.service" >"$T/verify" 2>&1
st=$?
[ $st = 0 ] && [ ! -s "$T/verify" ] && ok "systemd-analyze verify finds nothing to say about either unit" ||
	{ not_ok "systemd-analyze verify (exit $st)"; diag "$T/verify"; }

# value NAME: the unit's NAME=, in bytes for sizes (1G: 1073741824).
value() { sed -n "s/^$1=//p" "$UNIT" | tail -n 1; }
bytes() { numfmt --from=iec "$(value "$1")" 2>/dev/null; }
# Each set, and said as it is set where an operator reads it.
: >"$T/unsaid"
for name in MemoryHigh MemoryMax CPUWeight IOWeight Nice TasksMax; do
	if [ -z "$(value $name)" ]; then
		not_ok "vmtools-agent.service sets $name="
		continue
	fi
	for doc in docs/install.md docs/guest-setup.md man/vmtools-agent.h2m; do
		grep -q "$name=$(value $name)\b" "$SRC/$doc" ||
			echo "$doc does not say $name=$(value $name)" >>"$T/unsaid"
	done
done
[ ! -s "$T/unsaid" ] && ok "install.md, guest-setup.md and the man page give the unit's bounds as it sets them" ||
	{ not_ok "the unit's bounds where an operator reads them"; diag "$T/unsaid"; }

start_agent serve
curl -sS --max-time 10 -o "$T/healthz.json" "$AGENT_URL/healthz"
home=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["symbols"]["max_bytes"])' "$T/healthz.json" 2>/dev/null)
history=$("$VMTOOLS_AGENT" serve --help | sed -n '/--history-max-bytes/,/)/p' | tr -s ' \n' ' ' |
	sed -n 's/.*(default \([0-9]*\)).*/\1/p')
connections=$("$VMTOOLS_AGENT" serve --help | sed -n '/--max-connections/,/)/p' | tr -s ' \n' ' ' |
	sed -n 's/.*(default \([0-9]*\);.*/\1/p')
stop_agent >/dev/null
if [ -z "$home" ] || [ -z "$history" ] || [ -z "$connections" ]; then
	not_ok "the agent's own bounds are read: home '$home', history '$history', connections '$connections'"
	diag "$T/healthz.json"
	exit 0
fi
echo "# the agent's own bounds: home of binaries $((home >> 20)) MiB, history $((history >> 20)) MiB, $connections connections"

# What it keeps, and a margin for the agent itself and a continuous
# window's stacks (16 MiB at least).
high=$(bytes MemoryHigh)
keeps=$((home + history + (128 << 20)))
[ -n "$high" ] && [ "$high" -ge "$keeps" ] &&
	ok "MemoryHigh=$(value MemoryHigh) is above what the agent keeps by its own bounds and 128 MiB more ($((keeps >> 20)) MiB)" ||
	not_ok "MemoryHigh=$(value MemoryHigh) is under what the agent keeps by its own bounds ($((keeps >> 20)) MiB)"
# A request may add a profile's stacks (288 MiB) and two merged histories.
max=$(bytes MemoryMax)
[ -n "$max" ] && [ -n "$high" ] && [ "$max" -ge $((high + (512 << 20))) ] &&
	ok "MemoryMax=$(value MemoryMax) leaves a request 512 MiB and more above MemoryHigh" ||
	not_ok "MemoryMax=$(value MemoryMax) is less than 512 MiB above MemoryHigh=$(value MemoryHigh)"
# A thread per connection, and what the agent runs besides (install.md
# counts them).
tasks=$(value TasksMax)
[[ $tasks =~ ^[0-9]+$ ]] && [ "$tasks" -ge $((connections + 64)) ] &&
	ok "TasksMax=$tasks is above a thread per connection ($connections) and 64 more" ||
	not_ok "TasksMax=$tasks is under a thread per connection ($connections) and 64 more"
[ "$(value CPUWeight)" -lt 100 ] 2>/dev/null && [ "$(value IOWeight)" -lt 100 ] 2>/dev/null &&
	[ "$(value Nice)" -gt 0 ] 2>/dev/null &&
	ok "PostgreSQL comes first: CPUWeight=$(value CPUWeight) and IOWeight=$(value IOWeight) under the default 100, Nice=$(value Nice)" ||
	not_ok "CPUWeight=$(value CPUWeight), IOWeight=$(value IOWeight), Nice=$(value Nice): not below PostgreSQL's"
