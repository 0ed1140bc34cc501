"""Start-up cost of the CLI: ``python -X importtime`` of ``langclass --help`` and of
``langclass classify -r '(ab)*' -a ab``; prints the total import time, the five costliest top-level
imports and whether a heavy module (torch, ray, fastapi, sqlalchemy, ...) was loaded.

    python bench/cli_start.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "ray", "fastapi", "starlette", "sqlalchemy", "uvicorn", "matplotlib")
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( +)(\S+)")


def measure(args: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "langclass.app.cli", *args], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=300)
    top, names = [], set()
    for m in LINE.finditer(out.stderr):
        names.add(m.group(4))
        if len(m.group(3)) == 1:
            top.append((int(m.group(2)), m.group(4)))
    total = sum(t for t, _ in top) / 1e6
    heavy = sorted(h for h in HEAVY if h in names)
    print(f"langclass {' '.join(args)}: imports {total:.2f} s; heavy modules: {heavy or 'none'}")
    for t, name in sorted(top, reverse=True)[:5]:
        print(f"    {t / 1e6:6.2f} s  {name}")


if __name__ == "__main__":
    measure(["--help"])
    measure(["classify", "-r", "(ab)*", "-a", "ab"])
