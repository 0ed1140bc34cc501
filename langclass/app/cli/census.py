"""``langclass census``: every language with a small minimal DFA, classified and counted.

::

    langclass census --states 3 --alphabet 2            the table (a few seconds)
    langclass census --states 4 --alphabet 2 --jobs 2   57,068 languages (minutes)
    langclass census --states 3 --alphabet 2 --json     the counts as JSON

See :mod:`langclass.core.census` for the enumeration and the published counts it is checked against.
"""

from __future__ import annotations

import json
import os
from typing import Annotated

import typer

from langclass.core.base.errors import LangclassError
from .common import fail

__all__ = ["register", "census"]


def census(
    states: Annotated[int, typer.Option("--states", "-n", min=1, max=8, help="N: at most this many states in the minimal DFA")] = 3,
    alphabet: Annotated[int, typer.Option("--alphabet", "-k", min=1, max=8, help="K: letters a, b, ...")] = 2,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=0, max=256, help="worker processes (0: the CPU count)")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print the counts as JSON")] = False,
    progress: Annotated[bool, typer.Option(help="show a progress bar on stderr")] = True,
) -> None:
    """Enumerate every language whose minimal complete DFA has at most N states over K letters (each
    once), classify each, and print the count per class, per inclusion difference and per pair of
    classes; the total is checked against the published counts of minimal DFAs."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from langclass.core.census import census as run_census
    from langclass.core.census import format_census

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = jobs or cpus
    bar = Progress(TextColumn("census"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   console=Console(stderr=True), disable=not progress)
    task = bar.add_task("census", total=None)
    try:
        with bar:
            result = run_census(states, alphabet, jobs=workers,
                                progress=lambda done, todo: bar.update(task, completed=done, total=todo))
    except LangclassError as err:
        fail(err, as_json)
        return
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        typer.echo(format_census(result))
    if result.matches_published is False:
        raise typer.Exit(code=1)


def register(app: typer.Typer) -> None:
    """Add ``census`` to the ``langclass`` command."""
    app.command("census")(census)
