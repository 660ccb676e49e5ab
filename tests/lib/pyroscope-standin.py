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
#   the profile: a pprof (gzipped or not) whose sample types name its
#   series' profile type as Pyroscope's pprof ingestion does
#   (pkg/og/convert/pprof, metricName): "wall" first, then a type holding
#   "cpu" (or "samples", shown as cpu) is process_cpu, one holding
#   "alloc_" or "inuse_" is memory.  A memory profile must follow the Go
#   heap convention Pyroscope's memory profile types are made of
#   (memory:inuse_space:bytes, memory:inuse_objects:count, and alloc_
#   alike): *_space in bytes, *_objects in count; an optional
#   sample_type_config part must be a JSON object of objects, and must
#   not call an inuse_ type cumulative (an instant profile is averaged,
#   not summed).  422 otherwise, as Pyroscope answers a profile it cannot
#   take.  The record gets "profile_type", NAME:TYPE:UNIT of the default
#   sample type.  The profile is read with protoc-c --decode and pprof's
#   profile.proto (PPROF_PROTO, as the Makefile finds it).
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
import codecs
import gzip
import http.server
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse

DIR = sys.argv[1]
NAME_RE = re.compile(r'^[A-Za-z0-9_.-]+\{([A-Za-z0-9_]+=[^,{}=]+)(,[A-Za-z0-9_]+=[^,{}=]+)*\}$')


PPROF_PROTO = os.environ.get(
    "PPROF_PROTO", "/usr/share/gocode/src/github.com/google/pprof/proto/profile.proto")


def sample_types(profile):
    """[(type, unit)] of a pprof, the default one first; None if unreadable."""
    try:
        if profile[:2] == b"\x1f\x8b":
            profile = gzip.decompress(profile)
        text = subprocess.run(
            ["protoc-c", "--proto_path=" + os.path.dirname(PPROF_PROTO),
             "--decode=perftools.profiles.Profile", os.path.basename(PPROF_PROTO)],
            input=profile, capture_output=True, check=True, timeout=30).stdout.decode()
    except (OSError, EOFError, subprocess.SubprocessError, UnicodeDecodeError):
        return None
    # protoc's text format escapes bytes as C does (\303, \n, \").
    strings = [codecs.escape_decode(m.encode())[0].decode("utf-8", "replace")
               for m in re.findall(r'^string_table: "(.*)"$', text, re.M)]
    types = re.findall(r'^sample_type \{\s*(?:type: (\d+)\s*)?(?:unit: (\d+)\s*)?\}', text, re.M)
    dflt = re.search(r'^default_sample_type: (\d+)$', text, re.M)
    try:
        out = [(strings[int(t or 0)], strings[int(u or 0)]) for t, u in types]
        if dflt:
            d = strings[int(dflt.group(1))]
            out.sort(key=lambda tu: tu[0] != d)
    except IndexError:
        return None
    return out


def profile_name(types):
    """The __name__ Pyroscope gives a pprof of these sample types."""
    if any(t == "wall" for t, _ in types):
        return "wall"
    for t, _ in types:
        t = "cpu" if t == "samples" else t
        if "cpu" in t:
            return "process_cpu"
        if "alloc_" in t or "inuse_" in t:
            return "memory"
    return types[-1][0] if types else ""


def memory_problem(types, config):
    """Why Pyroscope would not file this as a memory profile, or None."""
    for t, u in types:
        if t.endswith("_space") and u != "bytes":
            return "%s must be in bytes, not %s" % (t, u)
        if t.endswith("_objects") and u != "count":
            return "%s must be a count, not %s" % (t, u)
    if config is not None:
        if not isinstance(config, dict) or not all(isinstance(v, dict) for v in config.values()):
            return "sample_type_config must be a JSON object of objects"
        if any(k.startswith("inuse_") and v.get("cumulative") for k, v in config.items()):
            return "an inuse_ sample type is not cumulative"
    return None


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
        profile = config = None
        for part in body.split(b"--" + b.group(1).encode()) if b else []:
            head, sep, data = part.partition(b"\r\n\r\n")
            data = data[:-2] if data.endswith(b"\r\n") else data
            if sep and re.search(rb'^content-disposition: *form-data;.*\bname="profile"',
                                 head.strip(), re.I | re.M):
                profile = data
            if sep and re.search(rb'^content-disposition: *form-data;.*\bname="sample_type_config"',
                                 head.strip(), re.I | re.M):
                try:
                    config = json.loads(data)
                except ValueError:
                    return self.answer(422, "sample_type_config is not JSON", rec)
        if not profile:
            return self.answer(400, "no multipart field profile", rec)
        types = sample_types(profile)
        if not types:
            return self.answer(422, "the profile is not a pprof with sample types", rec)
        rec["profile_type"] = "%s:%s:%s" % (profile_name(types), types[0][0], types[0][1])
        if profile_name(types) == "memory" and memory_problem(types, config):
            return self.answer(422, memory_problem(types, config), rec)
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
