"""The sweep use case: sample census languages, attach the train job's prediction, run, write the outputs.

:func:`train_spec_for` is the train job's spec of a language (:func:`~langclass.app.usecases.experiments.build_train_spec`
on the language's analysis: periodic encodings get the language's period, each encoding the
prediction of :func:`~langclass.app.usecases.experiments.predicted_sufficient`). :func:`run` draws the
sample (:mod:`langclass.core.census_sample`), trains (:func:`langclass.models.sweep.run_sweep`) and writes
``sweep.json`` (everything), ``sweep.csv`` (per language × encoding, the injection-safe cells of
:mod:`~langclass.app.usecases.export_csv`), ``sweep.md`` (the table and the contradictions) and
``sweep.png`` (the heat map) to the output directory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError

__all__ = ["train_spec_for", "draw", "run", "write_outputs", "heatmap_figure", "MAX_PER_CELL"]

MAX_PER_CELL = 1000
"""Most languages per cell a sweep takes (field ``per_cell``)."""


def train_spec_for(encodings: Sequence[str]) -> Callable[[DFA], dict[str, Any]]:
    """``dfa → spec`` of a train job on that language with ``encodings`` (the prediction path of the train job)."""
    from langclass.core.analysis import analyze

    from .experiments import ExperimentRequest, build_train_spec

    def spec_for(dfa: DFA) -> dict[str, Any]:
        analysis = analyze(dfa).to_dict()
        body = ExperimentRequest(kind="train", encodings=list(encodings))
        return build_train_spec(body, {"dfa": dfa.to_canonical_dict(), "analysis": analysis})

    return spec_for


def draw(states: int, alphabet: int, per_cell: int, seed: int, test_lengths: Sequence[int]) -> tuple[list[tuple[str, DFA, dict]], dict[str, Any]]:
    """The stratified sample of the census of ≤ ``states`` states over ``alphabet`` letters:
    ``([(cell, dfa, profile)], sample summary)``.

    Raises:
        InputError: ``per_cell`` outside 1..MAX_PER_CELL; LimitExceeded: ``max_sample_languages``.
    """
    from langclass.core.census_sample import census_languages, stratified_sample

    if not 1 <= per_cell <= MAX_PER_CELL:
        raise InputError(f"per_cell must be 1..{MAX_PER_CELL}", field="per_cell")
    sample = stratified_sample(census_languages(states, alphabet), per_cell, seed, test_lengths=test_lengths)
    langs = [(cell, dfa, prof) for cell, items in sample.languages.items() for dfa, prof in items]
    return langs, sample.to_dict()


def _test_lengths(profile: str, overrides: Mapping[str, Any] | None) -> list[int]:
    from langclass.models.experiment import PROFILES
    from langclass.models.specs import expand_lengths
    from langclass.models.sweep import SWEEP_PROFILES

    if profile not in SWEEP_PROFILES:
        raise InputError(f"unknown sweep profile {profile!r}; expected one of {', '.join(SWEEP_PROFILES)}", field="profile")
    p = SWEEP_PROFILES[profile]
    from pydantic import TypeAdapter, ValidationError

    from langclass.models.specs import Lengths

    tl = {**PROFILES[p["base"]], **p["overrides"], **(overrides or {})}["test_lengths"]
    try:
        parsed = TypeAdapter(Lengths).validate_python(tl)
    except ValidationError as err:
        raise InputError(f"bad test_lengths: {err.errors()[0].get('msg')}", field="overrides.test_lengths") from None
    return expand_lengths(parsed, "overrides.test_lengths")


def run(states: int, alphabet: int, per_cell: int, seed: int, out_dir: str | Path, *, profile: str = "cpu",
        encodings: Sequence[str] | None = None, seeds: Sequence[int] | None = None, overrides: Mapping[str, Any] | None = None,
        runner: Any = None, limits: Any = None, progress: Any = None) -> dict[str, Any]:
    """Draw, train (resumable in ``out_dir``) and write every output; returns the ``sweep.json`` content.

    Raises:
        InputError, LimitExceeded: before any training (the sample's and every language's limits).
    """
    from langclass.core.census_sample import CELL_NAMES, CELLS
    from langclass.models.sweep import SWEEP_ENCODINGS, run_sweep
    from langclass.models.sweep_report import aggregate, contradictions

    encs = list(encodings or SWEEP_ENCODINGS)
    langs, summary = draw(states, alphabet, per_cell, seed, _test_lengths(profile, overrides))
    res = run_sweep(langs, train_spec_for(encs), out_dir, profile=profile, seeds=seeds, overrides=overrides,
                    runner=runner, limits=limits, progress=progress)
    labels = list(res["records"][0]["encodings"]) if res["records"] else encs
    agg = aggregate(res["records"], list(CELLS), labels)
    out = {"states": states, "alphabet": alphabet, "per_cell": per_cell, "seed": seed, "profile": profile,
           "cells": {c: CELL_NAMES[c] for c in CELLS}, "sample": summary, "encodings": labels, "aggregate": agg,
           "contradictions": contradictions(res["records"]), **res}
    write_outputs(out, out_dir)
    return out


def heatmap_figure(out: Mapping[str, Any]) -> Any:
    """Cells × encodings, the share in each square; predicted squares outlined (matplotlib Figure)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    cells = list(out["aggregate"]["cells"])
    encs = list(out["encodings"])
    share = np.full((len(cells), len(encs)), np.nan)
    fig = Figure(figsize=(1.5 + 1.3 * len(encs), 1.0 + 0.6 * len(cells)), layout="constrained")
    ax = fig.add_subplot()
    for i, c in enumerate(cells):
        for j, e in enumerate(encs):
            s = out["aggregate"]["cells"][c]["encodings"][e]
            if s["share"] is not None:
                share[i, j] = s["share"]
    im = ax.imshow(share, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    for i, c in enumerate(cells):
        for j, e in enumerate(encs):
            s = out["aggregate"]["cells"][c]["encodings"][e]
            text = "–" if s["share"] is None else f"{s['reached']}/{s['languages']}"
            ax.text(j, i, text, ha="center", va="center", fontsize=9,
                    color="black" if (s["share"] or 0) > 0.6 else "white")
            if s["predicted_majority"]:
                ax.add_patch(Rectangle((j - 0.48, i - 0.48), 0.96, 0.96, fill=False, edgecolor="red", linewidth=2.5))
    ax.set_xticks(range(len(encs)), encs, rotation=30, ha="right")
    ax.set_yticks(range(len(cells)), [out["cells"].get(c, c) for c in cells])
    ax.set_title(f"share of languages with N* = longest tested length ({out['profile']} profile, "
                 f"≤{out['states']} states, {out['alphabet']} letters)\nred outline: predicted sufficient (soft attention)", fontsize=9)
    fig.colorbar(im, ax=ax, label="share")
    return fig


def write_outputs(out: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write ``sweep.json``, ``sweep.csv``, ``sweep.md`` and ``sweep.png``; returns their paths."""
    from langclass.models.sweep_report import CSV_FIELDS, csv_records, markdown_table

    from .export_csv import csv_cell

    d = Path(out_dir)
    paths = {k: d / f"sweep.{k}" for k in ("json", "csv", "md", "png")}
    paths["json"].write_text(json.dumps(out, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(CSV_FIELDS)
    for row in csv_records(out["records"]):
        w.writerow([csv_cell(row[f]) for f in CSV_FIELDS])
    paths["csv"].write_text(buf.getvalue(), encoding="utf-8", newline="")
    md = [markdown_table(out["aggregate"], out["cells"], out["encodings"]), "", "## Contradicting runs", ""]
    if not out["contradictions"]:
        md.append("none")
    for c in out["contradictions"]:
        md.append(f"- {c['kind']}: cell {c['cell']}, {c['encoding']}, N* = {c['longest_perfect_length']} of "
                  f"{c['longest_tested_length']}, language {c['fingerprint'][:16]} "
                  f"`{json.dumps(c['dfa'], separators=(',', ':'))}` — {c['note']}")
    paths["md"].write_text("\n".join(md) + "\n", encoding="utf-8")
    heatmap_figure(out).savefig(paths["png"], dpi=110)
    return paths
