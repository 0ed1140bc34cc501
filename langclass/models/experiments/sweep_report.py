"""What a sweep found: per cell × encoding the share of languages whose N* reaches the longest tested
length, and the runs that contradict the prediction (:mod:`langclass.models.experiments.sweep`).

A language record (one per sampled language, as :func:`langclass.models.experiments.sweep.language_record`
writes it)::

    {"cell", "fingerprint", "dfa": canonical DFA JSON, "profile": {class_key: bool|None},
     "longest_tested_length", "length_generalization_tested": bool,
     "encodings": {family name: {"label", "encoding_name", "predicted_sufficient": bool|None, "reason",
                           "longest_perfect_length": best N* over the grid, "accuracy": best mean
                           test accuracy, "reached_longest": some run reached N* = longest, "runs"}}}

Contradictions (*Disentangling the Expressivity of RoPE*, §2.2, Thm 3.1/3.2, Cor. 4.1 give the
predictions; App. E the protocol — the best run of the grid counts):

* ``"training_failure"``: predicted sufficient, no run reached the longest tested length. The theorem
  guarantees a parameterization, not that optimization finds it — informative, not a refutation.
* ``"beyond_prediction"``: predicted insufficient where the theory says no length-independent
  recognizer exists with this encoding — the families with an exact characterization
  (:data:`EXACT_FAMILIES`: NoPE recognizes exactly LTL[P], periodic RoPE / periodic sinusoidal PE
  exactly LTL[P,MOD] with a period the language's divides) — yet a run was perfect up to the longest
  tested length. This holds only up to the tested lengths: the impossibility is about every length.
  An encoding without a length-independent guarantee (conventional RoPE, sinusoidal, ALiBi: Cor. 4.1)
  is never predicted sufficient and never contradicts: its numbers are measured
  (:func:`prediction_kind` ``"no_guarantee"``).

In the causal setting (records with ``"setting": "causal"``) the only prediction is NoPE on C-RASP
(*Counting Like Transformers*; *A Formal Framework for Understanding Length Generalization in
Transformers*), an upper bound with no exact converse the product relies on, so no encoding is
:data:`EXACT_FAMILIES` there: a perfect run of an unpredicted encoding is measured, never a
contradiction; a predicted NoPE run that fails is a ``training_failure``.

Languages whose test lengths never exceed the training lengths with both classes present
(``length_generalization_tested`` false) are counted as not tested and are neither in the shares nor
in the contradictions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["EXACT_FAMILIES", "prediction_kind", "aggregate", "contradictions", "markdown_table", "csv_records", "CSV_FIELDS"]


EXACT_FAMILIES: tuple[str, ...] = ("nope", "rope_periodic", "sinusoidal_periodic")
"""Encoding families whose soft-attention class is known exactly (*Disentangling the Expressivity of RoPE*,
§2.2 and Thm 3.1/3.2), so "not predicted sufficient" means "cannot recognize at every length"."""


def prediction_kind(encoding_name: str, predicted_sufficient: bool | None, setting: str = "strict") -> str:
    """``"sufficient"``, ``"impossible"`` (an :data:`EXACT_FAMILIES` encoding predicted insufficient,
    strict setting only), ``"no_guarantee"`` (another encoding, or any in the causal setting: no
    length-independent claim) or ``"undecided"``."""
    if predicted_sufficient is None:
        return "undecided"
    if predicted_sufficient:
        return "sufficient"
    return "impossible" if encoding_name in EXACT_FAMILIES and setting == "strict" else "no_guarantee"


def _tested(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in records if r.get("length_generalization_tested")]


def aggregate(records: Sequence[Mapping[str, Any]], cells: Sequence[str], encodings: Sequence[str]) -> dict[str, Any]:
    """Per cell × encoding: ``{"languages": n tested, "reached": k, "share": k / n (None when n = 0),
    "predicted": languages where the encoding is predicted sufficient, "predicted_majority": bool}``,
    plus per cell ``"not_tested"``.

    ``predicted_majority`` marks the square when the encoding is predicted sufficient for more than
    half of the cell's tested languages (within a cell the prediction is the same for every language,
    except the periodic encodings whose periods must be a multiple of the language's period).
    """
    out: dict[str, Any] = {"cells": {}}
    for cell in cells:
        rows = [r for r in records if r["cell"] == cell]
        tested = _tested(rows)
        per: dict[str, Any] = {}
        for enc in encodings:
            have = [r for r in tested if enc in r["encodings"]]
            reached = sum(1 for r in have if r["encodings"][enc]["reached_longest"])
            predicted = sum(1 for r in have if r["encodings"][enc]["predicted_sufficient"] is True)
            per[enc] = {"languages": len(have), "reached": reached, "share": reached / len(have) if have else None,
                        "predicted": predicted, "predicted_majority": bool(have) and 2 * predicted > len(have)}
        out["cells"][cell] = {"languages": len(rows), "tested": len(tested), "not_tested": len(rows) - len(tested), "encodings": per}
    return out


def contradictions(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every (language, encoding) that contradicts the prediction, in record order (see the module doc)."""
    out = []
    for r in _tested(records):
        for enc, e in r["encodings"].items():
            pred, reached = prediction_kind(e["encoding_name"], e["predicted_sufficient"], r.get("setting", "strict")), e["reached_longest"]
            kind = None
            if pred == "sufficient" and not reached:
                kind = "training_failure"
                note = "predicted sufficient but no run reached the longest tested length (optimization, not expressivity)"
            elif pred == "impossible" and reached:
                kind = "beyond_prediction"
                note = (f"predicted insufficient, yet perfect up to the longest tested length {r['longest_tested_length']}; "
                        "holds only up to the tested lengths")
            if kind:
                out.append({"kind": kind, "setting": r.get("setting", "strict"), "cell": r["cell"], "fingerprint": r["fingerprint"], "dfa": r["dfa"], "encoding": enc,
                            "label": e.get("label", enc),
                            "longest_perfect_length": e["longest_perfect_length"], "longest_tested_length": r["longest_tested_length"],
                            "accuracy": e["accuracy"], "reason": e.get("reason"), "note": note})
    return out


def markdown_table(agg: Mapping[str, Any], cell_names: Mapping[str, str], encodings: Sequence[str], setting: str = "strict") -> str:
    """Cells × encodings, each square ``k/n`` languages reaching the longest tested length (share in
    percent); ``*`` marks an encoding predicted sufficient for the cell (see :func:`aggregate`);
    ``setting`` names the training setting in the footnote."""
    head = "| cell | tested | " + " | ".join(encodings) + " |"
    lines = [head, "|" + "---|" * (len(encodings) + 2)]
    for cell, c in agg["cells"].items():
        squares = []
        for enc in encodings:
            s = c["encodings"][enc]
            if not s["languages"]:
                squares.append("–")
                continue
            star = "*" if s["predicted_majority"] else ""
            squares.append(f"{s['reached']}/{s['languages']} ({100 * s['share']:.0f}%){star}")
        nt = f" (+{c['not_tested']} not tested)" if c["not_tested"] else ""
        lines.append(f"| {cell_names.get(cell, cell)} | {c['tested']}{nt} | " + " | ".join(squares) + " |")
    lines.append("")
    what = ("causal setting: non-strict mask, BOS w, readout at the last position" if setting == "causal"
            else "strict setting: soft attention, recency heads or unique hard attention, as the encoding names")
    lines.append(f"k/n: languages of the cell whose best run has N* = the longest tested length; * = predicted sufficient ({what}).")
    return "\n".join(lines)


CSV_FIELDS = ("setting", "cell", "fingerprint", "dfa", "encoding", "label", "predicted_sufficient", "prediction", "longest_perfect_length",
              "longest_tested_length", "reached_longest", "accuracy", "length_generalization_tested", "runs")
"""Columns of the per language × encoding CSV."""


def csv_records(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (language, encoding) with :data:`CSV_FIELDS` (``dfa`` as canonical DFA JSON)."""
    import json

    rows = []
    for r in records:
        for enc, e in r["encodings"].items():
            rows.append({"setting": r.get("setting", "strict"), "cell": r["cell"], "fingerprint": r["fingerprint"], "dfa": json.dumps(r["dfa"], separators=(",", ":")),
                         "encoding": enc, "label": e.get("label", enc), "predicted_sufficient": e["predicted_sufficient"],
                         "prediction": prediction_kind(e["encoding_name"], e["predicted_sufficient"], r.get("setting", "strict")),
                         "longest_perfect_length": e["longest_perfect_length"], "longest_tested_length": r["longest_tested_length"],
                         "reached_longest": e["reached_longest"], "accuracy": e["accuracy"],
                         "length_generalization_tested": r["length_generalization_tested"], "runs": e["runs"]})
    return rows
