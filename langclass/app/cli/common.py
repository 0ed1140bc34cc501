"""What every ``langclass`` subcommand shares: reading an alphabet and reporting an error.

Subcommand modules (``jobs``, ``construct``, ``census``, ``sectors``) and the batch reader import these
from here; :mod:`langclass.app.cli.commands` imports the subcommand modules statically and registers them, so
no module imports the CLI's entry point back.
"""

from __future__ import annotations

import json

import typer

from langclass.core.base.errors import LangclassError

__all__ = ["parse_alphabet", "fail", "path_error", "check_output_file", "check_output_dir"]


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
    from langclass.core.base.errors import AlphabetError

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


def fail(err: LangclassError, as_json: bool) -> None:
    """Print ``err`` (one line, or ``{"error": {...}}`` JSON with ``as_json``) on stderr and exit 2.

    A limit error gains the ``setting`` (``LANGCLASS_*`` variable) that raises the limit.

    Raises:
        typer.Exit: always (code 2).
    """
    from langclass.core.base.errors import LimitExceeded
    from langclass.app.settings import setting_for_limit

    if isinstance(err, LimitExceeded) and "setting" not in err.extra:
        err.extra["setting"] = setting_for_limit(str(err.extra.get("limit", "")))
    if as_json:
        from langclass.app.errors import problem_dict

        typer.echo(json.dumps({"error": problem_dict(err)}, indent=2, default=str), err=True)  # ASCII: surrogates escaped
    else:
        where = f" [{err.field}]" if err.field else ""
        extra = "".join(f" {k}={v}" for k, v in err.extra.items())
        line = f"error ({err.code}){where}: {err.detail}{extra}"
        typer.echo(line.encode("utf-8", "backslashreplace").decode("utf-8"), err=True)
    raise typer.Exit(code=2)


def path_error(exc: OSError) -> LangclassError:
    """The ``invalid-input`` error for an OS error on a path the user gave (``--output``, ``--out``,
    ``--checkpoint``, ``LANGCLASS_CENSUS_DIR``): it names the path and the operating system's reason."""
    from langclass.core.base.errors import InputError

    path = exc.filename if exc.filename is not None else ""
    other = f" -> {exc.filename2}" if getattr(exc, "filename2", None) else ""
    reason = exc.strerror or type(exc).__name__
    return InputError(f"cannot use the path {str(path)!r}{other}: {reason}", path=str(path))


def _nearest_existing(path: "Path") -> "Path":
    from pathlib import Path

    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_output_file(path: "Path", field: str) -> None:
    """Refuse (``InputError`` naming ``field``) a file the command cannot create or append to, before any work."""
    import os
    from pathlib import Path

    from langclass.core.base.errors import InputError

    path = Path(path)
    if path.is_dir():
        raise InputError(f"{field} {str(path)!r} is a directory, not a file", field=field)
    if path.exists():
        if not os.access(path, os.W_OK):
            raise InputError(f"{field} {str(path)!r} is not writable", field=field)
        return
    parent = path.absolute().parent
    if not parent.is_dir():
        existing = _nearest_existing(parent)
        why = "is not a directory" if existing.exists() and not existing.is_dir() else "does not exist"
        raise InputError(f"cannot create {field} {str(path)!r}: the directory {str(parent)!r} {why}", field=field)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot create {field} {str(path)!r}: the directory {str(parent)!r} is not writable", field=field)


def check_output_dir(path: "Path", field: str) -> None:
    """Refuse (``InputError`` naming ``field``) a directory the command cannot use or create, before any work."""
    import os
    from pathlib import Path

    from langclass.core.base.errors import InputError

    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{field} {str(path)!r} exists and is not a directory", field=field)
    existing = _nearest_existing(path)
    if not existing.is_dir():
        raise InputError(f"cannot create {field} {str(path)!r}: {str(existing)!r} is not a directory", field=field)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{field} {str(path)!r}: {str(existing)!r} is not writable", field=field)
