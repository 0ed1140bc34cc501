"""``langclass --help`` and ``langclass classify`` start without torch, ray or the web stack, and the
CLI's subcommand modules are imported statically (no importlib, nothing imports the CLI back)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "ray", "fastapi", "starlette", "sqlalchemy", "alembic", "uvicorn", "matplotlib", "anyio")


def _run_cli(*args: str) -> tuple[str, list[str]]:
    probe = (
        "import sys, runpy, json\n"
        f"sys.argv = ['langclass', *{list(args)!r}]\n"
        "code = 0\n"
        "try:\n    runpy.run_module('langclass.app.cli.commands', run_name='__main__')\n"
        "except SystemExit as e:\n    code = e.code or 0\n"
        f"print('\\nMODULES=' + json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
        "sys.exit(code)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    text, _, mods = out.stdout.rpartition("MODULES=")
    return text, json.loads(mods)


@pytest.mark.parametrize("args", [("--help",), ("classify", "-r", "(ab)*", "-a", "ab")])
def test_start_without_heavy_modules(args: tuple[str, ...]) -> None:
    text, modules = _run_cli(*args)
    assert modules == []
    assert ("Usage" in text) if args == ("--help",) else ("LTL[P,MOD]" in text)


def test_subcommands_are_static_imports() -> None:
    cli_dir = ROOT / "langclass" / "app" / "cli"
    cli = (cli_dir / "commands.py").read_text()
    assert "importlib" not in cli
    for path in sorted(set(cli_dir.glob("*.py")) - {cli_dir / n for n in ("__init__.py", "__main__.py", "commands.py")}):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").endswith("commands"), f"{path.name} imports the CLI entry point back"
    from langclass.app.cli.commands import SUBCOMMAND_MODULES, app

    names = {c.name or c.callback.__name__ for c in app.registered_commands}
    assert {"classify", "serve", "train", "worker", "construct", "census"} <= names
    assert all(hasattr(m, "register") for m in SUBCOMMAND_MODULES)
