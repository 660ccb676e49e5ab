#!/usr/bin/env python3
# tests/lib/slow-heads.py - a slowloris client for the agent's tests: holds
# N connections to 127.0.0.1:PORT (or --host) whose request head never
# ends, sending one header byte each every --interval seconds for
# --seconds, and opening a new connection in place of each one the agent
# closes (at most one per connection and interval, so a refused client
# does not become a flood).  Then it stops opening, waits up to --linger
# seconds for the agent to close what is left, and prints one line:
#
#   opened O closed_by_agent C still_open S answered A status=CODE:N,...
#   lifetime_ms min=.. median=.. max=..
#
# O connections opened, C of them closed by the agent (end of stream or
# reset) while the client kept them, S still open at the end (closed by
# the client), A that got an answer before being closed, by status code;
# the lifetimes are those of the connections the agent closed.
import argparse
import re
import select
import socket
import statistics
import time

ap = argparse.ArgumentParser()
ap.add_argument("port", type=int)
ap.add_argument("--host", default="127.0.0.1")
ap.add_argument("--count", type=int, default=80)
ap.add_argument("--interval", type=float, default=1.0)
ap.add_argument("--seconds", type=float, default=15.0)
ap.add_argument("--linger", type=float, default=10.0)
a = ap.parse_args()

opened = 0
lifetimes = []
statuses = {}
live = {}  # socket -> [opened at, bytes received]


def open_one():
    global opened
    s = socket.socket()
    s.setblocking(True)
    try:
        s.connect((a.host, a.port))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    except OSError:
        # Refused or reset at once: counted as closed by the agent.
        opened += 1
        lifetimes.append(0.0)
        s.close()
        return
    s.setblocking(False)
    opened += 1
    live[s] = [time.monotonic(), b""]


def ended(s):
    """Read what came; True when the agent closed the connection."""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                return True
            live[s][1] += b
    except BlockingIOError:
        return False
    except OSError:
        return True


def close_ended():
    if not live:
        return 0
    r, _, _ = select.select(list(live), [], [], 0)
    n = 0
    for s in r:
        if ended(s):
            t0, data = live.pop(s)
            lifetimes.append(time.monotonic() - t0)
            m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
            if m:
                code = m.group(1).decode()
                statuses[code] = statuses.get(code, 0) + 1
            s.close()
            n += 1
    return n


for _ in range(a.count):
    open_one()
end = time.monotonic() + a.seconds
while time.monotonic() < end:
    t = time.monotonic() + a.interval
    while time.monotonic() < t:
        close_ended()
        time.sleep(0.05)
    for s in list(live):
        try:
            s.send(b"x")
        except OSError:
            pass
    close_ended()
    for _ in range(a.count - len(live)):
        open_one()
end = time.monotonic() + a.linger
while live and time.monotonic() < end:
    close_ended()
    time.sleep(0.05)
still = len(live)
for s in live:
    s.close()
ms = sorted(x * 1000 for x in lifetimes) or [0]
print("opened %d closed_by_agent %d still_open %d answered %d status=%s" %
      (opened, len(lifetimes), still, sum(statuses.values()),
       ",".join("%s:%d" % kv for kv in sorted(statuses.items())) or "-"))
print("lifetime_ms min=%d median=%d max=%d" %
      (ms[0], statistics.median(ms), ms[-1]))
