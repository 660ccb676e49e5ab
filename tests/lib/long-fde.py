#!/usr/bin/env python3
# tests/lib/long-fde.py - writes the shared object a hostile local user
# would map to make the agent's unwind-table build take CPU: FUNCTIONS
# x86-64 functions whose call frame information has ROWS rows each, one a
# byte of code (`nop`, then `.cfi_def_cfa_offset 16`), all of the same
# rules.  libdw reads a function's rules from its start for each row, so
# such a function costs ROWS * ROWS / 2 steps unless the build bounds it
# (agent/unwind/unwind_table.c).  Built with the C compiler (`cc`), so it
# has .eh_frame_hdr as any shared object does.  With --alternate, the
# rules alternate between two (CFA offsets 16 and 24), so no two rows
# merge: a table of FUNCTIONS * ROWS rows, to fill the BPF programs'
# store of rows; files of different FUNCTIONS have different tables.
#
#   long-fde.py OUT --rows ROWS [--functions FUNCTIONS] [--alternate]
import argparse
import os
import subprocess
import tempfile


def assembly(rows, functions, alternate):
    out = [".text"]
    for f in range(functions):
        out += [".globl f%d" % f, ".type f%d, @function" % f, "f%d:" % f,
                ".cfi_startproc"]
        out += ["nop\n.cfi_def_cfa_offset %d" %
                (24 if alternate and r % 2 else 16) for r in range(rows)]
        out += ["ret", ".cfi_endproc", ".size f%d, .-f%d" % (f, f)]
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--functions", type=int, default=1)
    p.add_argument("--alternate", action="store_true")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "long.s")
        with open(src, "w") as f:
            f.write(assembly(a.rows, a.functions, a.alternate))
        subprocess.run(["cc", "-shared", "-nostdlib", "-o", a.out, src],
                       check=True)


main()
