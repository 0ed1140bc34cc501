"""The published suite side by side: per language their labels and outcome, our classes, prediction and N*.

A row (:func:`suite_row`) joins one language of a published suite
(:class:`langclass.core.ingest.suite.SuiteLanguage`: their labels ``R``, ``CRasp``, ``Rinf``, ``R_G``,
their selected configuration and whether it length-generalized, i.e. accuracy 1.0 on the 451-500
bin) with the product's classes (:data:`ROW_CLASSES` of :func:`langclass.core.classification.analysis.analyze`),
the product's causal prediction — a causal NoPE transformer length-generalizes iff the language is in
C-RASP (the ``causal`` encoding answer of docs/crasp.md §7: C-RASP compiles to NoPE softmax transformers
with non-strict causal masking, *Counting Like Transformers*; C-RASP programs length-generalize under
idealized inference, *A Formal Framework for Understanding Length Generalization in Transformers*)
— and the N* the sweep measured per encoding (the longest test length up to which
every tested length is perfect). :func:`agreement` counts three agreements:

* ``crasp_vs_label``: the product's ``crasp`` membership vs their ``CRasp`` label;
* ``prediction_vs_their_outcome``: the product's prediction vs their outcome (generalized or not);
  with the state-prediction task the prediction is the train job's for that task (NoPE iff every
  state's prefix language is in C-RASP);
* ``prediction_vs_measured``: the product's prediction vs our measured outcome (NoPE's N* equal to
  the longest tested length).

A language whose two sides are not both known (undecided class, no selected run, no record) is
counted in ``unknown``, never as agreement. Pure data: no torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ROW_CLASSES", "PREDICTED_ENCODING", "suite_row", "agreement", "markdown_suite", "SUITE_CSV_FIELDS", "suite_csv_rows"]

ROW_CLASSES: tuple[str, ...] = ("crasp", "ltl_p", "ltl_p_y", "ltl_p_mod", "star_free", "fo_mod")
"""The product's classes each row shows (keys of ``analysis["classes"]``)."""

PREDICTED_ENCODING = "nope"
"""The encoding the causal prediction is about (NoPE sufficient iff the language is in C-RASP)."""


def _member(analysis: Mapping[str, Any], key: str) -> bool | None:
    c = (analysis.get("classes") or {}).get(key)
    if isinstance(c, Mapping):
        c = c.get("member")
    return c if isinstance(c, bool) else None


_UNSET: Any = object()


def suite_row(lang: Any, analysis: Mapping[str, Any], record: Mapping[str, Any] | None, *,
              predicted: bool | None = _UNSET) -> dict[str, Any]:
    """One language's row.

    Args:
        lang: the :class:`~langclass.core.ingest.suite.SuiteLanguage`.
        analysis: ``analyze(dfa).to_dict()`` of its canonical DFA.
        record: its sweep record (:func:`langclass.models.experiments.sweep.language_record`), None when
            it was not trained.
        predicted: the product's NoPE prediction when it is not the ``crasp`` class (the
            state-prediction task: every state's prefix language in C-RASP); default the class.

    Returns:
        ``{name, regex, alphabet, fingerprint, states, their: {R, CRasp, Rinf, R_G, config,
        longest_bin_acc, perfect_upto, generalized}, classes: {key: bool | None}, predicted_nope: bool |
        None, setting, task, longest_tested_length, n_star: {encoding: int}, reached: {encoding: bool},
        measured_nope: bool | None}``.
    """
    classes = {k: _member(analysis, k) for k in ROW_CLASSES}
    n_star: dict[str, int] = {}
    reached: dict[str, bool] = {}
    longest = None
    setting = task = None
    if record is not None:
        longest = record.get("longest_tested_length")
        setting = record.get("setting") or (record.get("spec") or {}).get("setting") or "strict"
        task = record.get("task") or (record.get("spec") or {}).get("task") or "recognition"
        for enc, e in (record.get("encodings") or {}).items():
            n_star[enc] = int(e["longest_perfect_length"])
            reached[enc] = bool(e.get("reached_longest"))
    return {"name": lang.name, "regex": lang.regex, "alphabet": "".join(lang.alphabet), "source": lang.source,
            "fingerprint": analysis.get("fingerprint"), "states": analysis.get("num_states"),
            "their": {**lang.labels, "config": lang.config, "longest_bin_acc": lang.outcome.get("longest_bin_acc"),
                      "perfect_upto": lang.outcome.get("perfect_upto"), "generalized": lang.outcome.get("generalized")},
            "classes": classes, "predicted_nope": classes["crasp"] if predicted is _UNSET else predicted, "setting": setting, "task": task, "longest_tested_length": longest,
            "n_star": n_star, "reached": reached, "measured_nope": reached.get(PREDICTED_ENCODING) if record is not None else None}


def _rate(pairs: Sequence[tuple[bool | None, bool | None]]) -> dict[str, Any]:
    known = [(a, b) for a, b in pairs if a is not None and b is not None]
    agree = sum(a == b for a, b in known)
    both = sum(a and b for a, b in known)
    return {"agree": agree, "compared": len(known), "unknown": len(pairs) - len(known),
            "rate": agree / len(known) if known else None,
            # the 2 × 2 table (first side, second side) → count
            "table": {f"{a}/{b}": sum(1 for x, y in known if x is a and y is b) for a in (True, False) for b in (True, False)},
            "both_true": both}


def agreement(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The three agreement counts of the module docstring over ``rows`` (:func:`suite_row`).

    Returns:
        ``{crasp_vs_label, prediction_vs_their_outcome, prediction_vs_measured}``, each ``{agree,
        compared, unknown, rate (agree / compared, None when nothing compared), table: {"A/B": count}
        (A the product's side, B the other), both_true}``.
    """
    return {
        "crasp_vs_label": _rate([(r["classes"]["crasp"], r["their"]["CRasp"]) for r in rows]),
        "prediction_vs_their_outcome": _rate([(r["predicted_nope"], r["their"]["generalized"]) for r in rows]),
        "prediction_vs_measured": _rate([(r["predicted_nope"], r["measured_nope"]) for r in rows]),
    }


AGREEMENT_NAMES = {
    "crasp_vs_label": "product's crasp class vs their CRasp label",
    "prediction_vs_their_outcome": "product's prediction (NoPE iff C-RASP) vs their outcome (accuracy 1.0 at 451-500)",
    "prediction_vs_measured": "product's prediction (NoPE iff C-RASP) vs our measured NoPE outcome (N* = longest tested)",
}


def agreement_lines(agg: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per agreement: ``name: agree/compared (rate %), unknown n``."""
    out = []
    for k, name in AGREEMENT_NAMES.items():
        a = agg[k]
        pct = "–" if a["rate"] is None else f"{100 * a['rate']:.1f} %"
        out.append(f"{name}: {a['agree']}/{a['compared']} ({pct}), {a['unknown']} unknown")
    return out


def _b(v: Any) -> str:
    return "–" if v is None else ("yes" if v is True else "no" if v is False else str(v))


def markdown_suite(rows: Sequence[Mapping[str, Any]], agg: Mapping[str, Mapping[str, Any]], encodings: Sequence[str]) -> str:
    """``suite.md``: the agreement lines, then one table row per language (their labels and outcome,
    the product's classes and prediction, N* per encoding)."""
    head = (["language", "regex", "R", "CRasp", "Rinf", "R_G", "config", "their acc 451-500", "their LG"]
            + list(ROW_CLASSES) + ["predicted NoPE"] + [f"N* {e}" for e in encodings] + ["tested to"])
    md = ["## Agreement", ""] + [f"- {ln}" for ln in agreement_lines(agg)] + ["", "## Languages", "",
                                                                            "| " + " | ".join(head) + " |",
                                                                            "|" + "---|" * len(head)]
    for r in rows:
        t = r["their"]
        cells = ([r["name"], f"`{r['regex']}`", _b(t["R"]), _b(t["CRasp"]), _b(t["Rinf"]), _b(t["R_G"]), t["config"],
                  _b(t["longest_bin_acc"]), _b(t["generalized"])] + [_b(r["classes"][k]) for k in ROW_CLASSES]
                 + [_b(r["predicted_nope"])] + [_b(r["n_star"].get(e)) for e in encodings] + [_b(r["longest_tested_length"])])
        md.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(md) + "\n"


SUITE_CSV_FIELDS: tuple[str, ...] = ("name", "regex", "alphabet", "R", "CRasp", "Rinf", "R_G", "config", "their_longest_bin_acc",
                                     "their_generalized", *ROW_CLASSES, "predicted_nope", "setting", "task", "longest_tested_length",
                                     "encoding", "n_star", "reached")
"""``suite.csv``: one row per language × encoding (a language without a record: one row, encoding empty)."""


def suite_csv_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows of ``suite.csv`` (:data:`SUITE_CSV_FIELDS`)."""
    out = []
    for r in rows:
        t = r["their"]
        base = {"name": r["name"], "regex": r["regex"], "alphabet": r["alphabet"], **{k: t[k] for k in ("R", "CRasp", "Rinf", "R_G", "config")},
                "their_longest_bin_acc": t["longest_bin_acc"], "their_generalized": t["generalized"],
                **{k: r["classes"][k] for k in ROW_CLASSES}, "predicted_nope": r["predicted_nope"], "setting": r["setting"], "task": r["task"],
                "longest_tested_length": r["longest_tested_length"]}
        encs = list(r["n_star"]) or [None]
        for e in encs:
            out.append({**base, "encoding": e or "", "n_star": r["n_star"].get(e) if e else None,
                        "reached": r["reached"].get(e) if e else None})
    return out
