"""Classify a file of languages: ``langclass classify --batch languages.jsonl -o classes.jsonl``.

Input (one language per row):

* ``.jsonl``: one JSON object per line with exactly one of ``regex`` / ``dfa`` (a DFA JSON object)
  / ``formula``, an ``alphabet`` (a list of symbols, or a string: one symbol per character, or
  comma-separated) unless a DFA carries its own, and optional ``name`` and ``tags`` (a list);
* ``.csv``: a header row naming the columns ``regex``, ``dfa`` (DFA JSON text), ``formula``,
  ``alphabet`` (as on the command line), ``name``, ``tags`` (separated by ``;``); empty cells are absent.

Output: one flat row per input row (``.jsonl`` or ``.csv``, chosen by the output's suffix), with
the columns of ``GET /v1/languages?format=csv`` (one writer, :mod:`langclass.app.usecases.export_csv`):
``row`` (1-based index of the input row), ``status`` (``ok`` / ``error``), ``id`` (fingerprint),
``name``, ``tags``, ``kind``, ``source`` (regex, formula, or the DFA as JSON), ``alphabet``,
``num_states``, ``monoid_size``, one column per class key (``true``/``false``/empty when undecided),
``period`` (of LTL[P,MOD]), ``period_y_mod`` (the least m of LTL[P,Y,MOD]), ``soft_encoding``, ``hard_encoding``, ``created_at`` (empty here), and for
errors ``error_code``, ``error_field``, ``error_detail``. In the CSV, lists are JSON arrays and cells
that a spreadsheet would take for a formula start with ``'``. A bad row becomes an error row; the
batch never aborts on one.

Rows are written in input order (also with ``jobs`` > 1 worker processes: a finished row waits
for the rows before it, at most 4·jobs rows in flight) and flushed one by one, so an interrupted
run loses at most the rows in flight: rerunning the same command skips every
row already in the output (by ``row``) and appends the rest — no duplicates. A partial last line
left by a kill is cut off before resuming.
"""

from __future__ import annotations

import csv
import json
import os
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from langclass.core.base.errors import InputError, LangclassError
from langclass.core.algebra.lattice import CLASS_KEYS
from langclass.core.base.limits import Limits
from langclass.app.usecases.export_csv import CSV_COLUMNS
from langclass.app.usecases.export_csv import csv_header as _csv_header
from langclass.app.usecases.export_csv import csv_row as _csv_row

__all__ = ["COLUMNS", "read_rows", "classify_row", "done_rows", "run_batch", "MAX_ROW_BYTES"]

MAX_ROW_BYTES = 1_000_000
"""Longest input line (bytes) read as one language; a longer one becomes an error row."""

COLUMNS: tuple[str, ...] = CSV_COLUMNS
"""The output columns, in order."""


def _alphabet(value: Any) -> list[str] | None:
    from .common import parse_alphabet

    if value is None or value == "":
        return None
    if isinstance(value, str):
        return parse_alphabet(value)
    if isinstance(value, list):
        return value
    raise InputError(f"alphabet must be a string or a list of symbols, not {type(value).__name__}", field="alphabet")


def read_rows(path: Path) -> Iterator[tuple[int, dict[str, Any] | LangclassError]]:
    """``(row number, row)`` for each language of a ``.jsonl`` or ``.csv`` file; an unreadable row
    comes as ``(row number, InputError)`` so it can be reported as an error row.

    Raises:
        InputError: unknown suffix, or a CSV without any language column.
    """
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        with path.open("rb") as fh:
            for i, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                if len(raw) > MAX_ROW_BYTES:
                    yield i, InputError(f"row {i} is longer than {MAX_ROW_BYTES} bytes", field="row")
                    continue
                try:
                    obj = json.loads(raw)
                except (ValueError, UnicodeDecodeError) as exc:
                    yield i, InputError(f"row {i} is not valid JSON: {exc}", field="row")
                    continue
                if not isinstance(obj, dict):
                    yield i, InputError(f"row {i} is not a JSON object", field="row")
                    continue
                yield i, obj
    elif suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames or not {"regex", "dfa", "formula"} & set(reader.fieldnames):
                raise InputError("the CSV header names none of the columns regex, dfa, formula", field="batch")
            for i, rec in enumerate(reader, start=1):
                row: dict[str, Any] = {k: v for k, v in rec.items() if k and v not in (None, "")}
                if "tags" in row:
                    row["tags"] = [t.strip() for t in str(row["tags"]).split(";") if t.strip()]
                yield i, row
    else:
        raise InputError(f"batch input must end in .jsonl or .csv, not {path.name!r}", field="batch")


def _error_row(i: int, row: Mapping[str, Any] | None, err: Mapping[str, Any]) -> dict[str, Any]:
    out = {c: None for c in COLUMNS}
    out.update(row=i, status="error", error_code=err.get("code"), error_field=err.get("field"),
               error_detail=err.get("detail"))
    if row is not None:
        out["name"] = row.get("name") if isinstance(row.get("name"), str) else None
        out["tags"] = row.get("tags") if isinstance(row.get("tags"), list) else None
    return out


def classify_row(i: int, row: Mapping[str, Any], limits: Limits) -> dict[str, Any]:
    """The output row of input row ``i`` (never raises for bad input: that is an error row)."""
    from langclass.core.classification.analysis import analyze
    from langclass.app.usecases.export_csv import source_text
    from langclass.app.usecases.service import parse_language

    try:
        unknown = set(row) - {"regex", "dfa", "formula", "alphabet", "name", "tags"}
        if unknown:
            raise InputError(f"unknown field(s) {', '.join(sorted(unknown))}", field=sorted(unknown)[0])
        dfa = row.get("dfa")
        if isinstance(dfa, str):  # CSV: DFA JSON text (parsed by the DFA parser, duplicate keys caught)
            dfa = dfa.encode("utf-8")
        parsed = parse_language(regex=row.get("regex"), dfa=dfa, formula=row.get("formula"),
                                alphabet=_alphabet(row.get("alphabet")), limits=limits)
        analysis = analyze(parsed.dfa, limits)
    except LangclassError as err:
        return _error_row(i, row, err.to_dict())
    except Exception as exc:  # noqa: BLE001 - a batch reports every failure as a row
        return _error_row(i, row, {"code": "internal-error", "field": None, "detail": f"{type(exc).__name__}: {exc}"})
    out = {c: None for c in COLUMNS}
    out.update(row=i, name=row.get("name"), tags=row.get("tags"), status="ok", id=parsed.fingerprint,
               kind=parsed.source["kind"], source=source_text(parsed.source), alphabet=list(parsed.dfa.alphabet),
               num_states=parsed.dfa.num_states,
               monoid_size=analysis.monoid.size if analysis.monoid is not None else None,
               period=analysis.classes["ltl_p_mod"].period,
               period_y_mod=analysis.classes["ltl_p_y_mod"].period,
               soft_encoding=analysis.encodings["soft"].get("encoding"),
               hard_encoding=analysis.encodings["hard"].get("encoding"))
    for key, res in analysis.classes.items():
        out[key] = res.member
    return out


def _truncate_partial_line(path: Path) -> None:
    """Cut a last line that has no newline (a write interrupted by a kill)."""
    with path.open("rb+") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        if size == 0:
            return
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return
        data_end = size
        step = 4096
        pos = size
        while pos > 0:
            pos = max(0, pos - step)
            fh.seek(pos)
            chunk = fh.read(data_end - pos)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                fh.truncate(pos + nl + 1)
                return
        fh.truncate(0)


def done_rows(path: Path) -> set[int]:
    """Row numbers already in an output file (empty when it does not exist)."""
    if not path.exists():
        return set()
    _truncate_partial_line(path)
    done: set[int] = set()
    with path.open(encoding="utf-8", newline="") as fh:
        if path.suffix.lower() == ".csv":
            for rec in csv.DictReader(fh):
                if rec.get("row", "").isdigit():
                    done.add(int(rec["row"]))
        else:
            for line in fh:
                try:
                    done.add(int(json.loads(line)["row"]))
                except (ValueError, KeyError, TypeError):
                    continue
    return done


def format_row(row: Mapping[str, Any], fmt: str) -> str:
    """One output row as a JSON line or a CSV line (with its newline; the shared CSV writer of
    :mod:`langclass.app.usecases.export_csv`)."""
    if fmt == "jsonl":
        return json.dumps({c: row.get(c) for c in COLUMNS}, ensure_ascii=False) + "\n"
    return _csv_row(row)


def csv_header() -> str:
    return _csv_header()


def _check_csv_header(path: Path) -> None:
    """An existing CSV output must have today's columns (a rerun appends to it).

    Raises:
        InputError: its header names other columns."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open(encoding="utf-8", newline="") as fh:
        header = next(csv.reader(fh), None)
    if header is not None and tuple(header) != COLUMNS:
        raise InputError(f"{path.name} was written with other columns ({len(header)}, not {len(COLUMNS)}); "
                         "write to a new file", field="output")


def _worker_init(parent_pid: int) -> None:
    """Initializer of the batch's worker processes: die with the batch, even if it is killed."""
    import signal

    from langclass.app.execution.lifeline import die_with_parent

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent(parent_pid, pdeathsig=True)


def run_batch(source: Path, output: Path, *, limits: Limits, jobs: int = 1,
              on_row: Callable[[dict[str, Any]], None] | None = None,
              on_total: Callable[[int, int], None] | None = None) -> dict[str, int]:
    """Classify every row of ``source`` not yet in ``output`` and append the rows to ``output``.

    Args:
        source: ``.jsonl`` or ``.csv`` input (see the module docstring).
        output: ``.jsonl`` or ``.csv`` output; appended to (resumed) when it exists.
        limits: the limits each language is classified under.
        jobs: worker processes (1: in this process).
        on_row: called with each finished row (progress).
        on_total: called once with (rows to do, rows skipped).

    Returns:
        ``{"done", "skipped", "errors"}``.

    Raises:
        InputError: bad suffix or CSV header; an output of another format than its suffix says.
    """
    fmt = output.suffix.lower().lstrip(".")
    if fmt not in ("jsonl", "csv"):
        raise InputError(f"batch output must end in .jsonl or .csv, not {output.name!r}", field="output")
    if fmt == "csv":
        _check_csv_header(output)
    skip = done_rows(output)
    todo = [(i, r) for i, r in read_rows(source) if i not in skip]
    if on_total:
        on_total(len(todo), len(skip))
    counts = {"done": 0, "skipped": len(skip), "errors": 0}
    new_file = not output.exists() or output.stat().st_size == 0
    with output.open("a", encoding="utf-8", newline="") as out:
        if new_file and fmt == "csv":
            out.write(csv_header())
            out.flush()

        def emit(row: dict[str, Any]) -> None:
            out.write(format_row(row, fmt))
            out.flush()
            counts["done"] += 1
            counts["errors"] += row["status"] != "ok"
            if on_row:
                on_row(row)

        def row_of(i: int, r: Any) -> dict[str, Any]:
            return _error_row(i, None, r.to_dict()) if isinstance(r, LangclassError) else classify_row(i, r, limits)

        if jobs <= 1:
            for i, r in todo:
                emit(row_of(i, r))
            return counts
        # rows go out in input order: futures wait in submission order and the oldest is written
        # first; at most 4·jobs rows are in flight (finished ones wait behind a slower earlier row)
        # the workers die with this process (a `kill -9` of the batch left them orphaned)
        with ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init, initargs=(os.getpid(),)) as pool:
            window: deque[Future | dict[str, Any]] = deque()

            def write_head() -> None:
                head = window.popleft()
                emit(head.result() if isinstance(head, Future) else head)

            try:
                for i, r in todo:
                    window.append(_error_row(i, None, r.to_dict()) if isinstance(r, LangclassError)
                                  else pool.submit(classify_row, i, r, limits))
                    while window and (len(window) >= 4 * jobs or not isinstance(window[0], Future) or window[0].done()):
                        write_head()
                while window:
                    write_head()
            except BaseException:
                for f in window:
                    if isinstance(f, Future):
                        f.cancel()
                raise
    return counts
