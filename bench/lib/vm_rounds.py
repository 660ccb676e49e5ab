"""bench/lib/vm_rounds.py - the host's reading of what the guest halves of
the VM benchmarks print (bench/unwind-vm.sh, bench/arm64-unwind.sh):
their `VMBENCH sample ...` lines made into windows by mode and round, the
rounds in which both modes compared were measured, and the medians with
their range that the tables print."""

import statistics as st
import sys


def read(path, sample):
    """The windows of the VMBENCH lines in path, {mode: {round: dict}},
    and the errors: sample(fields after "sample") gives (mode, round,
    dict), an error sentence, or None for a line not counted."""
    win, errors = {}, []
    for line in open(path):
        f = line.split()
        if len(f) < 2:
            continue
        if f[1] == "sample":
            got = sample(f[2:])
            if isinstance(got, str):
                errors.append(got)
            elif got is not None:
                mode, rnd, values = got
                win.setdefault(mode, {})[rnd] = values
        elif f[1] == "error":
            errors.append(" ".join(f[2:]))
    return win, errors


def paired(win, errors, a, b, name):
    """Modes a and b's windows and the rounds both were measured in; exits
    saying why when there is none.  The errors go to stderr."""
    wa, wb = win.get(a, {}), win.get(b, {})
    both = sorted(set(wa) & set(wb), key=int)
    if not both:
        print("%s: no round measured both: %s" % (name, "; ".join(errors)), file=sys.stderr)
        sys.exit(1)
    for why in errors:
        print("# not measured: %s" % why, file=sys.stderr)
    return wa, wb, both


def med(v):
    """Median, least and most of v."""
    v = sorted(v)
    return st.median(v), v[0], v[-1]


def ns(v):
    """The median and range of v, in whole numbers: "M (LO–HI)"."""
    return "%s (%s–%s)" % tuple(format(round(x), ",") for x in med(v))


def values(w, key, rounds):
    """key's value in each of rounds' windows of w."""
    return [w[r][key] for r in rounds]


def ratio(wa, wb, key, rounds):
    """The median and range of wb's key over wa's, round by round."""
    return med(wb[r][key] / wa[r][key] for r in rounds)


def table(headers, row):
    """A markdown table of one row."""
    print("| %s |" % " | ".join(headers))
    print("|%s" % ("---|" * len(headers)))
    print("| %s |" % " | ".join(row))
