"""Accuracy-by-length plots of training results (matplotlib, Agg backend, no display needed).

One curve per encoding: the mean accuracy over its runs (seeds × learning rates) at each test
length, a min–max band, the longest perfect length N* of the best run marked (the legend gives the
best and the worst run's N*), as in the length-generalization figures of *Disentangling the
Expressivity of RoPE*, App. E.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from langclass.core.base.errors import InputError

__all__ = ["accuracy_curves", "accuracy_figure", "language_label", "plot_accuracy_by_length"]


def accuracy_curves(result: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per encoding label: ``{"lengths": [...], "mean": [...], "min": [...], "max": [...], "n_star": int,
    "n_star_worst": int, "runs": int}`` — ``n_star`` is the best run's longest perfect length,
    ``n_star_worst`` the worst run's.

    Lengths are the union of the runs' tested lengths, ascending; a run missing a length (a partial
    result) does not count there.

    Raises:
        InputError: ``result`` has no runs with ``accuracy_by_length``.
    """
    curves: dict[str, dict[str, Any]] = {}
    for run in result.get("runs") or []:
        acc = run.get("accuracy_by_length")
        if not isinstance(acc, Mapping):
            continue
        label = str(run.get("encoding"))
        c = curves.setdefault(label, {"by_length": {}, "n_stars": [], "runs": 0})
        c["runs"] += 1
        n_star = run.get("longest_perfect_length")
        if isinstance(n_star, (int, float)):
            c["n_stars"].append(int(n_star))
        for n, a in acc.items():
            if isinstance(a, (int, float)):
                c["by_length"].setdefault(int(n), []).append(float(a))
    if not curves:
        raise InputError("the result has no runs with accuracy_by_length", field="result.runs")
    out: dict[str, dict[str, Any]] = {}
    for label, c in curves.items():
        lengths = sorted(c["by_length"])
        vals = [c["by_length"][n] for n in lengths]
        out[label] = {
            "lengths": lengths,
            "mean": [sum(v) / len(v) for v in vals],
            "min": [min(v) for v in vals],
            "max": [max(v) for v in vals],
            "n_star": max(c["n_stars"], default=0),
            "n_star_worst": min(c["n_stars"], default=0),
            "runs": c["runs"],
        }
    return out


def language_label(language: Mapping[str, Any] | None) -> str | None:
    """How a plot names a stored language: its name, else its regex or formula as given (with the
    alphabet), else None. ``language`` is a Language resource (``name``, ``source``)."""
    if not isinstance(language, Mapping):
        return None
    if language.get("name"):
        return str(language["name"])
    source = language.get("source") or {}
    alphabet = source.get("alphabet")
    over = f" over {{{', '.join(map(str, alphabet))}}}" if isinstance(alphabet, list) else ""
    for kind in ("regex", "formula"):
        if isinstance(source.get(kind), str):
            return f"{source[kind]}{over}"
    return None


def _legend_text(label: str, c: Mapping[str, Any]) -> str:
    """One legend entry: what the curve is and which N* is shown (best and worst run when several)."""
    if c["runs"] == 1:
        return f"{label}: 1 run, N* = {c['n_star']}"
    return f"{label}: mean of {c['runs']} runs (band min–max), N* best run {c['n_star']}, worst run {c['n_star_worst']}"


def accuracy_figure(result: Mapping[str, Any], *, language: str | None = None, width: float = 8.0, height: float = 4.5,
                    dpi: int = 100) -> Any:
    """The matplotlib ``Figure`` of :func:`plot_accuracy_by_length` (object API, no pyplot state).

    The title names the language (``language``: a name or regex, see :func:`language_label`; the
    fingerprint's first 12 hex digits only when nothing else is known), the profile, and "partial"
    for a cancelled or failed experiment; the legend says per curve whether it is one run or the mean
    of several and which N* it shows (best and worst run).

    Raises:
        InputError: no plottable runs.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure  # the object API: no global pyplot state, thread-safe per figure

    curves = accuracy_curves(result)
    fig = Figure(figsize=(width, height), dpi=dpi)
    ax = fig.add_subplot(1, 1, 1)
    for label, c in curves.items():
        (line,) = ax.plot(c["lengths"], c["mean"], marker="." if len(c["lengths"]) < 60 else None, linewidth=1.5,
                          label=_legend_text(label, c))
        if c["runs"] > 1:
            ax.fill_between(c["lengths"], c["min"], c["max"], color=line.get_color(), alpha=0.2, linewidth=0)
        if c["n_star"] and c["lengths"] and c["n_star"] >= c["lengths"][0]:
            ax.axvline(c["n_star"], color=line.get_color(), linestyle=":", linewidth=1)
    train = (result.get("settings") or {}).get("train_lengths")
    if isinstance(train, list) and train:
        ax.axvspan(min(train), max(train), color="0.9", zorder=0, label=f"training lengths {min(train)}–{max(train)}")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("test length")
    ax.set_ylabel("accuracy")
    lang = result.get("language") or {}
    if language is None and isinstance(lang, Mapping) and lang.get("fingerprint"):
        language = f"language {str(lang['fingerprint'])[:12]}"
    title = "accuracy by length" + (f" — {language}" if language else "")
    if result.get("profile"):
        title += f", profile {result['profile']}"
    settings = result.get("settings")
    if isinstance(settings, Mapping) and settings.get("length_scale"):
        title += f", length scale {settings['length_scale']}"  # paper-lite's "log" can be overridden
    if result.get("complete") is False:
        title += " (partial: the experiment stopped early)"
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    legend = ax.legend(fontsize=8, loc="lower left")
    for text in legend.get_texts():  # labels are user text: "$...$" is shown as typed, never parsed as mathtext
        text.set_parse_math(False)
    fig.tight_layout()
    return fig


def plot_accuracy_by_length(result: Mapping[str, Any], *, language: str | None = None, width: float = 8.0,
                            height: float = 4.5, dpi: int = 100) -> bytes:
    """PNG bytes of accuracy (y, 0–1) against test length (x), one curve per encoding
    (:func:`accuracy_figure`).

    Raises:
        InputError: no plottable runs.
    """
    fig = accuracy_figure(result, language=language, width=width, height=height, dpi=dpi)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
