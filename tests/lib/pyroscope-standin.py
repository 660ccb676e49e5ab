#!/usr/bin/env python3
# tests/lib/pyroscope-standin.py - a stand-in for a Pyroscope server's
# ingest endpoint, for the push tests (no Pyroscope can be installed
# here).  It is NOT Pyroscope: it enforces what Pyroscope's ingest handler
# (pkg/ingester/pyroscope/ingest_handler.go) checks of a pprof push, as
# docs/continuous.md lists, and answers as told:
#
#   POST /ingest only (404 otherwise, 405 for another method)
#   name=APP{k=v,...}  an application name with labels, here host and kernel
#   from, until        whole numbers, from <= until (400 otherwise)
#   spyName, sampleRate  present, sampleRate a positive number
#   no format=         the multipart form is used only without it
#   multipart/form-data with a file field "profile" (400 otherwise); the
#   body is kept as DIR/FROM-UNTIL-N.pb.gz for go tool pprof to judge
#
# Every request is one JSON line in DIR/requests.jsonl (path, name,
# from, until, auth, tenant, status).  What it answers comes from the file
# DIR/mode, read per request: "ok" (200), "500", "413", "slow N" (wait N
# seconds, then 200), "flood" (200, then a body without end, up to 2 GiB,
# as a hostile server would: how much the client took before it closed is
# the record's "flooded").  "Down" is the test stopping the process.
#
#   pyroscope-standin.py DIR PORT   (PORT 0: any; the port is written to
#                                    DIR/port once listening)
import http.server
import json
import os
import re
import sys
import time
import urllib.parse

DIR = sys.argv[1]
NAME_RE = re.compile(r'^[A-Za-z0-9_.-]+\{([A-Za-z0-9_]+=[^,{}=]+)(,[A-Za-z0-9_]+=[^,{}=]+)*\}$')


def mode():
    try:
        return open(os.path.join(DIR, "mode")).read().split()
    except OSError:
        return ["ok"]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, text, rec):
        rec["status"] = status
        with open(os.path.join(DIR, "requests.jsonl"), "a") as f:
            f.write(json.dumps(rec) + "\n")
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.answer(405, "method not allowed", {"path": self.path})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        one = lambda k: q.get(k, [None])[0]
        rec = {"path": url.path, "name": one("name"), "from": one("from"),
               "until": one("until"), "auth": self.headers.get("Authorization"),
               "tenant": self.headers.get("X-Scope-OrgID")}
        if url.path != "/ingest":
            return self.answer(404, "not found", rec)
        name = one("name") or ""
        labels = dict(kv.split("=", 1) for kv in name[name.find("{") + 1:-1].split(",")) \
            if NAME_RE.match(name) else {}
        if "host" not in labels or "kernel" not in labels:
            return self.answer(400, "name must be APP{host=..,kernel=..}", rec)
        try:
            start, end = int(one("from")), int(one("until"))
            rate = int(one("sampleRate"))
        except (TypeError, ValueError):
            return self.answer(400, "from, until, sampleRate must be numbers", rec)
        if start > end or rate <= 0 or one("spyName") is None or one("format"):
            return self.answer(400, "bad from/until/sampleRate/spyName/format", rec)
        ctype = self.headers.get("Content-Type", "")
        if not ctype.startswith("multipart/form-data"):
            return self.answer(400, "want multipart/form-data", rec)
        b = re.search(r'boundary="?([^";]+)"?', ctype)
        profile = None
        for part in body.split(b"--" + b.group(1).encode()) if b else []:
            head, sep, data = part.partition(b"\r\n\r\n")
            if sep and re.search(rb'^content-disposition: *form-data;.*\bname="profile"',
                                 head.strip(), re.I | re.M):
                profile = data[:-2] if data.endswith(b"\r\n") else data
        if not profile:
            return self.answer(400, "no multipart field profile", rec)
        m = mode()
        if m[0] == "500":
            return self.answer(500, "ingest failed", rec)
        if m[0] == "413":
            return self.answer(413, "too large", rec)
        if m[0] == "slow":
            time.sleep(float(m[1]))
        n = len(os.listdir(DIR))
        with open(os.path.join(DIR, "%d-%d-%d.pb.gz" % (start, end, n)), "wb") as f:
            f.write(profile)
        if m[0] == "flood":
            return self.flood(rec)
        self.answer(200, "", rec)

    def flood(self, rec):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Connection", "close")
        self.end_headers()
        chunk, sent = b"x" * (1 << 20), 0
        try:
            while sent < (2 << 30):
                self.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            pass
        self.close_connection = True
        rec["status"], rec["flooded"] = 200, sent
        with open(os.path.join(DIR, "requests.jsonl"), "a") as f:
            f.write(json.dumps(rec) + "\n")


srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler)
with open(os.path.join(DIR, "port.tmp"), "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(os.path.join(DIR, "port.tmp"), os.path.join(DIR, "port"))
srv.serve_forever()
