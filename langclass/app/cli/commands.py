"""The ``langclass`` command line.

Commands::

    langclass serve [--host 127.0.0.1] [--port 8000]    migrate, then serve the API (uvicorn)
    langclass db upgrade [REVISION]                     apply migrations (default: head)
    langclass db downgrade REVISION [--force]           revert migrations (e.g. base; --force when rows would be lost)
    langclass db current                                the database's revision and the head
    langclass classify --regex '(ab)*' --alphabet ab    classes, certificates, encodings (table)
    langclass classify --dfa dfa.json --json            the same record POST /v1/classify returns

    langclass classify --batch languages.jsonl -o out.jsonl   many languages, in parallel, resumable
    langclass census --states 3 --alphabet 2            every language with a small minimal DFA, classified

Other commands live in their own modules, each with ``register(app: typer.Typer) -> None``; they
are imported statically below (:data:`SUBCOMMAND_MODULES`) and share :mod:`langclass.app.cli.common`.
Heavy dependencies (torch, the web stack, the database) are imported inside the commands that use
them, so ``langclass --help`` and ``langclass classify`` start without them.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
import typer.core

from langclass.core.base.errors import InputError, LangclassError
from . import census, construct, interop, jobs, sectors, sweep
from .common import fail as _fail
from .common import parse_alphabet
from langclass.app.settings import Settings, SettingsError, get_settings

__all__ = ["app", "main", "SUBCOMMAND_MODULES", "parse_alphabet"]

SUBCOMMAND_MODULES = (jobs, construct, census, sectors, sweep, interop)
"""Modules whose ``register(app)`` adds commands to :data:`app` (worker, train; construct; census; sectors)."""

class _Commands(typer.core.TyperGroup):
    """The top-level group: an OS error on a path the user gave (an ``--output`` in a directory that
    does not exist, ``--out`` naming a file, ``LANGCLASS_CENSUS_DIR`` naming a file, …) is one line
    ``error (invalid-input): cannot use the path …: <reason>`` and exit status 2, in every subcommand."""

    def invoke(self, ctx):  # type: ignore[no-untyped-def]
        # the subcommand's name and its unparsed arguments (click ≥ 8.2 keeps the name in _protected_args)
        argv = [*(getattr(ctx, "_protected_args", None) or getattr(ctx, "protected_args", None) or []), *ctx.args]
        as_json = "--json" in argv
        repeated = repeated_option(self, argv, ctx)
        if repeated is not None:
            _fail(repeated, as_json)
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.filename is None:  # not about a path: a bug or the environment, keep the traceback
                raise
            from .common import path_error

            _fail(path_error(exc), as_json)


def repeated_option(group, argv: list[str], ctx) -> InputError | None:  # type: ignore[no-untyped-def]
    """The ``invalid-input`` error for an option given more than once on one command line (click
    would silently keep the last: ``--regex '(ab)*' --regex a`` classified ``a``), else None.

    ``argv`` is the group's unparsed arguments (the subcommand's name first; a nested group's
    subcommand is followed). Options declared ``multiple`` (``-e``, ``--seed``) and counted ones may
    repeat; an option's long and short spellings (``--regex``, ``-r``) count as the same option;
    everything after ``--`` is an argument."""
    # duck-typed: typer may bring its own copy of click, whose classes are not ``click``'s
    def is_group(cmd) -> bool:  # type: ignore[no-untyped-def]
        return hasattr(cmd, "get_command")

    command, rest = group, list(argv)
    while is_group(command) and rest:
        found = command.get_command(ctx, rest[0])
        if found is None:
            return None  # click reports the unknown command itself
        command, rest = found, rest[1:]
    if is_group(command):
        return None
    by_flag: dict[str, Any] = {}
    for param in command.params:
        if getattr(param, "param_type_name", "") == "option":
            for flag in (*param.opts, *param.secondary_opts):
                by_flag[flag] = param
    seen: dict[str, list[str]] = {}
    i = 0
    while i < len(rest):
        token = rest[i]
        i += 1
        if token == "--":
            break
        if token.startswith("--"):
            flag, has_value = token.split("=", 1)[0], "=" in token
        elif token.startswith("-") and len(token) > 1 and not token[1].isdigit():
            flag, has_value = token[:2], len(token) > 2
        else:
            continue
        param = by_flag.get(flag)
        if param is None:
            continue
        if not param.is_flag and not param.count and not has_value:
            i += 1  # the option's value, whatever it looks like
        if param.multiple or param.count:
            continue
        seen.setdefault(param.name or flag, []).append(flag)
    for name, flags in seen.items():
        if len(flags) > 1:
            shown = ", ".join(flags)
            return InputError(f"option {flags[0]} was given {len(flags)} times ({shown}); give it once "
                              "(a repeated option would silently keep only the last value)", field=flags[0])
    return None


app = typer.Typer(
    name="langclass",
    cls=_Commands,
    help="Classify regular languages for transformer expressivity; serve the REST API.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
db_app = typer.Typer(help="Database migrations (Alembic).", no_args_is_help=True)
app.add_typer(db_app, name="db")


def _settings_error(err: SettingsError) -> None:
    """Print invalid settings as one line each (never their values) and exit with status 2."""
    for e in err.errors:
        typer.echo(f"error (invalid-settings): {e['variable']}: {e['message']}", err=True)


@app.callback()
def _check_settings() -> None:
    """Validate the LANGCLASS_* settings before any command runs (clean error, exit 2)."""
    try:
        get_settings()
    except SettingsError as err:
        _settings_error(err)
        raise typer.Exit(code=2) from None


def _exit_after_graceful_shutdown(signum: int, frame: object) -> None:
    """SIGTERM handler in force after uvicorn's own: the shutdown is done, exit with status 0."""
    raise SystemExit(0)


@app.command()
def serve(
    host: Annotated[Optional[str], typer.Option(help="interface to bind (default LANGCLASS_HOST or 127.0.0.1)")] = None,
    port: Annotated[Optional[int], typer.Option(min=1, max=65535, help="port 1..65535 (default LANGCLASS_PORT or 8000)")] = None,
    migrate: Annotated[bool, typer.Option(help="apply migrations before serving")] = True,
    workers: Annotated[int, typer.Option(min=1, help="uvicorn worker processes")] = 1,
) -> None:
    """Apply migrations, then serve the API with uvicorn (SQLite ./langclass.db by default)."""
    import uvicorn

    from langclass.app.store.db import upgrade

    settings = get_settings()
    settings.check_database_url()
    if migrate and settings.auto_migrate:
        upgrade(settings.database_url)
    # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal with the handler that was
    # installed before it started; this one makes that last step a clean exit (status 0, not 143)
    signal.signal(signal.SIGTERM, _exit_after_graceful_shutdown)
    uvicorn.run(
        "langclass.app.main:create_served_app",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        workers=workers,
        log_level=settings.log_level,
        **proxy_options(settings),
    )


def proxy_options(settings: Settings) -> dict[str, object]:
    """uvicorn's proxy options: ``X-Forwarded-For`` / ``-Proto`` are believed only from the peers in
    ``LANGCLASS_TRUSTED_PROXIES``; without any, the client address is the real peer's (before, uvicorn
    believed any loopback peer, so a local client varying ``X-Forwarded-For`` escaped the sign-in
    throttle, which is keyed by the client address)."""
    if not settings.trusted_proxies:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": ",".join(settings.trusted_proxies)}


@db_app.command("upgrade")
def db_upgrade(revision: Annotated[str, typer.Argument(help="target revision")] = "head") -> None:
    """Apply migrations up to REVISION (default: the newest)."""
    from langclass.app.store.db import upgrade

    settings = get_settings()
    settings.check_database_url()
    try:
        upgrade(settings.database_url, revision)
    except LangclassError as err:
        _fail(err, False)
    typer.echo(f"database at {revision} ({_safe_url(settings)})")


@db_app.command("downgrade")
def db_downgrade(
    revision: Annotated[str, typer.Argument(help="target revision, e.g. base")],
    force: Annotated[bool, typer.Option("--force", help="go ahead although stored rows will be deleted")] = False,
) -> None:
    """Revert migrations down to REVISION. Refused (exit 2) while the database holds rows, which
    the dropped tables would take with them, unless --force is given."""
    from langclass.core.base.errors import LangclassError
    from langclass.app.store.db import downgrade

    settings = get_settings()
    settings.check_database_url()
    try:
        downgrade(settings.database_url, revision, force=force)
    except LangclassError as err:
        _fail(err, False)
    typer.echo(f"database at {revision} ({_safe_url(settings)})")


@db_app.command("current")
def db_current() -> None:
    """Print the database's revision and the newest one."""
    from langclass.app.store.db import Database, schema_status

    settings = get_settings()
    settings.check_database_url()
    db = Database(settings.database_url)
    try:
        status = schema_status(db.engine, db.url)
    finally:
        db.dispose()
    typer.echo(json.dumps(status))


def _safe_url(settings: Settings) -> str:
    from sqlalchemy.engine import make_url

    return make_url(settings.database_url).render_as_string(hide_password=True)


@app.command()
def classify(
    regex: Annotated[Optional[str], typer.Option("--regex", "-r", help="regex over the alphabet (docs/regex.md)")] = None,
    alphabet: Annotated[Optional[str], typer.Option("--alphabet", "-a", help="'ab' = {a,b}; 'x1,x2' for longer symbols; '\\,' is a comma symbol ('a,\\,' = {a, ','})")] = None,
    dfa: Annotated[Optional[Path], typer.Option("--dfa", help="DFA JSON file ('-' = standard input)")] = None,
    formula: Annotated[Optional[str], typer.Option("--formula", "-f", help="past-LTL formula over the alphabet")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the record POST /v1/classify returns")] = False,
    batch: Annotated[Optional[Path], typer.Option("--batch", help="classify every row of a .jsonl or .csv file (docs/python.md#batch)")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="with --batch: the .jsonl or .csv to write (appended to: a rerun resumes)")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=0, max=256, help="with --batch: worker processes (0: the CPU count)")] = 0,
    progress: Annotated[bool, typer.Option(help="with --batch: show a progress bar on stderr")] = True,
    cross_check: Annotated[bool, typer.Option("--cross-check", help="run every class's own decider (each answer with its own certificate) and check that they agree, instead of answering through the lattice's inclusions")] = False,
) -> None:
    """Classify one language: classes with certificates and the encoding that suffices
    (or, with --batch, a file of languages: one row each, in parallel, resumable)."""
    from langclass.app.usecases.service import classification_json, classification_record, code_version, parse_language

    settings = get_settings()
    limits = settings.limits()
    if batch is not None:
        if cross_check:
            _fail(InputError("--cross-check classifies one language; it is not taken with --batch", field="cross_check"), as_json)
            return
        _classify_batch(batch, output, jobs, progress, limits, regex=regex, dfa=dfa, formula=formula)
        return
    try:
        dfa_text: str | None = None
        if dfa is not None:
            try:
                dfa_text = sys.stdin.read() if str(dfa) == "-" else dfa.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"cannot read the DFA file {dfa}: {exc}", field="dfa") from None
        alpha = parse_alphabet(alphabet) if alphabet is not None else None
        # DFA text goes to the parser as text, so repeated JSON keys are detected
        parsed = parse_language(regex=regex, dfa=dfa_text, formula=formula, alphabet=alpha, limits=limits)
        from langclass.core.classification.analysis import analyze, format_table

        analysis = analyze(parsed.dfa, limits, cross_check=cross_check)
    except LangclassError as err:
        _fail(err, as_json)
        return
    if as_json:
        record = classification_record(parsed, analysis.to_dict(), settings.code_version or code_version())
        # the bytes the API sends (validated and serialized by its response model), pretty-printed
        typer.echo(json.dumps(json.loads(classification_json(record)), indent=2, ensure_ascii=False))
        return
    typer.echo(f"language {parsed.fingerprint}")
    for note in parsed.source.get("notes", ()):
        typer.echo(f"note: {note}")
    from langclass.core.drawing.svg import user_state_names

    names = user_state_names(parsed.document, parsed.dfa) if parsed.document is not None else None
    typer.echo(format_table(analysis, state_names=names))


def _classify_batch(source: Path, output: Path | None, jobs: int, progress: bool, limits, **single) -> None:
    import os

    from .batch import run_batch

    try:
        if any(v is not None for v in single.values()):
            raise InputError("--batch reads its languages from the file; drop --regex/--dfa/--formula", field="batch")
        if output is None:
            raise InputError("--batch needs --output FILE.jsonl or FILE.csv (a rerun resumes it)", field="output")
        if not source.is_file():
            raise InputError(f"cannot read the batch file {source}", field="batch")
        if output.suffix.lower() not in (".jsonl", ".csv"):  # checked before the progress bar starts
            raise InputError(f"batch output must end in .jsonl or .csv, not {output.name!r}", field="output")
        from .common import check_output_file

        check_output_file(output, "output")
        workers = jobs or max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
        from rich.console import Console

        bar = Progress(TextColumn("classify"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                       TextColumn("{task.fields[errors]} errors"), console=Console(stderr=True), disable=not progress)
        task = bar.add_task("classify", total=None, errors=0)
        errors = 0

        def on_total(todo: int, skipped: int) -> None:
            bar.update(task, total=todo)
            if skipped:
                typer.echo(f"resuming: {skipped} rows already in {output}", err=True)

        def on_row(row: dict) -> None:
            nonlocal errors
            errors += row["status"] != "ok"
            bar.update(task, advance=1, errors=errors)

        with bar:
            counts = run_batch(source, output, limits=limits, jobs=workers, on_row=on_row, on_total=on_total)
    except LangclassError as err:
        _fail(err, False)
        return
    except KeyboardInterrupt:
        typer.echo(f"interrupted: the rows written so far are in {output}; rerun the same command to resume", err=True)
        raise typer.Exit(code=130) from None
    typer.echo(f"{counts['done']} rows written to {output} ({counts['errors']} errors, {counts['skipped']} already there)")


for _module in SUBCOMMAND_MODULES:
    _module.register(app)


def main() -> None:
    """Console-script entry point (``langclass``)."""
    try:
        app()
    except SettingsError as err:  # settings read later (e.g. in a uvicorn worker process)
        _settings_error(err)
        sys.exit(2)
    except Exception as err:  # the database server cannot be reached / opened (SQLAlchemy loaded lazily)
        exc_module = sys.modules.get("sqlalchemy.exc")
        if exc_module is None or not isinstance(err, exc_module.OperationalError):
            raise
        cause = str(err.orig if err.orig is not None else err).strip().splitlines()
        typer.echo(f"error (database-unavailable): LANGCLASS_DATABASE_URL: cannot open the database: "
                   f"{type(err.orig or err).__name__}: {cause[0] if cause else ''}", err=True)
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
