"""Reading an experiment's runs: the summary per encoding, the verdict against the prediction, and
the plain-text table of :func:`~langclass.models.experiments.experiment.run_experiment`'s result.

The verdict follows *Disentangling the Expressivity of RoPE* (§3.5, App. E, Table 2): an encoding
predicted sufficient is ``confirmed`` when the best run of its grid reaches N* = the longest tested
length, and only on test lengths beyond every training length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from langclass.models.training.evaluate import describe

__all__ = ["GridEncoding", "summarize", "verdict", "describe_lengths", "format_results"]


@dataclass(frozen=True)
class GridEncoding:
    """One encoding of the run grid: its label in the result, family name and parameters."""

    label: str
    name: str
    params: dict[str, Any]


def verdict(summary: Mapping[str, Any], encodings: list[GridEncoding], prediction: Mapping[str, Any] | None, longest: int,
             test_lengths: Sequence[int] = (), train_longest: int | None = None,
             two_class_lengths: Sequence[int] | None = None) -> dict[str, Any]:
    """The verdict per encoding: prediction against measurement.

    A length-generalization verdict rests on test lengths longer than every training length
    (*Disentangling the Expressivity of RoPE*, App. E: train on 1–40, test beyond). When no test
    length exceeds ``train_longest``, nothing was tested beyond training and every encoding with runs
    gets ``status: "not_tested"`` with the reason — never ``confirmed`` or ``not_confirmed``. The
    same holds when ``two_class_lengths`` (the test lengths at which the language has both a word
    and a non-word) is given and none of them exceeds ``train_longest``: every unseen test string
    then has the same label, and a constant answer would score N* = the longest tested length.

    Statuses: ``confirmed`` / ``not_confirmed`` (predicted sufficient: some run / no run reached N* =
    the longest tested length), ``measured`` (no prediction), ``not_tested``, ``not_run``.
    """
    suff = set((prediction or {}).get("sufficient", []))
    unseen = [n for n in test_lengths if train_longest is None or n > train_longest]
    tested = bool(unseen) if test_lengths else True
    informative = None if two_class_lengths is None else [n for n in two_class_lengths if train_longest is None or n > train_longest]
    one_class = tested and informative is not None and not informative  # unseen lengths exist, all of one class
    per: dict[str, Any] = {}
    lines = []
    for e in encodings:
        s = summary[e.label]
        best = s["longest_perfect_length"]["max"]
        reached = s["reached_longest"]
        predicted = e.name in suff or e.label in suff
        if not s["runs"]:
            per[e.label] = {"predicted_sufficient": predicted, "status": "not_run", "best_longest_perfect_length": None, "runs_reaching_longest": 0, "text": f"{e.label}: no finished run"}
            lines.append(per[e.label]["text"])
            continue
        if not tested:
            text = (f"{e.label}: not tested — no test length exceeds the longest training length {train_longest} "
                    f"(tested {test_lengths[0]}–{test_lengths[-1]}), so length generalization was not measured; "
                    f"best N* = {int(best)} within the training range")
            per[e.label] = {"predicted_sufficient": predicted, "status": "not_tested", "best_longest_perfect_length": best,
                            "runs_reaching_longest": reached, "text": text,
                            "reason": f"no test length exceeds the longest training length {train_longest}"}
            lines.append(text)
            continue
        if one_class:
            text = (f"{e.label}: not tested — at no unseen test length ({unseen[0]}–{unseen[-1]}) does the language have both "
                    f"a word and a non-word, so a constant answer is perfect there; best N* = {int(best)} says nothing about "
                    f"length generalization")
            per[e.label] = {"predicted_sufficient": predicted, "status": "not_tested", "best_longest_perfect_length": best,
                            "runs_reaching_longest": reached, "text": text,
                            "reason": "every unseen test length has strings of one class only"}
            lines.append(text)
            continue
        if predicted:
            status = "confirmed" if reached > 0 else "not_confirmed"
            text = (
                f"{e.label}: predicted sufficient; {reached}/{s['runs']} runs reached N* = {longest} (the longest tested length)"
                + ("" if reached else f"; best N* = {int(best)} — training did not find the construction the theorem guarantees")
            )
        else:
            status = "measured"
            text = f"{e.label}: best N* = {int(best)}, max accuracy {s['accuracy']['max']:.3f} ({reached}/{s['runs']} runs reached {longest})"
        per[e.label] = {"predicted_sufficient": predicted, "status": status, "best_longest_perfect_length": best, "runs_reaching_longest": reached, "text": text}
        lines.append(text)
    return {"prediction": dict(prediction) if prediction else None, "longest_tested_length": longest,
            "longest_training_length": train_longest, "unseen_test_lengths": len(unseen),
            "length_generalization_tested": tested and not one_class,
            "unseen_two_class_lengths": None if informative is None else len(informative),
            "per_encoding": per, "text": "\n".join(lines)}


def summarize(runs: list[dict[str, Any]], encodings: list[GridEncoding]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for e in encodings:
        rs = [r for r in runs if r["encoding"] == e.label]
        out[e.label] = {
            "encoding_name": e.name,
            "encoding_params": e.params,
            "runs": len(rs),
            "accuracy": describe([r["accuracy"] for r in rs]),
            "longest_perfect_length": describe([r["longest_perfect_length"] for r in rs]),
            "steps": describe([r["steps"] for r in rs]),
            "reached_longest": sum(1 for r in rs if r["reached_longest"]),
        }
    return out


def describe_lengths(lengths: Sequence[int], *, span: bool = False) -> str:
    """Lengths in the CLI's notation: ``41..60`` for a run of consecutive lengths (or, with ``span``,
    for the range from the first to the last), ``21,40`` for separate ones (``…`` past eight)."""
    if not lengths:
        return "?"
    if span or (len(lengths) > 1 and list(lengths) == list(range(lengths[0], lengths[-1] + 1))):
        return f"{lengths[0]}..{lengths[-1]}"
    shown = ",".join(str(n) for n in lengths[:8])
    return shown + (f",… ({len(lengths)} lengths)" if len(lengths) > 8 else "")


def format_results(result: Mapping[str, Any], *, max_columns: int = 12) -> str:
    """Plain-text report: one accuracy-by-length table per encoding (best run) and the summary.

    Lengths are grouped into at most ``max_columns`` bins (min accuracy within a bin) so the
    table fits a terminal; N* is exact. For the CLI ``langclass train``.
    """
    lines: list[str] = []
    runs = result.get("runs", [])
    lengths = [int(n) for n in result.get("test_lengths", [])]
    lang = result.get("language", {})
    train = [int(n) for n in (result.get("settings") or {}).get("train_lengths", [])]
    scale = (result.get("settings") or {}).get("length_scale")
    setting = result.get("setting")
    lines.append(f"language {lang.get('fingerprint', '')[:12]} over {{{', '.join(lang.get('alphabet', []))}}}, profile {result.get('profile')}, "
                 + (f"setting {setting}, " if setting else "")
                 + (f"task {result.get('task')}, " if result.get("task") not in (None, "recognition") else "")
                 + (f"attention length scale {scale}, " if scale else "")
                 + f"train lengths {describe_lengths(train[:1] + train[-1:] if train else [], span=True)}, "
                 f"test lengths {describe_lengths(lengths)}")
    for note in result.get("notes") or ():
        lines.append(f"note: {note}")
    if lengths:
        nb = min(max_columns, len(lengths))
        bins = [list(b) for b in np.array_split(np.asarray(lengths), nb)]
        header = f"{'encoding':<28}{'seed':>5}{'lr':>9}{'steps':>7}{'N*':>6}  " + " ".join(f"{(str(b[0]) if len(b) == 1 else f'{b[0]}-{b[-1]}'):>7}" for b in bins)
        lines.append(header)
        lines.append("-" * len(header))
        for r in runs:
            accs = r["accuracy_by_length"]
            cells = " ".join(f"{min(accs[str(n)] for n in b):>7.3f}" for b in bins)
            lines.append(f"{r['encoding'][:27]:<28}{r['seed']:>5}{r['learning_rate']:>9.1e}{r['steps']:>7}{r['longest_perfect_length']:>6}  {cells}")
    lines.append("")
    lines.append(f"{'encoding':<28}{'runs':>5}{'acc max':>9}{'acc mean':>9}{'acc std':>9}{'N* max':>8}{'N* mean':>9}{'N* std':>8}  verdict")
    for label, s in result.get("summary", {}).items():
        a, n = s["accuracy"], s["longest_perfect_length"]
        if not s["runs"]:
            continue
        v = s.get("verdict", {}).get("status", "")
        lines.append(f"{label[:27]:<28}{s['runs']:>5}{a['max']:>9.3f}{a['mean']:>9.3f}{a['std']:>9.3f}{n['max']:>8.0f}{n['mean']:>9.1f}{n['std']:>8.1f}  {v}")
    vt = result.get("verdict", {}).get("text")
    if vt:
        lines.append("")
        lines.append(vt)
    if not result.get("complete", True):
        lines.append("(partial: the experiment was cancelled)")
    return "\n".join(lines)
