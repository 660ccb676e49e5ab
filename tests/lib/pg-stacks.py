#!/usr/bin/env python3
"""tests/lib/pg-stacks.py - the user stacks of a profile, as the tests of
complete stacks (75-pg-nofp.sh) and bench/unwind.sh judge them.

A profile is either the text `go tool pprof -raw` prints of a vmtools pprof
(samples with their labels and location ids, locations with their mapping
and function, mappings with their file) or the text of
`perf script -F comm,pid,tid,period,ip,sym,dso` of a
`perf record --call-graph dwarf` (a header line per sample, then one frame
a line, leaf first).  Either is read into samples of (pid, labels, weight,
user frames outermost first): kernel frames ([kernel.kallsyms], addresses
in the upper half) left out, each frame only its function's name, without
perf's symbol version (`@@GLIBC_2.34`) or an offset; a frame no symbol
names is `?FILE+0xSTART`, FILE the basename of its mapping and START its
function's start by the file's .eh_frame_hdr (vmtools' `FILE+0xSTART`;
perf's `[unknown]` at a link-time address), or `?` without a mapping.  Where a library gives one
address several names (`lseek64`, `llseek`, `__lseek`), `--aliases FILE`
(`nm`'s lines `ADDRESS TYPE NAME`, each file's after a `# FILE` line)
makes them one: the smallest name of the set.

  reach PROFILE [--pid P]... [--label L]... [--weight count|value] FUNC...
      prints "TOTAL REACHED": the weight of the samples (of those pids,
      carrying every label L as -raw prints them, e.g.
      'backend_type:[client backend]') and of those among them whose user
      stack holds every FUNC
  caller PROFILE [--pid P]... FUNC CALLER
      prints "WITH_FUNC UNDER_CALLER": samples with FUNC in their user stack,
      and those of them where the frame directly above the outermost FUNC
      is CALLER; then the 5 commonest frames above it, "N NAME" a line
  compare PROFILE REFERENCE [--pid P]... [--top 20] [--among 50]
      prints "FOUND TOP" then one line per heavy stack of PROFILE not among
      REFERENCE's: of PROFILE's TOP heaviest user stacks, how many appear
      frame for frame, in the same order, among REFERENCE's AMONG heaviest
      (ties at the edge of AMONG are all taken)
  top PROFILE [--pid P]... [--top N] [FUNC]...
      prints the N heaviest user stacks, their weight and frames; with
      FUNCs, of the stacks that lack one of them (those reach left out)
"""

import argparse
import bisect
import os
import re
import struct
import sys
from collections import Counter

KERNEL_START = 0xFFFF800000000000


_STARTS = {}


def fde_starts(path):
    """The function starts of an ELF file's .eh_frame_hdr search table
    (link-time addresses), sorted; [] when it has none."""
    if path in _STARTS:
        return _STARTS[path]
    starts = []
    try:
        with open(path, "rb") as f:
            data = f.read()
        if data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1:
            shoff, = struct.unpack_from("<Q", data, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
            secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
            strtab = secs[shstrndx][4]
            for sec in secs:
                name = data[strtab + sec[0]:data.index(b"\0", strtab + sec[0])]
                if name != b".eh_frame_hdr":
                    continue
                addr, off = sec[3], sec[4]
                ver, ptr_enc, cnt_enc, tab_enc = data[off:off + 4]
                if ver != 1 or cnt_enc != 0x03 or tab_enc != 0x3B:
                    break
                n, = struct.unpack_from("<I", data, off + 8)
                for i in range(n):
                    loc, = struct.unpack_from("<i", data, off + 12 + 8 * i)
                    starts.append(addr + loc)
    except (OSError, struct.error, ValueError, IndexError):
        starts = []
    starts.sort()
    _STARTS[path] = starts
    return starts


def unnamed(mapping, link_addr):
    """`?FILE+0xSTART`: the start of the function holding link_addr, by the
    file's .eh_frame_hdr (the name vmtools gives a frame no symbol names),
    or `?FILE` without one."""
    if not mapping:
        return "?"
    base = os.path.basename(mapping)
    if link_addr is None:
        return "?" + base
    st = fde_starts(mapping)
    i = bisect.bisect_right(st, link_addr) - 1
    return "?%s+0x%x" % (base, st[i]) if i >= 0 else "?" + base


def norm_name(name, mapping, aliases, link_addr=None):
    name = name.strip()
    m = re.fullmatch(r"(\S+)\+0x([0-9a-fA-F]+)", name)
    if m:  # vmtools' FILE+0xSTART
        return "?%s+0x%x" % (m.group(1), int(m.group(2), 16))
    if name in ("", "[unknown]"):
        return unnamed(mapping, link_addr)
    name = re.sub(r"\+0x[0-9a-fA-F]+$", "", name)
    name = name.split("@", 1)[0]
    return aliases.get(name, name)


def read_aliases(path):
    """`# FILE` then `ADDRESS TYPE NAME` lines (nm's): function names
    sharing an address in one file are one function, named by the smallest
    name of all the names joined to it (across files: a debug file adds
    names to its binary's)."""
    if not path:
        return {}
    parent = {}

    def find(n):
        while parent.setdefault(n, n) != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    groups = {}
    f = None
    for line in open(path, errors="replace"):
        if line.startswith("#"):
            f = line[1:].strip()
            continue
        parts = line.split()
        if len(parts) != 3 or parts[1] not in "TtWwi":
            continue
        groups.setdefault((f, parts[0]), set()).add(parts[2].split("@", 1)[0])
    for names in groups.values():
        names = sorted(names)
        for n in names[1:]:
            a, b = find(names[0]), find(n)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return {n: find(n) for n in parent if find(n) != n}


def read_raw(path, aliases):
    """Samples of `go tool pprof -raw`: [(pid, labels string, count, value, frames)]."""
    lines = open(path).read().split("\n")
    i = 0
    samples = []  # (count, value, [loc ids], labels)
    locs = {}  # id -> [(name, mapping id)] innermost first
    maps = {}  # id -> file
    section = None
    last_loc = None
    for line in lines:
        if line.startswith("Samples:"):
            section = "samples"
            continue
        if line.startswith("Locations"):
            section = "locations"
            continue
        if line.startswith("Mappings"):
            section = "mappings"
            continue
        if section == "samples":
            m = re.match(r"^\s+(\d+)\s+(\d+):((?:\s+\d+)*)\s*$", line)
            if m:
                samples.append([int(m.group(1)), int(m.group(2)),
                                [int(x) for x in m.group(3).split()], ""])
            elif re.match(r"^\s+\S+:\[", line) and samples:
                samples[-1][3] += " " + line.strip()
        elif section == "locations":
            m = re.match(r"^\s+(\d+): (0x[0-9a-f]+)(?: M=(\d+))? (.*?) \S*:\d+ s=\d+\s*$", line)
            if m:
                last_loc = int(m.group(1))
                locs[last_loc] = {"addr": int(m.group(2), 16), "map": m.group(3),
                                  "names": [m.group(4)]}
                continue
            m = re.match(r"^\s+(.*?) \S*:\d+ s=\d+\s*$", line)
            if m and last_loc is not None:
                locs[last_loc]["names"].append(m.group(1))
        elif section == "mappings":
            m = re.match(r"^(\d+): \S+ (\S+)", line)
            if m:
                maps[m.group(1)] = m.group(2)
    out = []
    for count, value, ids, labels in samples:
        m = re.search(r"pid:\[(\d+)\]", labels)
        pid = int(m.group(1)) if m else 0
        frames = []  # leaf first
        for lid in ids:
            loc = locs.get(lid)
            if loc is None:
                frames.append("?")
                continue
            mapping = maps.get(loc["map"], "") if loc["map"] else ""
            if mapping == "[kernel.kallsyms]" or loc["addr"] >= KERNEL_START:
                continue
            for name in loc["names"]:  # inlined functions first, their caller last
                frames.append(norm_name(name, mapping, aliases))
        out.append((pid, labels, count, value, tuple(reversed(frames))))
    return out


def read_perf_script(path, aliases):
    out = []
    pid = None
    period = 1
    frames = []

    def flush():
        if pid is not None:
            out.append((pid, "", 1, period, tuple(reversed(frames))))

    for line in open(path, errors="replace"):
        if not line.strip():
            continue
        if not line[0].isspace():
            flush()
            frames = []
            # "comm pid/tid period" (comm may hold spaces)
            m = re.search(r"\s(\d+)/(\d+)\s+(\d+)\s*$", line.rstrip("\n"))
            if m:
                pid, period = int(m.group(1)), int(m.group(3))
            else:
                m = re.search(r"\s(\d+)/(\d+)\s", line)
                pid, period = (int(m.group(1)), 1) if m else (0, 1)
            continue
        m = re.match(r"^\s+([0-9a-f]+) (.*) \((.*)\)\s*$", line)
        if not m:
            continue
        addr, sym, dso = int(m.group(1), 16), m.group(2), m.group(3)
        if dso.startswith("[kernel") or addr >= KERNEL_START:
            continue
        # perf prints a frame of a file at its link-time address.
        frames.append(norm_name(sym, "" if dso == "[unknown]" else dso, aliases,
                                addr - 1 if frames else addr))
    flush()
    return out


def read_profile(path, aliases):
    with open(path, errors="replace") as f:
        head = f.read(4096)
    if "Samples:" in head or head.startswith(("PeriodType", "Comment")):
        return read_raw(path, aliases)
    return read_perf_script(path, aliases)


def selected(samples, pids, labels):
    for s in samples:
        if pids and s[0] not in pids:
            continue
        if any(l not in s[1] for l in labels):
            continue
        yield s


def heaviest(samples, n):
    c = Counter()
    for s in samples:
        c[s[4]] += s[2]
    ranked = c.most_common()
    return ranked[:n], ranked


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["reach", "caller", "compare", "top"])
    ap.add_argument("profile")
    ap.add_argument("args", nargs="*")
    ap.add_argument("--pid", type=int, action="append", default=[])
    ap.add_argument("--label", action="append", default=[])
    ap.add_argument("--weight", choices=["count", "value"], default="count")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--among", type=int, default=50)
    ap.add_argument("--aliases")
    a = ap.parse_intermixed_args()
    aliases = read_aliases(a.aliases)
    a.args = [aliases.get(f, f) for f in a.args]
    samples = list(selected(read_profile(a.profile, aliases), set(a.pid), a.label))
    w = 2 if a.weight == "count" else 3

    if a.command == "reach":
        total = sum(s[w] for s in samples)
        reached = sum(s[w] for s in samples if all(f in s[4] for f in a.args))
        print(total, reached)
    elif a.command == "caller":
        func, caller = a.args
        with_func = under = 0
        callers = Counter()
        for s in samples:
            fr = s[4]
            if func not in fr:
                continue
            with_func += s[2]
            i = fr.index(func)
            callers[fr[i - 1] if i > 0 else "(none)"] += s[2]
            if i > 0 and fr[i - 1] == caller:
                under += s[2]
        print(with_func, under)
        for name, n in callers.most_common(5):
            print(n, name)
    elif a.command == "top":
        lacking = [s for s in samples if not a.args or not all(f in s[4] for f in a.args)]
        top, _ = heaviest(lacking, a.top)
        for stack, n in top:
            print(n, ";".join(stack))
    elif a.command == "compare":
        ref = list(selected(read_profile(a.args[0], aliases), set(a.pid), []))
        top, _ = heaviest(samples, a.top)
        _, ranked = heaviest(ref, 0)
        among = ranked[:a.among]
        if len(ranked) > a.among and among:  # ties at the edge count alike
            edge = among[-1][1]
            among += [r for r in ranked[a.among:] if r[1] == edge]
        ref_rank = {stack: (i + 1, n) for i, (stack, n) in enumerate(ranked)}
        inside = {stack for stack, n in among}
        found = sum(1 for stack, n in top if stack in inside)
        print(found, len(top))
        for i, (stack, n) in enumerate(top):
            if stack not in inside:
                r = ref_rank.get(stack)
                where = "rank %d (%d samples) there" % r if r else "absent there"
                print("#%d, %d samples, %s: %s" % (i + 1, n, where, ";".join(stack)))


if __name__ == "__main__":
    main()
