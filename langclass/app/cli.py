"""The ``langclass`` command line.

Commands::

    langclass serve [--host 127.0.0.1] [--port 8000]    migrate, then serve the API (uvicorn)
    langclass db upgrade [REVISION]                     apply migrations (default: head)
    langclass db downgrade REVISION                     revert migrations (e.g. base)
    langclass db current                                the database's revision and the head
    langclass classify --regex '(ab)*' --alphabet ab    classes, certificates, encodings (table)
    langclass classify --dfa dfa.json --json            the same record POST /v1/classify returns

Later issues add commands from their own modules: each module in :data:`SUBCOMMAND_MODULES`
defines ``register(app: typer.Typer) -> None`` (append one line to the list).
"""

from __future__ import annotations

import importlib
import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..core.errors import InputError, LangclassError
from .settings import Settings, SettingsError, get_settings

__all__ = ["app", "main", "SUBCOMMAND_MODULES", "parse_alphabet"]

SUBCOMMAND_MODULES: list[str] = [
    "langclass.app.cli_jobs",  # issue 6: worker, train
    "langclass.app.cli_construct",  # issue 7: construct
]
"""Modules whose ``register(app)`` adds commands to :data:`app`."""

app = typer.Typer(
    name="langclass",
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


def parse_alphabet(text: str) -> list[str]:
    r"""An alphabet from the command line.

    * without a comma, one symbol per character: ``"ab"`` → ``["a", "b"]``;
    * with a comma, comma-separated symbols (spaces around each are dropped): ``"x1,x2"`` →
      ``["x1", "x2"]``; ``\,`` is a comma symbol and ``\\`` a backslash: ``"a,\,"`` → ``["a", ","]``;
    * a lone ``","`` is the one-symbol alphabet ``[","]``.

    Raises:
        AlphabetError: an empty symbol in the comma-separated form (the message says how to write a
            comma symbol).
    """
    from ..core.errors import AlphabetError

    if "," not in text:
        return list(text)
    if text == ",":
        return [","]
    symbols: list[str] = []
    current: list[str] = []
    chars = iter(text)
    for ch in chars:
        if ch == "\\":
            nxt = next(chars, "")
            if nxt in (",", "\\"):
                current.append(nxt)
            else:
                current.append(ch + nxt)
        elif ch == ",":
            symbols.append("".join(current))
            current = []
        else:
            current.append(ch)
    symbols.append("".join(current))
    symbols = [sym.strip() if sym.strip() else sym for sym in symbols]
    for i, sym in enumerate(symbols):
        if not sym.strip():
            raise AlphabetError(
                f"symbol {i} of the comma-separated alphabet {text!r} is empty; "
                "to use a comma as a symbol write it as \\, (e.g. 'a,b,\\,')",
                field="alphabet",
            )
    return symbols


def _fail(err: LangclassError, as_json: bool) -> None:
    from ..core.errors import LimitExceeded
    from .settings import setting_for_limit

    if isinstance(err, LimitExceeded) and "setting" not in err.extra:
        err.extra["setting"] = setting_for_limit(str(err.extra.get("limit", "")))
    if as_json:
        typer.echo(json.dumps({"error": err.to_dict()}, indent=2, default=str), err=True)  # ASCII: surrogates escaped
    else:
        where = f" [{err.field}]" if err.field else ""
        extra = "".join(f" {k}={v}" for k, v in err.extra.items())
        line = f"error ({err.code}){where}: {err.detail}{extra}"
        typer.echo(line.encode("utf-8", "backslashreplace").decode("utf-8"), err=True)
    raise typer.Exit(code=2)


def _exit_after_graceful_shutdown(signum: int, frame: object) -> None:
    """SIGTERM handler in force after uvicorn's own: the shutdown is done, exit with status 0."""
    raise SystemExit(0)


@app.command()
def serve(
    host: Annotated[Optional[str], typer.Option(help="interface to bind (default LANGCLASS_HOST or 127.0.0.1)")] = None,
    port: Annotated[Optional[int], typer.Option(help="port (default LANGCLASS_PORT or 8000)")] = None,
    migrate: Annotated[bool, typer.Option(help="apply migrations before serving")] = True,
    workers: Annotated[int, typer.Option(min=1, help="uvicorn worker processes")] = 1,
) -> None:
    """Apply migrations, then serve the API with uvicorn (SQLite ./langclass.db by default)."""
    import uvicorn

    from .db import upgrade

    settings = get_settings()
    if migrate and settings.auto_migrate:
        upgrade(settings.database_url)
    # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal with the handler that was
    # installed before it started; this one makes that last step a clean exit (status 0, not 143)
    signal.signal(signal.SIGTERM, _exit_after_graceful_shutdown)
    uvicorn.run(
        "langclass.app.main:create_app",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        workers=workers,
        log_level=settings.log_level,
        proxy_headers=True,
    )


@db_app.command("upgrade")
def db_upgrade(revision: Annotated[str, typer.Argument(help="target revision")] = "head") -> None:
    """Apply migrations up to REVISION (default: the newest)."""
    from .db import upgrade

    settings = get_settings()
    upgrade(settings.database_url, revision)
    typer.echo(f"database at {revision} ({_safe_url(settings)})")


@db_app.command("downgrade")
def db_downgrade(revision: Annotated[str, typer.Argument(help="target revision, e.g. base")]) -> None:
    """Revert migrations down to REVISION."""
    from .db import downgrade

    settings = get_settings()
    downgrade(settings.database_url, revision)
    typer.echo(f"database at {revision} ({_safe_url(settings)})")


@db_app.command("current")
def db_current() -> None:
    """Print the database's revision and the newest one."""
    from .db import Database, schema_status

    settings = get_settings()
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
) -> None:
    """Classify one language: classes with certificates and the encoding that suffices."""
    from .service import classification_record, code_version, parse_language

    settings = get_settings()
    limits = settings.limits()
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
        from ..core.analysis import analyze, format_table

        analysis = analyze(parsed.dfa, limits)
    except LangclassError as err:
        _fail(err, as_json)
        return
    if as_json:
        record = classification_record(parsed, analysis.to_dict(), settings.code_version or code_version())
        typer.echo(json.dumps(record, indent=2, ensure_ascii=False, default=str))
        return
    typer.echo(f"language {parsed.fingerprint}")
    for note in parsed.source.get("notes", ()):
        typer.echo(f"note: {note}")
    typer.echo(format_table(analysis))


def _register_subcommands() -> None:
    for name in SUBCOMMAND_MODULES:
        module = importlib.import_module(name)
        module.register(app)


_register_subcommands()


def main() -> None:
    """Console-script entry point (``langclass``)."""
    try:
        app()
    except SettingsError as err:  # settings read later (e.g. in a uvicorn worker process)
        _settings_error(err)
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
