"""The one CSV writer of classified languages: ``GET /v1/languages?format=csv`` and ``classify --batch -o out.csv``.

Both exports carry the same columns (:data:`CSV_COLUMNS`) and cells, so a file written by one reads
like the other:

* lists (``alphabet``, ``tags``) are JSON arrays — a symbol or tag may hold spaces, ``;`` or commas;
* ``source`` is the regex or formula as given, or the DFA as compact JSON;
* booleans are ``true``/``false``, an undecided class or a missing value is empty;
* every cell that a spreadsheet would read as a formula — one starting with ``=``, ``+``, ``-``,
  ``@``, a tab, CR or LF — is prefixed with a single quote (OWASP, "CSV Injection"), and rows are
  written by :mod:`csv` with CRLF line ends (RFC 4180), so a cell holding a bare CR or LF is quoted
  and never starts a new row.

Batch-only columns (``row``, ``status``, ``error_*``) are empty in the API export, ``created_at`` in
the batch's.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langclass.core.algebra.lattice import CLASS_KEYS

__all__ = ["CSV_COLUMNS", "FORMULA_PREFIXES", "csv_cell", "neutralize", "csv_header", "csv_row", "csv_rows", "export_row"]

CSV_COLUMNS: tuple[str, ...] = (
    "row", "status", "id", "name", "tags", "kind", "source", "alphabet", "num_states", "monoid_size",
    *CLASS_KEYS, "period", "period_y_mod", "soft_encoding", "hard_encoding", "created_at", "error_code", "error_field",
    "error_detail",
)
"""The columns of both CSV exports, in order."""

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\n")
"""First characters that make a spreadsheet read a cell as a formula (OWASP "CSV Injection")."""


def neutralize(text: str) -> str:
    """``text`` with a single quote in front when it starts with one of :data:`FORMULA_PREFIXES`.

    >>> neutralize("=HYPERLINK(1)"), neutralize("(ab)*"), neutralize("")
    ("'=HYPERLINK(1)", '(ab)*', '')
    """
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def csv_cell(value: Any) -> str:
    """One cell: empty for None, ``true``/``false``, JSON for lists and objects, else ``str`` —
    then :func:`neutralize`\\d."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, dict)):
        return neutralize(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return neutralize(str(value))


def _line(cells: Iterable[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerow(list(cells))
    return buf.getvalue()


def csv_header() -> str:
    """The header line (with its CRLF)."""
    return _line(CSV_COLUMNS)


def csv_row(row: Mapping[str, Any]) -> str:
    """One line (with its CRLF) of a row keyed by :data:`CSV_COLUMNS` (missing keys are empty)."""
    return _line(csv_cell(row.get(c)) for c in CSV_COLUMNS)


def csv_rows(rows: Iterable[Mapping[str, Any]]) -> str:
    """Header and rows as one CSV text."""
    return csv_header() + "".join(csv_row(r) for r in rows)


def csv_table(fields: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    """``fields`` as the header, then one line per row (its cells neutralized by :func:`csv_cell`;
    every field must be a key), CRLF line ends: the sweep's and the suite's ``.csv``."""
    return _line(fields) + "".join(_line(csv_cell(row[f]) for f in fields) for row in rows)


def source_text(source: Mapping[str, Any] | None) -> str | None:
    """The ``source`` cell of an input record: the regex or formula, or the DFA as compact JSON."""
    if not isinstance(source, Mapping):
        return None
    for k in ("regex", "formula"):
        if isinstance(source.get(k), str):
            return source[k]
    if source.get("dfa") is not None:
        return json.dumps(source["dfa"], ensure_ascii=False, separators=(",", ":"))
    return None


def export_row(*, source: Mapping[str, Any] | None, analysis: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    """A row of :data:`CSV_COLUMNS` from an input record and an analysis record (``Analysis.to_dict()``
    or a stored one): kind, source, the class answers, the LTL[P,MOD] and LTL[P,Y,MOD] periods and the encodings;
    ``fields`` (id, name, tags, alphabet, num_states, monoid_size, row, status, created_at …) as given."""
    classes = analysis.get("classes") if isinstance(analysis, Mapping) else None
    classes = classes if isinstance(classes, Mapping) else {}
    enc = analysis.get("encodings") if isinstance(analysis, Mapping) else None
    enc = enc if isinstance(enc, Mapping) else {}
    out: dict[str, Any] = {
        "kind": source.get("kind") if isinstance(source, Mapping) else None,
        "source": source_text(source),
        "period": (classes.get("ltl_p_mod") or {}).get("period") if isinstance(classes.get("ltl_p_mod"), Mapping) else None,
        "period_y_mod": ((classes.get("ltl_p_y_mod") or {}).get("period")
                         if isinstance(classes.get("ltl_p_y_mod"), Mapping) else None),
        "soft_encoding": (enc.get("soft") or {}).get("encoding") if isinstance(enc.get("soft"), Mapping) else None,
        "hard_encoding": (enc.get("hard") or {}).get("encoding") if isinstance(enc.get("hard"), Mapping) else None,
    }
    for key in CLASS_KEYS:
        c = classes.get(key)
        out[key] = c.get("member") if isinstance(c, Mapping) else None
    out.update(fields)
    return out
