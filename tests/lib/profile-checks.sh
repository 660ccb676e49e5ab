# shellcheck shell=bash
# tests/lib/profile-checks.sh - what `vmtools-agent profile` must do
# whichever backend samples, written once and run by each backend's own
# script (30- and 31- for bpf, 70- and 71- for perf).  Sourced after tap.sh;
# the burner's checks need burn.sh, PostgreSQL's need pg.sh (a cluster
# started, pgbench's tables made).  BACKEND is bpf or perf; every line a
# check prints starts with "BACKEND: ".
#
#   profile_bg BACKEND NAME [ARG]...
#       `vmtools-agent profile --profiler BACKEND ARG... --output
#       $T/NAME.pb` in the background (stderr in $T/NAME.err), returning once
#       it samples; PROFILE_PID, and for perf PERF_PID (its perf child)
#   check_interrupted BACKEND NAME
#       SIGINT to that profile: it exits 0 with what was collected
#   check_burn_profile BACKEND PROFILE COMM FREQ
#       the profile of `run_burn COMM` at FREQ Hz: go tool pprof reads it
#       without a warning, its sample types and period, its labels, the
#       burner's mapping with its build id, the 3:1 ratio and the count
#   check_folded_gzip BACKEND       --format folded and --gzip of the burner
#   check_pid_follows_forks BACKEND --pid samples children forked later
#   check_cli_refusals BACKEND      a missing pid, a bad frequency, no --output
#   check_postgres_profile BACKEND SECONDS
#       a SECONDS-long profile (comm postgres, the default) of pgbench -S
#       backends that connect after it starts and exit before it ends:
#       PostgreSQL's and the kernel's functions named, every location with
#       a function, build ids, backend types, only postgres sampled, exited
#       backends still symbolized
#   check_postgres_debug_file BACKEND
#       static functions of a stripped postgres named from its separate
#       debug file, found by .gnu_debuglink: tests/pg-versions' 17 (which
#       carries .symtab) split as a distribution splits its packages
#       (objcopy --only-keep-debug, then --strip-all --add-gnu-debuglink),
#       a cluster of it busy in the executor, profiled once with the debug
#       file put aside (the hot static function is postgres+0x...) and once
#       with it (ExecInterpExpr, ExecNestLoop).  Debian's own postgres has
#       no debug file here: postgresql-15-dbgsym is only in Debian's
#       debug archive, which this machine cannot reach.

profile_bg() {
	local b=$1 name=$2 i
	shift 2
	"$VMTOOLS_AGENT" profile --profiler "$b" "$@" --output "$T/$name.pb" \
		2>"$T/$name.err" &
	PROFILE_PID=$!
	at_exit "kill $PROFILE_PID"
	case $b in
	perf)
		PERF_PID=
		for ((i = 0; i < 100; i++)); do
			PERF_PID=$(pgrep -P "$PROFILE_PID" -x perf)
			[ -n "$PERF_PID" ] && break
			sleep 0.05
		done
		sleep 1 # perf's start-up
		;;
	*)
		# Until its sampling event is open on every online CPU: loading
		# the programs takes milliseconds on an idle machine and seconds
		# on a loaded one, longer than a workload started after a fixed
		# wait may last (31-'s pgbench of 2 s was then sampled only as
		# its backends exited, too late to read their titles).
		local cpus n
		cpus=$(getconf _NPROCESSORS_ONLN)
		for ((i = 0; i < 600; i++)); do
			n=$(find "/proc/$PROFILE_PID/fd" -lname 'anon_inode:\[perf_event\]' 2>/dev/null | wc -l)
			[ "$n" -ge "$cpus" ] || ! kill -0 "$PROFILE_PID" 2>/dev/null && break
			sleep 0.05
		done
		echo "# $b: the profile samples on $n of $cpus CPUs $((i * 50)) ms after it started"
		;;
	esac
}

check_interrupted() {
	local b=$1 name=$2 st
	kill -INT "$PROFILE_PID"
	wait "$PROFILE_PID"
	st=$?
	if [ "$st" = 0 ] && [ -s "$T/$name.pb" ]; then
		ok "$b: Ctrl-C ends a profile early and writes what was collected"
	else
		not_ok "$b: profile stopped by SIGINT: status $st"
		diag "$T/$name.err"
	fi
}

check_burn_profile() {
	local b=$1 pb=$2 comm=$3 freq=$4 mode
	for mode in -top -traces -raw; do
		check "$b: go tool pprof $mode reads the profile without a warning" \
			pprof_ok "$pb" "$mode"
	done
	go tool pprof -raw "$pb" >"$T/raw.txt" 2>/dev/null
	check "$b: the pprof has samples/count and cpu/nanoseconds, period 1e9/$freq" \
		bash -c "grep -q '^samples/count cpu/nanoseconds' '$T/raw.txt' &&
			grep -qx 'Period: $((1000000000 / freq))' '$T/raw.txt' &&
			grep -q 'PeriodType: cpu nanoseconds' '$T/raw.txt'"
	check "$b: samples carry comm $comm, pid and tid labels" \
		bash -c "grep -q 'comm:\[$comm\]' '$T/raw.txt' && grep -q 'pid:\[' '$T/raw.txt' && grep -q 'tid:\[' '$T/raw.txt'"
	check "$b: the burner's mapping carries its file name and GNU build id" \
		bash -c "id=\$(readelf -n '$BURN' | awk '/Build ID/ {print \$3}');
			[ -n \"\$id\" ] && grep -q \"$BURN\" '$T/raw.txt' && grep -q \"\$id\" '$T/raw.txt'"
	check_burn_ratio_count "$pb" "$comm" "$freq" "$b: "
}

check_folded_gzip() {
	local b=$1 comm=${1:0:1}fold$$
	run_burn "$comm" 2
	check "$b: folded output names comm;...;burn_hot_a;spin_until" \
		bash -c "'$VMTOOLS_AGENT' profile --profiler $b --seconds 2 --frequency 99 --comm '$comm' --format folded --output '$T/burn.folded' &&
			grep -Eq '^$comm;.*;burn_hot_a;spin_until(;[^ ]+)* [0-9]+\$' '$T/burn.folded'"
	wait "$BURN_WRAPPER"
	run_burn "$comm" 2
	check "$b: --gzip writes a gzip that go tool pprof reads" \
		bash -c "'$VMTOOLS_AGENT' profile --profiler $b --seconds 1 --comm '$comm' --gzip --output '$T/burn.pb.gz' &&
			gzip -t '$T/burn.pb.gz' && HOME='$HOME' go tool pprof -top '$T/burn.pb.gz' 2>&1 | grep -q burn_hot"
	wait "$BURN_WRAPPER"
}

check_pid_follows_forks() {
	local b=$1 comm=${1:0:1}child$$ lead=1.0 parent
	[ "$b" = perf ] && lead=1.5
	# The target forks and execs the burner once the profile runs.
	python3 - "$BURN" "$comm" "$lead" <<'PY' &
import os, sys, time
time.sleep(float(sys.argv[3]))  # the profile is running by now
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "--threads", "1", "--seconds", "2",
                           "--comm", sys.argv[2]])
os.waitpid(pid, 0)
PY
	parent=$!
	at_exit "kill $parent"
	check "$b: --pid samples the children the process forks during the profile" \
		bash -c "'$VMTOOLS_AGENT' profile --profiler $b --seconds 4 --frequency 99 --pid $parent --format folded --output '$T/pid.folded' &&
			grep -q '^$comm;.*burn_hot' '$T/pid.folded'"
	wait "$parent"
}

check_cli_refusals() {
	local b=$1
	check_fails "$b: --pid of a process that does not exist is refused" \
		"$VMTOOLS_AGENT" profile --profiler "$b" --seconds 1 --pid 999999999 --output "$T/none.pb"
	check "$b: and says which pid" \
		bash -c "'$VMTOOLS_AGENT' profile --profiler $b --seconds 1 --pid 999999999 --output '$T/none.pb' 2>&1 | grep -q 'no process with pid 999999999'"
	check_fails "$b: --frequency 0 is refused" \
		"$VMTOOLS_AGENT" profile --profiler "$b" --frequency 0 --output "$T/x.pb"
	check_fails "$b: --frequency 1001 is refused" \
		"$VMTOOLS_AGENT" profile --profiler "$b" --frequency 1001 --output "$T/x.pb"
	check_fails "$b: a missing --output is refused" \
		"$VMTOOLS_AGENT" profile --profiler "$b" --seconds 1
}

check_postgres_profile() {
	local b=$1 secs=$2 st new gone=0 typed=0 pid pgid
	ls /proc | grep -E '^[0-9]+$' | sort -n >"$T/pids.before"
	profile_bg "$b" pg --seconds "$secs" --frequency 199
	# Its backends are forked after the profile started, and exit before it ends.
	pg_bench_bg 2 -S -c 2
	wait "$PROFILE_PID"
	st=$?
	wait "$PG_BENCH_PID"
	if [ "$st" = 0 ] && [ -s "$T/pg.pb" ]; then
		ok "$b: the default profile (comm postgres) is taken under pgbench -S"
	else
		not_ok "$b: profile of PostgreSQL: status $st"
		diag "$T/pg.err"
	fi

	go tool pprof -raw "$T/pg.pb" >"$T/raw.txt" 2>"$T/raw.err"
	check "$b: go tool pprof -raw reads it without a warning" test ! -s "$T/raw.err"
	go tool pprof -top -nodecount=100000 "$T/pg.pb" >"$T/top.txt" 2>"$T/top.err"
	check "$b: go tool pprof -top reads it without a warning" test ! -s "$T/top.err"
	go tool pprof -traces "$T/pg.pb" >"$T/traces.txt" 2>"$T/traces.err"
	check "$b: go tool pprof -traces reads it without a warning" test ! -s "$T/traces.err"
	# "ID: ADDR M=N FUNCTION FILE:LINE s=0": a location without a function
	# has three fields, one without a mapping no M=.
	awk '/^Locations/ {on = 1; next} /^Mappings/ {on = 0}
		on && /^ +[0-9]+: / {n++; if (NF < 4 || $2 == "0x0" || ($3 ~ /^M=/ && NF < 5)) print}
		END {if (!n) print "no locations"}' "$T/raw.txt" >"$T/nameless.txt"
	check "$b: every location has a function, none is at address 0" test ! -s "$T/nameless.txt"
	[ -s "$T/nameless.txt" ] && diag "$T/nameless.txt"
	diag < <(go tool pprof -comments "$T/pg.pb" 2>/dev/null | grep 'frames named')
	check "$b: PostgreSQL's own functions are named (PostgresMain, PortalRun, ExecutorRun...)" \
		bash -c "grep -qw PostgresMain '$T/top.txt' && grep -qw PortalRun '$T/top.txt' &&
			grep -Eqw '(standard_)?ExecutorRun' '$T/top.txt'"
	pgid=$(readelf -n "$PG_BIN/postgres" | awk '/Build ID/ {print $3}')
	check "$b: kernel frames are named from kallsyms (entry_SYSCALL_64...)" \
		bash -c "grep -Eq 'entry_SYSCALL_64|do_syscall_64' '$T/top.txt' && grep -q 'kernel.kallsyms' '$T/raw.txt'"
	# The type comes from the title the agent reads in /proc/PID/cmdline
	# when it captures a backend (its first sample, agent/samples/proc.c).
	# pgbench's two clients live the 2 s of its run, all of it sampled
	# (profile_bg returns once the profile samples), so each is captured
	# with its title.  A backend that exits before the agent reads it
	# (pgbench's first connection, which only looks at the tables) has
	# no title and is typed by its command, 'postgres': so only some.
	check "$b: samples are labelled with the backend type 'client backend'" \
		grep -q 'backend_type:\[client backend\]' "$T/raw.txt"
	check "$b: the postgres mapping carries its build id" \
		bash -c "[ -n '$pgid' ] && grep -q '$pgid' '$T/raw.txt'"
	check "$b: only postgres processes are in the profile" \
		bash -c "! grep -o 'comm:\[[^]]*\]' '$T/raw.txt' | sort -u | grep -v 'comm:\[postgres\]'"

	# Backends forked after the profile started: pids that did not exist.
	grep -o 'pid:\[[0-9]*\]' "$T/raw.txt" | tr -dc '0-9\n' | sort -u >"$T/pids.sampled"
	new=$(comm -13 <(sort "$T/pids.before") <(sort "$T/pids.sampled") | wc -l)
	if [ "$new" -ge 2 ]; then
		ok "$b: backends that connected after the profile started are sampled ($new new pids)"
	else
		not_ok "$b: only $new pids born after the start were sampled"
		diag "$T/pids.sampled"
	fi
	# Backends that exited before the profile ended are symbolized, and
	# typed, from what was captured while they lived.
	for pid in $(comm -13 <(sort "$T/pids.before") <(sort "$T/pids.sampled")); do
		[ -d /proc/$pid ] && continue
		awk -v pid="$pid" '/^-----/ {if (hit && named) found=1; hit=0; named=0}
			$1 == "pid:" && $2 == pid {hit=1} /PostgresMain/ {named=1}
			END {if (hit && named) found=1; exit !found}' "$T/traces.txt" && gone=$((gone + 1))
		awk -v pid="$pid" '/^-----/ {if (hit && typed) found=1; hit=0; typed=0}
			$1 == "pid:" && $2 == pid {hit=1} /backend_type: +client backend/ {typed=1}
			END {if (hit && typed) found=1; exit !found}' "$T/traces.txt" && typed=$((typed + 1))
	done
	if [ "$gone" -ge 1 ]; then
		ok "$b: backends that exited before the end are symbolized ($gone such pids with PostgresMain)"
	else
		not_ok "$b: no exited backend had named frames"
	fi
	if [ "$typed" -ge 1 ]; then
		ok "$b: backends that exited before the end keep their backend type 'client backend' ($typed pids)"
	else
		not_ok "$b: no exited backend was labelled 'client backend'"
	fi
}

# pg_split_server DIR: tests/pg-versions' PostgreSQL 17.10 copied to DIR, its
# postgres split into a stripped executable with a .gnu_debuglink and
# DIR/bin/.debug/postgres.debug; prints why and fails when it cannot.
pg_split_server() {
	local dir=$1 bin
	bin=$(pg_release_bin 17.10)
	[ -x "$bin/postgres" ] || { echo "no $bin/postgres: run ci/install-deps.sh"; return 1; }
	pg_copy_release 17.10 "$dir" || return 1
	mkdir -p "$dir/bin/.debug"
	(
		cd "$dir/bin" &&
			objcopy --only-keep-debug postgres .debug/postgres.debug &&
			objcopy --strip-all --add-gnu-debuglink=.debug/postgres.debug postgres postgres.stripped &&
			mv postgres.stripped postgres
	) || { echo "objcopy could not split $dir/bin/postgres"; return 1; }
	chmod -R a+rX "$dir"
}

check_postgres_debug_file() {
	local b=$1 saved="$T $PG_BIN $PGDATA_DIR $PGPORT $PGHOST" why
	local dir=$T/split qpid
	mkdir -p "$dir"
	if ! why=$(pg_split_server "$dir/server"); then
		not_ok "$b: a stripped postgres with a separate debug file is made ($why)"
		return
	fi
	check "$b: the stripped postgres has no symbol table, its debug file has ExecInterpExpr" \
		bash -c "! readelf -S '$dir/server/bin/postgres' | grep -q '\.symtab' &&
			readelf -x .gnu_debuglink '$dir/server/bin/postgres' | grep -q 'postgres' &&
			nm '$dir/server/bin/.debug/postgres.debug' | grep -qw ExecInterpExpr"
	T=$dir PG_BIN=$dir/server/bin
	if ! pg_start; then
		not_ok "$b: a cluster of the stripped PostgreSQL 17 starts"
		read -r T PG_BIN PGDATA_DIR PGPORT PGHOST <<<"$saved"
		export PGPORT PGHOST
		return
	fi
	for with in without with; do
		[ "$with" = without ] && mv "$dir/server/bin/.debug" "$dir/server/bin/.debug.aside"
		[ "$with" = with ] && mv "$dir/server/bin/.debug.aside" "$dir/server/bin/.debug"
		# A nested loop over pg_class, ended by statement_timeout.
		pg_as psql -h "$PGHOST" -p "$PGPORT" -U postgres -X -q -c "SET statement_timeout = '6s'" \
			-c "SELECT count(*) FROM pg_class a, pg_class b, pg_class c WHERE a.relnatts + b.relnatts + c.relnatts = -1" \
			postgres >/dev/null 2>&1 &
		qpid=$!
		sleep 1
		"$VMTOOLS_AGENT" profile --profiler "$b" --seconds 3 --frequency 199 \
			--output "$dir/$with.pb" 2>"$dir/$with.err"
		wait "$qpid"
		go tool pprof -top -nodecount=100000 "$dir/$with.pb" >"$dir/$with.top" 2>&1
	done
	check "$b: with the debug file put aside, the executor's static functions are unnamed (postgres+0x...)" \
		bash -c "! grep -qw ExecInterpExpr '$dir/without.top' && grep -q 'postgres+0x' '$dir/without.top'"
	diag < <(head -n 12 "$dir/without.top")
	check "$b: with it, static functions come from the debug file (ExecInterpExpr, ExecNestLoop)" \
		bash -c "grep -qw ExecInterpExpr '$dir/with.top' && grep -qw ExecNestLoop '$dir/with.top'"
	diag < <(head -n 12 "$dir/with.top")
	pg_as "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w stop >/dev/null 2>&1
	read -r T PG_BIN PGDATA_DIR PGPORT PGHOST <<<"$saved"
	export PGPORT PGHOST
}
