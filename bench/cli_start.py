"""Start-up cost of the CLI: ``python -X importtime`` of ``langclass --help`` and of
``langclass classify -r '(ab)*' -a ab``; prints the total import time (median of ``--repeat`` runs),
the costliest top-level imports and whether a heavy module (torch, ray, fastapi, sqlalchemy, ...)
was loaded. ``--compare DIR`` measures another checkout (e.g. an older commit unpacked with
``git archive``) in the same run, alternating, so both see the same machine load.

    python bench/cli_start.py
    git archive 060af86 | tar -x -C /tmp/base && python bench/cli_start.py --compare /tmp/base
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "ray", "fastapi", "starlette", "sqlalchemy", "uvicorn", "matplotlib", "anyio")
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( +)(\S+)")
COMMANDS = (["--help"], ["classify", "-r", "(ab)*", "-a", "ab"])


def measure(root: Path, args: list[str]) -> tuple[float, list[str], list[tuple[int, str]]]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "langclass.app.cli.commands", *args], capture_output=True,
                         text=True, env=env, cwd=root, timeout=300)
    top, names = [], set()
    for m in LINE.finditer(out.stderr):
        names.add(m.group(4))
        if len(m.group(3)) == 1:
            top.append((int(m.group(2)), m.group(4)))
    return sum(t for t, _ in top) / 1e6, sorted(h for h in HEAVY if h in names), sorted(top, reverse=True)[:4]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", type=Path, help="another checkout to measure alongside")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    roots = [("this tree", ROOT)] + ([("compare", a.compare)] if a.compare else [])
    for args in COMMANDS:
        for label, root in roots:
            runs = [measure(root, args) for _ in range(a.repeat)]
            total = statistics.median(r[0] for r in runs)
            print(f"[{label}] langclass {' '.join(args)}: imports {total:.2f} s (median of {a.repeat}); "
                  f"heavy modules: {runs[0][1] or 'none'}")
            for t, name in runs[-1][2]:
                print(f"      {t / 1e6:6.2f} s  {name}")


if __name__ == "__main__":
    main()
