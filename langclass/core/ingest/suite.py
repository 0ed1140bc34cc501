"""Published language suites shipped as data: the languages, their labels and their measured outcome.

One suite so far, ``state-tracking-crasp``: the 125 languages of the main language suite of the
public repository ``bveseli/state-tracking-crasp`` (*Algebraic Decomposition Theory for Transformer
Length Generalization*), read from ``langclass/data/suites/state_tracking_crasp.csv`` (facts only;
its README there names the commit and every column). Each row gives a regex, its published class
labels (``R``, ``CRasp``, ``Rinf``, ``R_G``), the selected GPT-2 configuration (``config``) and that
configuration's accuracy on the training bin (lengths ≤ 50) and on the longest test bin (451-500).

The regex is read by the project's parser (:func:`langclass.core.ingest.parse.parse_regex`, the
syntax of docs/regex.md, which the suite's regexes already use: ``|`` union, ``+`` one-or-more) over
the letters it uses, sorted (:func:`suite_alphabet`; the suite's datasets use exactly these symbols).
This is the one place the suite's regexes are translated; ``bench/crasp_agreement.py`` uses it too.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LangclassError

__all__ = ["SUITES", "SUITE_LABELS", "SuiteLanguage", "suite_alphabet", "load_suite", "suite_source", "parse_suite_text"]

SUITES: dict[str, dict[str, str]] = {
    "state-tracking-crasp": {
        "file": "state_tracking_crasp.csv",
        "repository": "https://github.com/bveseli/state-tracking-crasp",
        "commit": "903fba2f2a4d0ded811a6247155d38480ed4a381",
        "table": "main_language_suite.csv",
        "paper": "Algebraic Decomposition Theory for Transformer Length Generalization",
        "task": "state prediction (the DFA state after every symbol), trained on lengths up to 50, tested up to 500",
    },
}
"""Suite name → its data file (in ``langclass/data/suites``) and its source."""

SUITE_LABELS: tuple[str, ...] = ("R", "CRasp", "Rinf", "R_G")
"""The published class labels of ``state-tracking-crasp`` (booleans)."""

_COLUMNS = ("name", "source", "regex", "config", *SUITE_LABELS, "train_bin_acc", "longest_bin", "longest_bin_acc", "perfect_upto")


@dataclass(frozen=True)
class SuiteLanguage:
    """One language of a published suite.

    Attributes:
        name: the suite's name of the language (e.g. ``"1"``, ``"parity"``).
        regex: the regex as published.
        alphabet: the letters the regex uses, sorted.
        labels: ``{R, CRasp, Rinf, R_G}`` → bool, as published.
        config: the published selected configuration (``<layers>l<heads>h<width>d[smalllr]``).
        outcome: ``{train_bin_acc, longest_bin, longest_bin_acc, perfect_upto, generalized}`` — the
            accuracies of that configuration's run (floats in [0, 1]; None when it has none), the upper
            end of the last all-perfect bin (a length), and ``generalized``: accuracy 1.0 on the longest
            bin (None when no run was selected).
        row: the 1-based data row (for messages).
        source: ``"lower"`` (a sampled regex) or ``"canonical"`` (a named language).
    """

    name: str
    regex: str
    alphabet: tuple[str, ...]
    labels: dict[str, bool]
    config: str
    outcome: dict[str, Any]
    row: int
    source: str = ""
    _dfa: list[DFA] = field(default_factory=list, repr=False, compare=False)

    def dfa(self) -> DFA:
        """The canonical minimal DFA of :attr:`regex` over :attr:`alphabet` (cached).

        Raises:
            InputError: the regex does not parse (``field="suite"``, naming the row and language).
        """
        if not self._dfa:
            from langclass.core.ingest.parse import parse_regex

            try:
                self._dfa.append(parse_regex(self.regex, list(self.alphabet)))
            except LangclassError as err:
                raise InputError(f"suite row {self.row} ({self.name!r}): regex {self.regex!r} does not parse: {err.detail}",
                                 field="suite") from None
        return self._dfa[0]


def suite_alphabet(regex: str) -> tuple[str, ...]:
    """The letters (``str.isalpha``) ``regex`` uses, sorted; ``("a",)`` when it uses none."""
    return tuple(sorted({ch for ch in regex if ch.isalpha()})) or ("a",)


def _bool(v: str, row: int, name: str, col: str) -> bool:
    if v.strip() in ("True", "False"):
        return v.strip() == "True"
    raise InputError(f"suite row {row} ({name!r}): column {col} must be True or False, not {v!r}", field="suite")


def _acc(v: str, row: int, name: str, col: str) -> float | None:
    if not v.strip():
        return None
    try:
        x = float(v)
    except ValueError:
        x = -1.0
    if not 0.0 <= x <= 1.0:
        raise InputError(f"suite row {row} ({name!r}): column {col} must be an accuracy in [0, 1], not {v!r}", field="suite")
    return x


def parse_suite_text(text: str) -> list[SuiteLanguage]:
    """The languages of a suite file's text (``#`` lines are comments; a header row with the columns
    of ``state_tracking_crasp.csv``).

    Raises:
        InputError: a missing column, a duplicate name, a malformed value (``field="suite"``, naming
            the row and language). Regexes are parsed lazily (:meth:`SuiteLanguage.dfa`).
    """
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    missing = [c for c in _COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"suite file lacks the columns {', '.join(missing)}", field="suite")
    out: list[SuiteLanguage] = []
    seen: set[str] = set()
    for i, r in enumerate(reader, start=1):
        name = (r["name"] or "").strip()
        if not name or name in seen:
            raise InputError(f"suite row {i}: {'empty' if not name else 'duplicate'} name {name!r}", field="suite")
        seen.add(name)
        regex = (r["regex"] or "").strip()
        if not regex:
            raise InputError(f"suite row {i} ({name!r}): empty regex", field="suite")
        labels = {k: _bool(r[k] or "", i, name, k) for k in SUITE_LABELS}
        longest = _acc(r["longest_bin_acc"] or "", i, name, "longest_bin_acc")
        upto = (r["perfect_upto"] or "").strip()
        if upto and not upto.isdigit():
            raise InputError(f"suite row {i} ({name!r}): perfect_upto must be a length, not {upto!r}", field="suite")
        outcome = {"train_bin_acc": _acc(r["train_bin_acc"] or "", i, name, "train_bin_acc"),
                   "longest_bin": (r["longest_bin"] or "").strip() or None, "longest_bin_acc": longest,
                   "perfect_upto": int(upto) if upto else None, "generalized": None if longest is None else longest == 1.0}
        out.append(SuiteLanguage(name=name, regex=regex, alphabet=suite_alphabet(regex), labels=labels,
                                 config=(r["config"] or "").strip(), outcome=outcome, row=i, source=(r["source"] or "").strip()))
    return out


def suite_source(name: str) -> dict[str, str]:
    """The source of suite ``name``: ``{file, repository, commit, table, paper, task}``.

    Raises:
        InputError: unknown suite (``field="suite"``).
    """
    if name not in SUITES:
        raise InputError(f"unknown suite {name!r}; expected one of {', '.join(SUITES)}", field="suite")
    return dict(SUITES[name])


def load_suite(name: str) -> list[SuiteLanguage]:
    """The languages of the shipped suite ``name``, in the file's order.

    Raises:
        InputError: unknown suite, or a malformed row (``field="suite"``).
    """
    src = suite_source(name)
    text = resources.files("langclass").joinpath("data", "suites", src["file"]).read_text(encoding="utf-8")
    return parse_suite_text(text)
