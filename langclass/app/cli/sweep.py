"""``langclass sweep``: the encoding prediction tested by training across a stratified sample of census languages.

::

    langclass sweep --states 3 --alphabet 2 --per-cell 10 --profile cpu --seed 0 --out sweep-n3
    langclass sweep ... --ray auto          one Ray task per language
    langclass sweep --census-run RUN_ID ... sample a stored census run's members (no enumeration)
    langclass sweep --suite state-tracking-crasp --out suite-run [--limit N] [--only NAME ...]
                                            the published suite instead of a census sample
    langclass sweep --setting causal ...    the causal setting (cells split by C-RASP; NoPE, learned, RoPE, ALiBi)
    langclass sweep --setting both ...      both settings, into OUT/strict and OUT/causal, tables side by side in OUT/sweep.md

Writes ``sweep.json``, ``sweep.csv``, ``sweep.md`` and ``sweep.png`` (with ``--suite``: ``suite.json``,
``suite.csv``, ``suite.md``, :mod:`langclass.app.usecases.suite`) to ``--out`` and each finished
language to ``--out/languages/``; the same command again resumes (finished languages are skipped).
See docs/sweep.md and :mod:`langclass.app.usecases.sweep`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from langclass.core.base.errors import LangclassError
from .common import fail

__all__ = ["register", "sweep"]


def sweep(
    out: Annotated[Path, typer.Option("--out", "-o", help="output directory (results, checkpoints per language)")],
    states: Annotated[Optional[int], typer.Option("--states", "-n", min=1, max=5, help="N: at most this many states in the minimal DFA (default 3, or the census run's N)")] = None,
    alphabet: Annotated[Optional[int], typer.Option("--alphabet", "-k", min=1, max=4, help="K: letters a, b, ... (default 2, or the census run's K)")] = None,
    per_cell: Annotated[int | None, typer.Option("--per-cell", "-m", min=1, max=1000,
                                                 help="languages drawn per cell (default: the profile's: 4 strict, 3 causal at cpu)")] = None,
    profile: Annotated[str, typer.Option("--profile", help="cpu (2-core CPU: both settings at N=3 in about 20 minutes) or paper (App. E.2, GPU)")] = "cpu",
    seed: Annotated[int, typer.Option("--seed", min=0, help="seed of the draw")] = 0,
    ray: Annotated[Optional[str], typer.Option("--ray", help="train on a Ray cluster, one task per language: 'auto', 'HOST:PORT' or 'local'")] = None,
    census_run: Annotated[Optional[str], typer.Option("--census-run", help="id of a stored census run (langclass census) to sample from instead of enumerating")] = None,

    setting: Annotated[Optional[str], typer.Option("--setting", help="strict (default; with --suite: causal), causal (non-strict mask, "
                                                   "BOS w, readout at the last position; cells split by C-RASP) or both")] = None,
    overrides: Annotated[Optional[str], typer.Option("--overrides", help="JSON object of experiment overrides, e.g. '{\"max_steps\": 5}'")] = None,
    suite: Annotated[Optional[str], typer.Option("--suite", help="train every language of a published suite instead of a census sample: state-tracking-crasp")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="with --suite: only the first N languages")] = None,
    only: Annotated[Optional[list[str]], typer.Option("--only", help="with --suite: only this language (repeatable)")] = None,
    task: Annotated[Optional[str], typer.Option("--task", help="with --suite: recognition (default) or state_prediction (causal only)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print sweep.json instead of the table")] = False,
) -> None:
    """Draw --per-cell languages from each cell of the lattice among the census languages of at most
    --states states over --alphabet letters, train each with its cell's predicted model and one or two
    baselines (the causal setting: NoPE, learned, RoPE, ALiBi), and report per cell × encoding the share whose N* reaches the longest tested length (predicted encodings marked
    *) and every run that contradicts the prediction. With --census-run the sample is drawn from that
    stored run's members (LANGCLASS_DATABASE_URL) and sweep.json names the run. With --suite every
    language of that published suite is trained (NoPE and learned absolute, --setting causal by
    default, the suite's lengths on --profile cpu) and suite.md lists per language their labels and
    outcome, the product's classes, prediction and N*, then the agreement rates (printed last)."""
    from langclass.app.usecases.sweep import load_census_run, run_settings

    try:
        ov = json.loads(overrides) if overrides else None
        if ov is not None and not isinstance(ov, dict):
            raise ValueError("not an object")
    except ValueError as err:
        typer.echo(f"error (invalid-input) [overrides]: --overrides must be a JSON object: {err}", err=True)
        raise typer.Exit(code=2)
    runner = None
    if ray is not None:
        try:
            from langclass.app.execution.sweep_ray import ray_sweep_runner
        except ImportError:  # pragma: no cover - ray is an optional dependency
            typer.echo("--ray needs Ray: pip install 'langclass[ray]'", err=True)
            raise typer.Exit(code=2)
        runner = ray_sweep_runner(None if ray == "local" else ray)

    def progress(done: int, total: int, rec) -> None:
        if rec is not None:
            typer.echo(f"[{done}/{total}] {rec.get('setting', 'strict')} {rec['cell']} {rec['fingerprint'][:12]} {rec['wall_s']:.1f} s", err=True)
        else:
            typer.echo(f"{done}/{total} languages already in {out}", err=True)

    if suite is not None:
        census_only = {"--states": states, "--alphabet": alphabet, "--per-cell": per_cell, "--census-run": census_run}
        given = [name for name, value in census_only.items() if value is not None]
        if given:  # the census sample's options: refused, as the REST body refuses them
            typer.echo(f"error (invalid-input) [{given[0].lstrip('-')}]: {', '.join(given)} do(es) not apply to --suite", err=True)
            raise typer.Exit(code=2)
        _suite(suite, out, profile, setting or "causal", task or "recognition", limit, only, ov, runner, progress, as_json)
        return
    if limit is not None or only or task is not None:
        typer.echo("error (invalid-input) [suite]: --limit, --only and --task need --suite", err=True)
        raise typer.Exit(code=2)
    setting = setting or "strict"
    try:
        row = load_census_run(census_run) if census_run is not None else None
        n = states if states is not None else (row.max_states if row is not None else 3)
        k = alphabet if alphabet is not None else (row.alphabet_size if row is not None else 2)
    except LangclassError as err:
        fail(err, as_json)
        return
    result = _resumable(out, as_json, lambda: run_settings(n, k, per_cell, seed, out, setting=setting, profile=profile, overrides=ov,
                                                          runner=runner, progress=progress, census_run=row))
    if result is None:
        return
    if as_json:
        typer.echo((out / "sweep.json").read_text(encoding="utf-8"))
    else:
        typer.echo((out / "sweep.md").read_text(encoding="utf-8"))
        files = "sweep.md, sweep-strict.png, sweep-causal.png (and strict/, causal/)" if setting == "both" else "sweep.csv, sweep.md, sweep.png"
        typer.echo(f"wrote {out / 'sweep.json'}, {files} ({result['runs']} runs, {result['wall_s']:.0f} s)")


def _resumable(out: Path, as_json: bool, call):
    """``call()``; a LangclassError is reported (exit 2, ``None`` returned), Ctrl-C says how to resume (exit 130)."""
    try:
        return call()
    except LangclassError as err:
        fail(err, as_json)
        return None
    except KeyboardInterrupt:
        typer.echo(f"interrupted: finished languages are in {out / 'languages'}; run the same command again to resume", err=True)
        raise typer.Exit(code=130)


def _suite(suite: str, out: Path, profile: str, setting: str, task: str, limit, only, ov, runner, progress, as_json: bool) -> None:
    from langclass.app.usecases.suite import run_suite
    from langclass.models.experiments.suite_report import agreement_lines

    result = _resumable(out, as_json, lambda: run_suite(suite, out, profile=profile, setting=setting, task=task, limit=limit, only=only,
                                                        overrides=ov, runner=runner, progress=progress))
    if result is None:
        return
    if as_json:
        typer.echo((out / "suite.json").read_text(encoding="utf-8"))
        return
    typer.echo((out / "suite.md").read_text(encoding="utf-8"))
    typer.echo(f"wrote {out / 'suite.json'}, suite.csv, suite.md ({result['runs']} runs, {result['wall_s']:.0f} s)")
    for line in agreement_lines(result["agreement"]):
        typer.echo(line)


def register(app: typer.Typer) -> None:
    """Add ``sweep`` to the ``langclass`` command."""
    app.command("sweep")(sweep)
