"""The sweep use case: sample census languages, attach the train job's prediction, run, write the outputs.

:func:`train_spec_for` is the train job's spec of a language (:func:`~langclass.app.usecases.experiments.build_train_spec`
on the language's analysis: periodic encodings get the language's period, each encoding the
prediction of :func:`~langclass.app.usecases.experiments.predicted_sufficient`). :func:`run` draws the
sample (:mod:`langclass.core.census.sample`) — from the enumeration, or from the members of a stored
census run (:func:`load_census_run`, :func:`stored_run_languages`; the same reservoir sampler reads
them) — trains (:func:`langclass.models.experiments.sweep.run_sweep`) and writes ``sweep.json`` (everything),
``sweep.csv`` (per language × encoding, the injection-safe cells of
:mod:`~langclass.app.usecases.export_csv`), ``sweep.md`` (the table and the contradictions,
:func:`markdown_report`) and ``sweep.png`` (the heat map) to the output directory.

The sweep confirms (or not) the predictions of *Disentangling the Expressivity of RoPE* (§2.2,
Thm 3.1, Thm 3.2, Cor. 4.1); docs/sweep.md. ``setting="causal"`` runs the causal setting instead
(the cells split by C-RASP, :data:`~langclass.core.census.sample.CAUSAL_CELLS`; the encodings
:data:`~langclass.models.experiments.sweep.CAUSAL_SWEEP_ENCODINGS`; the prediction NoPE on C-RASP),
and ``setting="both"`` (:func:`run_settings`) runs both, each in its own sub-directory, and writes
per-setting tables and heat maps side by side.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError

__all__ = ["SWEEP_SETTINGS", "train_spec_for", "cell_encodings", "encodings_of", "draw", "run", "run_settings", "write_both",
           "markdown_both", "write_outputs", "markdown_report", "heatmap_figure", "heatmap_png", "MAX_PER_CELL",
           "load_census_run", "check_census_run", "stored_run_languages", "census_run_summary", "sweep_test_lengths"]

MAX_PER_CELL = 1000
"""Most languages per cell a sweep takes (field ``per_cell``)."""

DEFAULT_PER_CELL = 10
"""Languages per cell when neither the caller nor the profile names a number."""

SWEEP_SETTINGS = ("strict", "causal", "both")
"""What ``setting`` a sweep takes: one training setting, or both (:func:`run_settings`)."""


def _check_setting(setting: str, allowed: Sequence[str] = ("strict", "causal")) -> None:
    if setting not in allowed:
        raise InputError(f"setting must be one of {', '.join(allowed)}, got {setting!r}", field="setting")


def train_spec_for(encodings: Sequence[str] | None, setting: str = "strict", *,
                   task: str | None = None) -> Callable[[DFA], dict[str, Any]]:
    """``dfa → spec`` of a train job on that language with ``encodings`` in ``setting`` on ``task``
    (the train job's default, recognition, when None) — the prediction path of the train job.
    ``encodings=None``: the encodings of the language's strict cell
    (:data:`~langclass.models.experiments.sweep.SWEEP_CELL_ENCODINGS`).

    Raises:
        InputError: an unknown setting; (from the returned function) a task the setting cannot train."""
    from langclass.core.classification.analysis import analyze

    from .experiments import ExperimentRequest, build_train_spec

    _check_setting(setting)

    def spec_for(dfa: DFA) -> dict[str, Any]:
        analysis = analyze(dfa).to_dict()
        encs = list(encodings) if encodings else cell_encodings(analysis)
        body = ExperimentRequest(kind="train", encodings=encs, setting=setting, task=task)
        return build_train_spec(body, {"dfa": dfa.to_canonical_dict(), "analysis": analysis})

    return spec_for


def cell_encodings(analysis: Mapping[str, Any]) -> list[str]:
    """The encodings a sweep trains by default on a language (its cell's
    :data:`~langclass.models.experiments.sweep.SWEEP_CELL_ENCODINGS`; the ``beyond`` list when an undecided
    class leaves the cell open)."""
    from langclass.core.census.sample import CELL_KEYS, cell_of
    from langclass.models.experiments.sweep import SWEEP_CELL_ENCODINGS

    classes = analysis.get("classes") or {}
    profile = {k: (classes.get(k) or {}).get("member") for k in CELL_KEYS}
    cell = cell_of(profile)
    return list(SWEEP_CELL_ENCODINGS.get(cell or "beyond", SWEEP_CELL_ENCODINGS["beyond"]))


def encodings_of(records: Sequence[Mapping[str, Any]], default: Sequence[str] | None) -> list[str]:
    """Every encoding the records hold, in order of first appearance (a per-cell sweep trains
    different encodings in different cells); ``default`` when there are no records."""
    out: dict[str, None] = {}
    for r in records:
        out.update(dict.fromkeys(r.get("encodings") or {}))
    if out:
        return list(out)
    if default:
        return list(default)
    from langclass.models.experiments.sweep import SWEEP_CELL_ENCODINGS

    return list(dict.fromkeys(e for encs in SWEEP_CELL_ENCODINGS.values() for e in encs))


def draw(states: int, alphabet: int, per_cell: int, seed: int, test_lengths: Sequence[int], *,
         census_run: Any = None, setting: str = "strict") -> tuple[list[tuple[str, DFA, dict]], dict[str, Any]]:
    """The stratified sample of the census of ≤ ``states`` states over ``alphabet`` letters:
    ``([(cell, dfa, profile)], sample summary)``.

    Args:
        census_run: a stored census run (a ``CensusRunRow``, :func:`load_census_run`): the sample is
            drawn from its members of at most ``states`` states (:func:`stored_run_languages`)
            instead of enumerating and classifying; the run's order is the enumeration's, so the
            same seed draws the same languages as the enumeration of the same N and K.
        setting: ``"strict"`` (the cells :data:`~langclass.core.census.sample.CELLS`) or ``"causal"``
            (:data:`~langclass.core.census.sample.CAUSAL_CELLS`, split by C-RASP).

    Raises:
        InputError: ``per_cell`` outside 1..MAX_PER_CELL; a census run that does not fit
            (:func:`check_census_run`). LimitExceeded: ``max_sample_languages`` (enumeration).
        CensusDataError: the run's data file is missing or altered.
    """
    from langclass.core.census.sample import PARTITIONS, census_languages, stratified_sample

    _check_setting(setting)
    if not 1 <= per_cell <= MAX_PER_CELL:
        raise InputError(f"per_cell must be 1..{MAX_PER_CELL}", field="per_cell")
    cells, _names, keys = PARTITIONS[setting]
    if census_run is not None:
        check_census_run(census_run, states, alphabet, keys)
        items: Any = stored_run_languages(census_run, states, keys)
    else:
        items = census_languages(states, alphabet, keys=keys)
    sample = stratified_sample(items, per_cell, seed, test_lengths=test_lengths, partition=cells)
    langs = [(cell, dfa, prof) for cell, items in sample.languages.items() for dfa, prof in items]
    return langs, sample.to_dict()


def load_census_run(run_id: str, database_url: str | None = None) -> Any:
    """The stored census run ``run_id`` (a detached ``CensusRunRow``) from ``database_url``
    (default: the configured database, ``LANGCLASS_DATABASE_URL``).

    Raises:
        NotFoundError: no such run (``field="census_run"``).
    """
    from langclass.app.errors import NotFoundError
    from langclass.app.store.census_runs import get_run
    from langclass.app.store.db import Database, get_database

    db = Database(database_url) if database_url is not None else get_database()
    try:
        with db.session_scope() as session:
            row = get_run(session, run_id)
            if row is not None:
                session.expunge(row)
    finally:
        if database_url is not None:
            db.dispose()
    if row is None:
        raise NotFoundError(f"no census run with id {run_id!r}", field="census_run")
    return row


def check_census_run(row: Any, states: int, alphabet: int, keys: Sequence[str] | None = None) -> None:
    """Whether a stored run can be sampled for ≤ ``states`` states over ``alphabet`` letters: it has
    every class the cells need (``keys``, default :data:`~langclass.core.census.sample.CELL_KEYS`;
    the causal cells need :data:`~langclass.core.census.sample.CAUSAL_CELL_KEYS`), ``states`` ≤ its N
    and ``alphabet`` = its K.

    Raises:
        InputError: naming ``census_run``, ``states`` or ``alphabet``.
    """
    from langclass.core.census.sample import CELL_KEYS

    missing = [k for k in (keys or CELL_KEYS) if k not in list(row.class_keys)]
    if missing:
        raise InputError(f"census run {row.id} lacks the classes {', '.join(missing)} the cells need", field="census_run")
    if states > row.max_states:
        raise InputError(f"states={states} exceeds the census run's N={row.max_states}", field="states")
    if alphabet != row.alphabet_size:
        raise InputError(f"alphabet={alphabet} differs from the census run's K={row.alphabet_size}", field="alphabet")


def stored_run_languages(row: Any, states: int, keys: Sequence[str] | None = None) -> Iterator[tuple[DFA, dict[str, bool | None]]]:
    """The members of a stored run with at most ``states`` states as ``(dfa, profile)`` for
    :func:`~langclass.core.census.sample.stratified_sample`, in the run's order (n = 1, 2, …, then
    enumeration order — the order of :func:`~langclass.core.census.sample.census_languages`), each
    profile restricted to the cell classes (``keys``, default the strict cells').

    Raises:
        CensusDataError: the run's data file is missing or altered (read lazily, on the first member).
    """
    from langclass.app.store.census_runs import iter_members
    from langclass.core.census.sample import CELL_KEYS

    for n in range(1, min(states, row.max_states) + 1):
        for _index, dfa, profile in iter_members(row, states=n):
            yield dfa, {k: profile.get(k) for k in (keys or CELL_KEYS)}


def census_run_summary(row: Any) -> dict[str, Any] | None:
    """What a sweep records of the run it sampled: ``{id, max_states, alphabet_size, total, data_sha256}``."""
    if row is None:
        return None
    return {"id": row.id, "max_states": row.max_states, "alphabet_size": row.alphabet_size, "total": row.total,
            "data_sha256": row.data_sha256}


def sweep_test_lengths(profile: str, overrides: Mapping[str, Any] | None, setting: str = "strict") -> list[int]:
    """The test lengths of a sweep profile (of ``setting``) with ``overrides`` (checked).

    Raises:
        InputError: unknown profile (``field="profile"``) or setting, malformed ``overrides.test_lengths``."""
    return _test_lengths(profile, overrides, setting)


def _test_lengths(profile: str, overrides: Mapping[str, Any] | None, setting: str = "strict") -> list[int]:
    from langclass.models.experiments.experiment import PROFILES
    from langclass.models.training.specs import expand_lengths
    from langclass.models.experiments.sweep import sweep_profiles

    profiles = sweep_profiles(setting)
    if profile not in profiles:
        raise InputError(f"unknown sweep profile {profile!r}; expected one of {', '.join(profiles)}", field="profile")
    p = profiles[profile]
    from pydantic import TypeAdapter, ValidationError

    from langclass.models.training.specs import Lengths

    tl = {**PROFILES[p["base"]], **p["overrides"], **(overrides or {})}["test_lengths"]
    try:
        parsed = TypeAdapter(Lengths).validate_python(tl)
    except ValidationError as err:
        raise InputError(f"bad test_lengths: {err.errors()[0].get('msg')}", field="overrides.test_lengths") from None
    return expand_lengths(parsed, "overrides.test_lengths")


def run(states: int, alphabet: int, per_cell: int | None, seed: int, out_dir: str | Path, *, profile: str = "cpu",
        encodings: Sequence[str] | None = None, seeds: Sequence[int] | None = None, overrides: Mapping[str, Any] | None = None,
        runner: Any = None, limits: Any = None, progress: Any = None, census_run: Any = None, write: bool = True,
        should_cancel: Callable[[], bool] | None = None, language_progress: Any = None, setting: str = "strict") -> dict[str, Any]:
    """Draw, train (resumable in ``out_dir``) and write every output; returns the ``sweep.json`` content.

    Args:
        setting: ``"strict"`` (default) or ``"causal"`` — the cells, encodings, profile and prediction
            of that training setting (module doc); for both see :func:`run_settings`. The causal
            ``per_cell=None`` takes the profile's number (``per_cell`` of :data:`~langclass.models.experiments.sweep.SWEEP_PROFILES`
            / :data:`~langclass.models.experiments.sweep.CAUSAL_SWEEP_PROFILES`, else :data:`DEFAULT_PER_CELL`);
            ``per_cell`` in the result is the number used).
        census_run: a stored census run to sample from (:func:`draw`); recorded as ``census_run``
            (:func:`census_run_summary`; null when the census was enumerated).
        write: write ``sweep.json`` / ``.csv`` / ``.md`` / ``.png`` (the sweep job keeps the
            content in its result instead).
        should_cancel, language_progress: see :func:`langclass.models.experiments.sweep.run_sweep`.

    Returns:
        ``{states, alphabet, per_cell, seed, profile, setting, census_run, cells, sample, encodings,
        aggregate, contradictions, records, runs, resumed, settings, overrides, seeds, wall_s}``.

    Raises:
        InputError, LimitExceeded: before any training (the sample's and every language's limits).
        SweepCancelled: ``should_cancel()`` turned True (the finished languages stay in ``out_dir``).
    """
    from langclass.core.census.sample import PARTITIONS
    from langclass.models.experiments.sweep import CAUSAL_SWEEP_ENCODINGS, run_sweep, sweep_profiles
    from langclass.models.experiments.sweep_report import aggregate, contradictions

    _check_setting(setting)
    cells, names, _keys = PARTITIONS[setting]
    if per_cell is None:  # the profile's number (an explicit per_cell is taken as given)
        per_cell = sweep_profiles(setting).get(profile, {}).get("per_cell") or DEFAULT_PER_CELL
    # strict: None = each cell's SWEEP_CELL_ENCODINGS; causal: the causal catalogue
    encs = list(encodings) if encodings else (list(CAUSAL_SWEEP_ENCODINGS) if setting == "causal" else None)
    langs, summary = draw(states, alphabet, per_cell, seed, _test_lengths(profile, overrides, setting), census_run=census_run,
                          setting=setting)
    res = run_sweep(langs, train_spec_for(encs, setting), out_dir, profile=profile, seeds=seeds, overrides=overrides,
                    runner=runner, limits=limits, progress=progress, should_cancel=should_cancel,
                    language_progress=language_progress)
    labels = encodings_of(res["records"], encs)
    agg = aggregate(res["records"], list(cells), labels)
    out = {"states": states, "alphabet": alphabet, "per_cell": per_cell, "seed": seed, "profile": profile, "setting": setting,
           "census_run": census_run_summary(census_run),
           "cells": {c: names[c] for c in cells}, "sample": summary, "encodings": labels, "aggregate": agg,
           "contradictions": contradictions(res["records"]), **res}
    if write:
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
    # at least 7.5 in wide: the title and the cell names need it even for one encoding
    fig = Figure(figsize=(max(7.5, 1.5 + 1.3 * len(encs)), 1.0 + 0.6 * len(cells)), layout="constrained")
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
    causal = out.get("setting") == "causal"
    ax.set_title(f"share of languages with N* = longest tested length ({out.get('setting', 'strict')} setting, {out['profile']} profile, "
                 f"≤{out['states']} states, {out['alphabet']} letters)\nred outline: predicted sufficient "
                 + ("(causal: NoPE on C-RASP)" if causal else "(strict: soft, recency or unique hard attention)"), fontsize=9)
    fig.colorbar(im, ax=ax, label="share")
    return fig


def heatmap_png(out: Mapping[str, Any], *, dpi: int = 110) -> bytes:
    """The heat map of :func:`heatmap_figure` as PNG bytes (``sweep.png``; ``GET /v1/sweeps/{id}/heatmap.png``)."""
    import io

    buf = io.BytesIO()
    heatmap_figure(out).savefig(buf, format="png", dpi=dpi, bbox_inches="tight")  # nothing clipped
    return buf.getvalue()


def markdown_report(out: Mapping[str, Any]) -> str:
    """``sweep.md``: the cells × encodings table (:func:`~langclass.models.experiments.sweep_report.markdown_table`)
    and every contradicting run with its language (canonical DFA JSON)."""
    from langclass.models.experiments.sweep_report import markdown_table

    md = [markdown_table(out["aggregate"], out["cells"], out["encodings"], out.get("setting", "strict")), "", "## Contradicting runs", ""]
    if out.get("census_run"):
        md[1:1] = ["", f"sampled from census run {out['census_run']['id']}"]
    if not out["contradictions"]:
        md.append("none")
    for c in out["contradictions"]:
        md.append(f"- {c['kind']}: cell {c['cell']}, {c['encoding']}, N* = {c['longest_perfect_length']} of "
                  f"{c['longest_tested_length']}, language {c['fingerprint'][:16]} "
                  f"`{json.dumps(c['dfa'], separators=(',', ':'))}` — {c['note']}")
    return "\n".join(md) + "\n"


def write_outputs(out: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write ``sweep.json``, ``sweep.csv``, ``sweep.md`` and ``sweep.png``; returns their paths."""
    from langclass.models.experiments.sweep_report import CSV_FIELDS, csv_records

    from .export_csv import csv_table

    d = Path(out_dir)
    paths = {k: d / f"sweep.{k}" for k in ("json", "csv", "md", "png")}
    paths["json"].write_text(json.dumps(out, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
    paths["csv"].write_text(csv_table(CSV_FIELDS, csv_records(out["records"])), encoding="utf-8", newline="")
    paths["md"].write_text(markdown_report(out), encoding="utf-8")
    paths["png"].write_bytes(heatmap_png(out))
    return paths


def run_settings(states: int, alphabet: int, per_cell: int | None, seed: int, out_dir: str | Path, *, setting: str = "strict",
                 progress: Any = None, write: bool = True, **kw: Any) -> dict[str, Any]:
    """:func:`run` for ``setting`` ``"strict"`` or ``"causal"`` (into ``out_dir``), or for ``"both"``:
    the strict sweep into ``out_dir/strict``, the causal one into ``out_dir/causal`` (each resumable
    there, each with its own ``sweep.*``), and ``sweep.json`` (``{"setting": "both", "strict": …,
    "causal": …}``), ``sweep.md`` (both tables and contradiction lists), ``sweep-strict.png`` and
    ``sweep-causal.png`` in ``out_dir`` (:func:`write_both`). ``progress(done, total, record)``
    receives each setting's languages in turn (the record names its ``setting``).

    Raises:
        InputError: another ``setting`` (``field="setting"``); and what :func:`run` raises.
    """
    _check_setting(setting, SWEEP_SETTINGS)
    if setting != "both":
        return run(states, alphabet, per_cell, seed, out_dir, progress=progress, write=write, setting=setting, **kw)
    both: dict[str, Any] = {"setting": "both"}
    for one in ("strict", "causal"):
        sub_kw = dict(kw)
        if one == "causal":
            sub_kw.pop("encodings", None)  # the strict catalogue is not the causal one
        both[one] = run(states, alphabet, per_cell, seed, Path(out_dir) / one, progress=progress, write=write, setting=one, **sub_kw)
    both["runs"] = both["strict"]["runs"] + both["causal"]["runs"]
    both["wall_s"] = both["strict"]["wall_s"] + both["causal"]["wall_s"]
    if write:
        write_both(both, out_dir)
    return both


def markdown_both(both: Mapping[str, Any]) -> str:
    """``sweep.md`` of a two-setting sweep: one section per setting (its table and contradictions)."""
    parts = []
    for one, title in (("strict", "Strict setting (strict mask, BOS w EOS, readout at EOS)"),
                       ("causal", "Causal setting (non-strict mask, BOS w, readout at the last position)")):
        parts.append(f"# {title}\n\n" + markdown_report(both[one]))
    return "\n".join(parts)


def write_both(both: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write ``sweep.json``, ``sweep.md``, ``sweep-strict.png`` and ``sweep-causal.png`` of a
    two-setting sweep to ``out_dir``; returns their paths."""
    d = Path(out_dir)
    paths = {"json": d / "sweep.json", "md": d / "sweep.md", "strict_png": d / "sweep-strict.png", "causal_png": d / "sweep-causal.png"}
    paths["json"].write_text(json.dumps(both, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
    paths["md"].write_text(markdown_both(both), encoding="utf-8")
    paths["strict_png"].write_bytes(heatmap_png(both["strict"]))
    paths["causal_png"].write_bytes(heatmap_png(both["causal"]))
    return paths
