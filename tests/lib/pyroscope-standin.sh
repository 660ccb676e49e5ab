# shellcheck shell=bash
# tests/lib/pyroscope-standin.sh - starts tests/lib/pyroscope-standin.py,
# the stand-in for a Pyroscope server's /ingest that the push tests send
# to, sourced after tap.sh.
#
#   standin_start DIR [PORT]  start it (again, on PORT; default any port)
#                             keeping what it receives in DIR, its stderr
#                             in DIR.log; returns once it listens.  Sets
#                             STANDIN_PID and STANDIN_PORT; it is killed
#                             when the script ends.  What it answers comes
#                             from DIR/mode (written before or while it
#                             runs; see the .py).
#   standin_stop              stop it ("down" for the agent) and wait

standin_start() {
	local dir=$1
	mkdir -p "$dir"
	rm -f "$dir/port"
	python3 "$SRC/tests/lib/pyroscope-standin.py" "$dir" "${2:-0}" 2>>"$dir.log" &
	STANDIN_PID=$!
	at_exit "kill $STANDIN_PID"
	for ((i = 0; i < 100; i++)); do
		[ -s "$dir/port" ] && break
		sleep 0.05
	done
	STANDIN_PORT=$(cat "$dir/port")
}

standin_stop() {
	kill "$STANDIN_PID"
	wait "$STANDIN_PID" 2>/dev/null
}
