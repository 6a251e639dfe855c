"""Instructions a command executes, counted by callgrind, with and without memset/memcpy.

Callgrind counts every iteration of a `rep stos`/`rep movs` as an instruction; the second
figure leaves out the functions that run them (memset, memcpy, memmove and their variants),
so buffer clears and copies do not hide or inflate the arithmetic. `--base` runs a second
command (the same process without the measured call, e.g. `readme_table.py --one ... --dry`)
and subtracts its counts. Needs valgrind (Debian: `apt-get install valgrind`).
Usage: python bench/instructions.py [--per N] [--base 'CMD'] -- CMD ARGS...
e.g.   python bench/instructions.py --per 10000 -- core/target/release/examples/summary_bench \\
           stream.txt 100 100 suse 1      (the input from `bench/readme_table.py --stream`)
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import tempfile

STRING_FUNCTIONS = re.compile(r"\b_*(mem(set|cpy|move)|wmemset)\w*")


def count(cmd: list[str]) -> tuple[int, int]:
    """(all instructions, instructions inside memset/memcpy/memmove) of one run."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cmd],
                       check=True, capture_output=True)
        text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--auto=no", "--threshold=100", out],
                              check=True, capture_output=True, text=True).stdout
    total, strings = 0, 0
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(\([^)]*\)\s+)?(.*)", line)
        if not m:
            continue
        n = int(m.group(1).replace(",", ""))
        what = m.group(3)
        if "PROGRAM TOTALS" in what:
            total = n
        elif STRING_FUNCTIONS.search(what.split(":")[-1].split(" ")[0]):
            strings += n
    return total, strings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per", type=int, default=1, help="divide by this (e.g. the events)")
    ap.add_argument("--base", help="a command whose counts are subtracted")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    total, strings = count(cmd)
    if args.base:
        base_total, base_strings = count(shlex.split(args.base))
        total, strings = total - base_total, strings - base_strings
    per = args.per
    print(f"{total:,} instructions ({total / per:,.0f} per unit); without memset/memcpy "
          f"{total - strings:,} ({(total - strings) / per:,.0f} per unit); in them {strings / max(total, 1):.1%}")


if __name__ == "__main__":
    main()
