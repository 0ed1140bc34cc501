"""The README's examples run as written and say what they show.

* **API tour (its errors included), experiments and jobs**: every ``curl`` command of those sections, in README order,
  against one app (SQLite, no worker slot: jobs stay queued). Placeholders a reader fills in are
  substituted — ``$ID`` (set by the README's own ``ID=…`` lines, whose ``python3 -c`` pipeline runs
  as written), ``<next_cursor>``, and the job ids shown as ``5f5ad406-…`` / ``7e415812-…`` (the jobs
  the README's POST created). Every command must answer 2xx, except the plot of a job that has not
  run (409: nothing trains here). Shown JSON answers are compared: the error examples exactly, the
  first POST on the fields it shows.
* **CLI tour**: each ``langclass`` line (through the CLI itself, in a temporary directory holding
  the ``dfa.json`` / ``languages.jsonl`` a reader would have), and the table text the README shows;
  the ``sweep`` line with its training cut to a few steps (``SWEEP_OVERRIDES``: no test runs a
  documented example at full size).
* **Configuration**: the invalid-settings example, its message and exit status.
* **Constructions** (slow): ``langclass construct -f 'P(b & Y a)' -a ab`` prints exactly the lines shown.

Not run here, and why: ``make serve`` / ``make test`` / Docker / the port and PostgreSQL recipes
(they start servers or install); ``langclass serve`` (a server: tests/test_cli.py and
tests/test_serve_process.py run it); ``langclass census --states 3`` (about a minute of two
workers; tests/test_census*.py); ``langclass train`` (35 s of CPU time; the same experiment is
queued through the API above and tests/test_length_notation.py checks that the CLI's ``41..60`` and
the API's ``{"range": [41, 60]}`` are the same lengths); the Python API block (docs/python.md's
doctests cover it).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\s*\n(.*?)^```\s*$", re.S | re.M)


def _section(title: str) -> str:
    """The README text from the heading ``title`` to the next heading of the same or a higher level
    (``#`` lines inside code blocks are comments, not headings)."""
    lines = README.splitlines(keepends=True)
    in_code, start, level, out = False, None, 0, []
    for line in lines:
        if line.startswith("```"):
            in_code = not in_code
        heading = None if in_code else re.match(r"^(#+) (.*?)\s*$", line)
        if start is None:
            if heading and heading.group(2) == title:
                start, level = True, len(heading.group(1))
            continue
        if heading and len(heading.group(1)) <= level:
            break
        out.append(line)
    assert start, f"README has no section {title!r}"
    return "".join(out)


def _blocks(text: str, *langs: str) -> list[str]:
    return [m.group(2) for m in FENCE.finditer(text) if m.group(1) in langs]


def _commands(block: str, console: bool) -> list[tuple[str, list[str]]]:
    """(command, the output lines shown after it) of a block; continuation lines joined."""
    out: list[tuple[str, list[str]]] = []
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if console and not line.startswith("$ "):
            if out:
                out[-1][1].append(line)
            i += 1
            continue
        cmd = line[2:] if console else line
        while i + 1 < len(lines):
            if cmd.rstrip().endswith("\\"):  # a continuation line
                i += 1
                cmd = cmd.rstrip()[:-1] + " " + lines[i].strip()
            elif not _closed(cmd):  # a quoted argument spanning lines
                i += 1
                cmd = cmd + "\n" + lines[i]
            else:
                break
        if cmd.strip() and not cmd.lstrip().startswith("#"):
            out.append((cmd, []))
        i += 1
    return out


def _closed(command: str) -> bool:
    """True when ``command`` has no open quote (shell quoting)."""
    try:
        shlex.split(command, comments=True)
    except ValueError:
        return False
    return True


class _Shell:
    """Runs the README's curl commands against a TestClient, keeping the variables it sets."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.vars: dict[str, str] = {}
        self.jobs: list[str] = []

    def expand(self, text: str) -> str:
        for name, value in self.vars.items():
            text = text.replace(f"${name}", value)
        return text

    def curl(self, command: str) -> Any:
        args = shlex.split(self.expand(command), comments=True)
        assert args[0] == "curl", command
        method, headers, data, url = None, {}, None, None
        it = iter(args[1:])
        for a in it:
            if a == "-X":
                method = next(it)
            elif a == "-H":
                k, _, v = next(it).partition(":")
                headers[k.strip()] = v.strip()
            elif a == "-d":
                data = next(it)
            elif a == "-o":
                next(it)
            elif a.startswith("-"):
                continue
            else:
                url = a
        assert url, command
        path = re.sub(r"^(https?://)?(127\.0\.0\.1|localhost):8000", "", url)
        if "<next_cursor>" in path:
            first = self.client.get("/v1/languages?limit=1").json()
            assert first["next_cursor"], "the README's cursor example needs two stored languages"
            path = path.replace("<next_cursor>", first["next_cursor"])
        for placeholder in re.findall(r"[0-9a-f]{8}-…", path):
            path = path.replace(placeholder, self.jobs[-1])
        method = method or ("POST" if data is not None else "GET")
        return self.client.request(method, path, content=data.encode() if data is not None else None, headers=headers)

    def run(self, command: str) -> Any:
        """One README command line: ``curl …``, ``ID=$(curl … | python3 -c …)`` or ``ID=literal``."""
        command = command.strip()
        m = re.match(r"^(\w+)=\$\((curl .*?)\s*\|\s*(python3 .*)\)\s*(#.*)?$", command)
        if m:
            resp = self.curl(m.group(2))
            assert resp.status_code < 300, resp.text
            argv = shlex.split(m.group(3))
            argv[0] = sys.executable
            value = subprocess.run(argv, input=resp.text, capture_output=True, text=True, check=True).stdout.strip()
            self.vars[m.group(1)] = value
            return resp
        m = re.match(r"^(\w+)=(\S+)", command)
        if m and not command.startswith("curl"):
            self.vars[m.group(1)] = m.group(2)
            return None
        responses = [self.curl(part) for part in re.split(r";\s+(?=curl )", command)]
        return responses[-1]


@pytest.mark.slow
def test_api_examples_run_as_written(make_client: Any, sqlite_url: str) -> None:
    from langclass.app.store.db import upgrade

    upgrade(sqlite_url)
    client = make_client(sqlite_url, worker_slots=0)
    client.post("/v1/languages", json={"regex": "a*", "alphabet": ["a"]})  # a second language, for the cursor example
    sh = _Shell(client)
    ran = problems = 0
    for title in ("API tour", "Experiments and jobs"):
        for block in _blocks(_section(title), "console", "sh"):
            console = block.lstrip().startswith("$ ")
            for command, shown in _commands(block, console):
                if not (command.startswith("curl") or re.match(r"^\w+=", command)):
                    continue
                resp = sh.run(command)
                ran += 1
                if resp is None:
                    continue
                if shown and shown[0].startswith('{"type":"/problems/'):  # an error example: the exact answer
                    assert resp.json() == json.loads(shown[0]), (command, resp.text)
                    problems += 1
                    continue
                if "/plot.png" in command:
                    assert resp.status_code == 409 and "no finished run yet" in resp.json()["detail"]
                    continue
                assert resp.status_code < 300, (command, resp.status_code, resp.text[:500])
                if "/experiments" in command:
                    sh.jobs.append(resp.json()["id"])
                    assert resp.json()["notes"] == [] and resp.status_code == 202
                if shown and shown[0].startswith("HTTP 201"):  # the first POST: status, Location, the fields shown
                    assert resp.status_code == 201 and resp.headers["location"] in shown[0]
                    body = resp.json()
                    text = "\n".join(shown[1:])
                    assert f'"id": "{body["id"]}"' in text
                    assert body["name"] == "(ab)*" and body["tags"] == ["periodic"] and body["num_states"] == 3
                    assert body["classes"]["ltl_p_mod"]["period"] == 2 and body["classes"]["ltl_p"]["member"] is False
                    assert body["encodings"]["soft"]["encoding"] == "rope_periodic"
                    for key in ("size", "semigroup_size", "idempotents", "stability_index", "stable_semigroup_size"):
                        assert f'"{key}": {body["monoid"][key]}' in text, key
    assert ran >= 20 and problems == 2


def _cli(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LANGCLASS_")}
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "langclass.app.cli.commands", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=300)


SWEEP_OVERRIDES = {"max_steps": 2, "eval_per_length": 2, "test_lengths": {"range": [41, 44]}, "train_lengths": {"range": [1, 8]}}
"""The README's sweep example trains every drawn language with every encoding for its full CPU
profile (minutes of training); here it runs with the same draw and these overrides, so the command
line, the draw and the outputs are checked in seconds (tests/test_sweep.py checks the sweep itself)."""


def test_cli_examples_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from langclass.app.cli.commands import app
    from langclass.app.settings import get_settings

    section = _section("CLI tour")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dfa.json").write_text(json.dumps(
        {"alphabet": ["a", "b"], "states": ["s", "t"], "initial": "s", "accepting": ["s"], "transitions": {"s": {"a": "t"}, "t": {"b": "s"}}}))
    (tmp_path / "languages.jsonl").write_text('{"regex": "(ab)*", "alphabet": ["a", "b"]}\n{"regex": "a*", "alphabet": ["a"]}\n')
    monkeypatch.setenv("LANGCLASS_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    get_settings.cache_clear()
    runner = CliRunner()
    outputs = {}
    ran = 0
    try:
        for command, _ in _commands(_blocks(section, "sh")[0], False):
            args = shlex.split(command, comments=True)
            assert args[0] == "langclass"
            if args[1] in ("serve", "census"):
                continue  # see the module docstring
            if args[1] == "sweep":  # as written, with training cut to a few steps (SWEEP_OVERRIDES)
                if "--overrides" in args:  # the README's own overrides, then these (an option given once)
                    i = args.index("--overrides") + 1
                    args[i] = json.dumps({**json.loads(args[i]), **SWEEP_OVERRIDES})
                else:
                    args += ["--overrides", json.dumps(SWEEP_OVERRIDES)]
            done = runner.invoke(app, args[1:])
            assert done.exit_code == 0, (command, done.output[-800:])
            outputs[command] = done.stdout
            ran += 1
    finally:
        get_settings.cache_clear()
    assert ran >= 5
    assert (tmp_path / "out.jsonl").read_text().count("\n") == 2  # the batch example wrote its two rows
    # the table shown for (ab)*: its first lines, then (after "...") its last lines
    shown = _blocks(section, "text")[0].splitlines()
    table = next(v for k, v in outputs.items() if "'(ab)*'" in k and "--json" not in k).splitlines()
    cut = shown.index("...")
    assert table[:cut] == shown[:cut]
    assert table[-(len(shown) - cut - 1):] == shown[cut + 1:]


def test_settings_example_runs_as_written(tmp_path: Path) -> None:
    (block,) = _blocks(_section("Configuration"), "console")
    (serve, shown), (echo, status) = _commands(block, True)
    env_text, _, cmd = serve.partition(" langclass ")
    name, _, value = env_text.partition("=")
    done = _cli(shlex.split(cmd), tmp_path, {name: shlex.split(value)[0], "LANGCLASS_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"})
    assert echo == "echo $?" and str(done.returncode) == status[0]
    assert done.stderr.strip().splitlines() == shown


@pytest.mark.slow
def test_construct_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    block = _blocks(_section("Constructions"), "console")[0]
    (command, shown), = _commands(block, True)
    done = _cli(shlex.split(command)[1:], tmp_path)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.splitlines() == shown


def _code_and_claim(line: str) -> tuple[str, Any]:
    """A Python line of the README: its code and the value its comment claims (a Python literal at
    the start of the comment), or ``...`` when the comment claims none."""
    import ast
    import io
    import tokenize

    comment_at = None
    for tok in tokenize.generate_tokens(io.StringIO(line).readline):
        if tok.type == tokenize.COMMENT:
            comment_at = tok.start[1]
            break
    if comment_at is None:
        return line, ...
    code, comment = line[:comment_at].rstrip(), line[comment_at + 1:].strip()
    for candidate in (comment, comment.split(" (")[0]):
        try:
            return code, ast.literal_eval(candidate)
        except (ValueError, SyntaxError):
            continue
    return code, ...


@pytest.mark.slow
def test_python_api_block_runs_and_returns_what_it_says() -> None:
    (block,) = _blocks(_section("Python API"), "python")
    scope: dict[str, Any] = {}
    checked = 0
    for line in block.splitlines():
        code, claim = _code_and_claim(line)
        if not code.strip():
            continue
        try:
            value = eval(compile(code, "README.md", "eval"), scope)  # noqa: S307 - the README's own example
        except SyntaxError:
            exec(compile(code, "README.md", "exec"), scope)  # noqa: S102
            continue
        if claim is not ...:
            assert value == claim, (code, value, claim)
            checked += 1
    assert checked >= 3
