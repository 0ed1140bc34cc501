"""``langclass census``: every language with a small minimal DFA, classified and counted.

::

    langclass census --states 3 --alphabet 2            the table (seconds)
    langclass census --states 5 --alphabet 2 --jobs 2   3,762,374 languages (minutes), resumable
    langclass census --states 4 --alphabet 2 --ray auto the same through a Ray cluster
    langclass census --states 3 --alphabet 2 --json     the counts as JSON (with "run_id")
    langclass census --states 3 --alphabet 2 --no-store count only, store nothing

The finished run is stored in the configured database (``LANGCLASS_DATABASE_URL``, default SQLite
``./langclass.db``; migrations are applied first, as ``langclass serve`` does) with every language's
record in a data file under ``LANGCLASS_CENSUS_DIR`` (:mod:`langclass.app.store.census_runs`); the
run id is printed last (``GET /v1/census/{run}``, the page ``/census/{run}``).

Finished shards go to a checkpoint file (default under ``$XDG_CACHE_HOME/langclass/census/``,
``--checkpoint`` to choose it); a run stopped by Ctrl-C or a kill resumes from it when the same
command runs again (``--fresh`` starts over). Once the run is stored (or printed, with
``--no-store``) the checkpoint and its ``.members/`` folder are removed, so the same command later
counts afresh. The run's ``seconds`` are compute seconds summed over the shards (resumed ones
included); ``wall_seconds`` is this invocation's wall time. Runs stored before with the same N, K
and classes are named (``"same_runs"`` in ``--json``). See :mod:`langclass.core.census.run` for the enumeration
and the published counts it is checked against (exit 1 on a mismatch).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from langclass.core.base.errors import LangclassError
from .common import fail

__all__ = ["register", "census", "default_checkpoint"]


def default_checkpoint(states: int, alphabet: int) -> Path:
    """``$XDG_CACHE_HOME/langclass/census/n{N}-k{K}.jsonl`` (``~/.cache`` when unset)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "langclass" / "census" / f"n{states}-k{alphabet}.jsonl"


def census(
    states: Annotated[int, typer.Option("--states", "-n", min=1, max=10, help="N: at most this many states in the minimal DFA")] = 3,
    alphabet: Annotated[int, typer.Option("--alphabet", "-k", min=1, max=8, help="K: letters a, b, ...")] = 2,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=0, max=256, help="worker processes (0: the CPU count)")] = 0,
    ray: Annotated[Optional[str], typer.Option("--ray", help="run the shards on a Ray cluster: 'auto', 'HOST:PORT' or 'local'")] = None,
    checkpoint: Annotated[Optional[Path], typer.Option("--checkpoint", help="checkpoint file of finished shards")] = None,
    no_checkpoint: Annotated[bool, typer.Option("--no-checkpoint", help="keep no checkpoint")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="discard an existing checkpoint and count everything")] = False,
    max_languages: Annotated[Optional[int], typer.Option("--max-languages", min=1, help="raise max_census_languages (default 10,000,000)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the counts as JSON")] = False,
    no_store: Annotated[bool, typer.Option("--no-store", help="do not store the run in the database")] = False,
    progress: Annotated[bool, typer.Option(help="show a progress bar on stderr")] = True,
) -> None:
    """Enumerate every language whose minimal complete DFA has at most N states over K letters (each
    once), classify each, and print the count per class, per inclusion difference and per pair of
    classes; the total is checked against the published counts of minimal DFAs (exit 1 on a mismatch).
    Ctrl-C or a kill keeps the finished shards: run the same command again to resume."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from langclass.core.census.run import MAX_CENSUS_LANGUAGES, census as run_census, format_census
    from .common import check_output_dir, check_output_file

    err_console = Console(stderr=True)
    settings = None
    ckpt = None if no_checkpoint else (checkpoint or default_checkpoint(states, alphabet))
    try:  # the size and the paths are checked before any work (and before the progress bar)
        from langclass.core.base.errors import LimitExceeded
        from langclass.core.census.run import expected_languages

        bound = max_languages or MAX_CENSUS_LANGUAGES
        expected = expected_languages(states, alphabet)
        if expected > bound:
            raise LimitExceeded("max_census_languages", bound,
                                f"N={states}, K={alphabet} means up to {expected} languages; max_census_languages={bound}")
        if not no_store:
            from langclass.app.settings import get_settings

            settings = get_settings()
            settings.check_database_url()
            check_output_dir(Path(settings.census_directory), "LANGCLASS_CENSUS_DIR")
        if ckpt is not None:
            check_output_file(ckpt, "checkpoint") if ckpt.parent.is_dir() else check_output_dir(ckpt.parent, "checkpoint")
    except LangclassError as err:
        fail(err, as_json)
        return
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = jobs or cpus
    if ckpt is not None and fresh and ckpt.exists():
        ckpt.unlink()
    runner = None
    executor = "local"
    if ray is not None:
        try:
            from langclass.app.execution.census_ray import ray_runner
        except ImportError:  # pragma: no cover - ray is an optional dependency
            typer.echo("--ray needs Ray: pip install 'langclass[ray]'", err=True)
            raise typer.Exit(code=2)
        runner, workers = ray_runner(None if ray == "local" else ray)
        executor = "ray"
    bar = Progress(TextColumn("census shards"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[languages]:,} languages"), TimeElapsedColumn(), TimeRemainingColumn(),
                   console=err_console, disable=not progress)
    task = bar.add_task("census", total=None, languages=0)
    if ckpt is not None and progress:
        err_console.print(f"checkpoint: {ckpt}")
    try:
        with bar:
            result = run_census(
                states, alphabet, jobs=workers, runner=runner, checkpoint=ckpt, executor=executor,
                max_languages=max_languages or MAX_CENSUS_LANGUAGES, keep_members=not no_store,
                progress=lambda done, todo, langs: bar.update(task, completed=done, total=todo, languages=langs))
    except LangclassError as err:
        fail(err, as_json)
        return
    except KeyboardInterrupt:
        where = f"the finished shards are in {ckpt}; run the same command again to resume" if ckpt else "no checkpoint kept"
        typer.echo(f"interrupted: {where}", err=True)
        raise typer.Exit(code=130)
    run_id, same = _store(result, settings) if settings is not None else (None, [])
    if ckpt is not None:  # the run is kept (stored, or printed with --no-store): the same command counts afresh
        from langclass.core.census.run import Checkpoint

        Checkpoint.remove(ckpt)
    if as_json:
        typer.echo(json.dumps({**result.to_dict(), "run_id": run_id, "same_runs": same}, indent=2, ensure_ascii=False))
    else:
        typer.echo(format_census(result))
        typer.echo(f"stored as census run {run_id}" if run_id else "not stored (--no-store)")
        if same:
            typer.echo(f"stored before with the same N, K and classes: {', '.join(same)}")
    if result.matches_published is False:
        typer.echo("MISMATCH: the counts per state number differ from the published ones", err=True)
        raise typer.Exit(code=1)


def _store(result: object, settings: object) -> tuple[str, list[str]]:
    """Apply migrations (when ``auto_migrate``) and store the run; its id and the ids of the runs
    stored before with the same N, K and classes (another is stored all the same)."""
    from langclass.app.store.census_runs import same_runs, save_run
    from langclass.app.store.db import Database, upgrade
    from langclass.version import code_version

    if settings.auto_migrate:  # type: ignore[attr-defined]
        upgrade(settings.database_url)  # type: ignore[attr-defined]
    db = Database(settings.database_url)  # type: ignore[attr-defined]
    try:
        with db.session_scope() as session:
            same = same_runs(session, result.max_states, result.alphabet_size,  # type: ignore[attr-defined]
                             list(result.class_keys))  # type: ignore[attr-defined]
            row = save_run(session, result, settings.census_directory,  # type: ignore[attr-defined]
                           code_version=settings.code_version or code_version())  # type: ignore[attr-defined]
            return row.id, same
    finally:
        db.dispose()


def register(app: typer.Typer) -> None:
    """Add ``census`` to the ``langclass`` command."""
    app.command("census")(census)
