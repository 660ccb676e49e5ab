#!/usr/bin/env python3
# tests/lib/hostile-elf.py - writes the executable a hostile local user
# would run to make the agent's symbol reading take memory: a static
# x86-64 ELF file whose code is one busy loop (`jmp .`, no libc), and
# whose symbol table holds SYMBOLS functions at distinct addresses, named
# by one long string (--name-bytes) they all point at, or each by its own
# (--distinct).  With --debugdata that table is in an xz-compressed ELF
# file in .gnu_debugdata (MiniDebugInfo) instead of in .symtab.
#
#   hostile-elf.py OUT --symbols N --name-bytes B [--distinct] [--debugdata]
#
# Run OUT (its name becomes the process's comm) and it spins until killed.
import argparse
import lzma
import os
import struct

BASE = 0x400000
CODE_OFF = 120  # after the ELF header (64) and one program header (56)
SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOBITS = 1, 2, 3, 8
STT_FUNC, STB_GLOBAL = 2, 1


def symbols(n, name_bytes, distinct):
    """.symtab and .strtab: a "spin" symbol over the loop, then n more."""
    strtab = bytearray(b"\0spin\0")
    syms = [struct.pack("<IBBHQQ", 0, 0, 0, 0, 0, 0)]
    info = (STB_GLOBAL << 4) | STT_FUNC
    syms.append(struct.pack("<IBBHQQ", 1, info, 0, 1, BASE + CODE_OFF, 2))
    shared = len(strtab)
    if not distinct:
        strtab += b"A" * name_bytes + b"\0"
    for i in range(n):
        off = shared
        if distinct:
            off = len(strtab)
            name = b"f%09d" % i
            strtab += name + b"x" * max(0, name_bytes - len(name)) + b"\0"
        syms.append(struct.pack("<IBBHQQ", off, info, 0, 1,
                                BASE + 0x100000 + 16 * i, 16))
    return b"".join(syms), bytes(strtab)


def elf(sections, code=None):
    """An ELF64 file: the header, a PT_LOAD of the code if any, then the
    sections (name, type, data, link, entsize), and their headers last."""
    body = bytearray(b"\0" * CODE_OFF)
    if code is not None:
        body += code
    shstrtab = bytearray(b"\0")
    headers = [b"\0" * 64]
    names = []
    for name, *_ in sections + [(".shstrtab",)]:
        names.append(len(shstrtab))
        shstrtab += name.encode() + b"\0"
    sections = sections + [(".shstrtab", SHT_STRTAB, bytes(shstrtab), 0, 0)]
    for i, (name, typ, data, link, entsize) in enumerate(sections):
        while len(body) % 8:
            body += b"\0"
        addr = BASE + CODE_OFF if name == ".text" else 0
        off = CODE_OFF if name == ".text" and code is not None else len(body)
        size = len(code) if name == ".text" and code is not None else len(data)
        if not (name == ".text" and code is not None) and typ != SHT_NOBITS:
            body += data
        flags = 6 if name == ".text" else 0  # SHF_ALLOC | SHF_EXECINSTR
        info = 1 if typ == SHT_SYMTAB else 0
        headers.append(struct.pack("<IIQQQQIIQQ", names[i], typ, flags, addr,
                                   off, size, link, info, 8, entsize))
    while len(body) % 8:
        body += b"\0"
    shoff = len(body)
    phnum = 1 if code is not None else 0
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
    ehdr = ident + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1,
                               BASE + CODE_OFF if code is not None else 0,
                               64 if phnum else 0, shoff, 0, 64, 56, phnum,
                               64, len(headers), len(headers) - 1)
    body[0:64] = ehdr
    if phnum:  # PT_LOAD, R|X, the file's first page onwards
        end = CODE_OFF + len(code)
        body[64:120] = struct.pack("<IIQQQQQQ", 1, 5, 0, BASE, BASE, end,
                                   end, 0x1000)
    return bytes(body) + b"".join(headers)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--symbols", type=int, required=True)
    ap.add_argument("--name-bytes", type=int, required=True)
    ap.add_argument("--distinct", action="store_true")
    ap.add_argument("--debugdata", action="store_true")
    a = ap.parse_args()
    symtab, strtab = symbols(a.symbols, a.name_bytes, a.distinct)
    code = b"\xeb\xfe"  # jmp .
    if a.debugdata:
        mini = elf([(".text", SHT_NOBITS, b"", 0, 0),
                    (".symtab", SHT_SYMTAB, symtab, 3, 24),
                    (".strtab", SHT_STRTAB, strtab, 0, 0)])
        xz = lzma.compress(mini, format=lzma.FORMAT_XZ, preset=1)
        sections = [(".text", SHT_PROGBITS, b"", 0, 0),
                    (".gnu_debugdata", SHT_PROGBITS, xz, 0, 0)]
    else:  # .text is section 1, .symtab 2, .strtab 3 (its link)
        sections = [(".text", SHT_PROGBITS, b"", 0, 0),
                    (".symtab", SHT_SYMTAB, symtab, 3, 24),
                    (".strtab", SHT_STRTAB, strtab, 0, 0)]
    tmp = a.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(elf(sections, code))
    os.chmod(tmp, 0o755)
    os.rename(tmp, a.out)


if __name__ == "__main__":
    main()
