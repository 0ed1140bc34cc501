"""The sweep as a job of the service (kind ``sweep``): the request, its checks before queueing, the
job function a worker runs, and the report a finished job shows.

``POST /v1/sweeps`` (:mod:`langclass.app.web.routes.sweeps`) validates a :class:`SweepRequest`,
turns it into a job spec with :func:`build_sweep_spec` — every check that needs no training runs
here, with the limits ``langclass sweep`` uses (``max_sample_languages``, ``max_sweep_runs``, the
job limits of one language's experiment) — and queues it with no language (``jobs.language_id``
NULL, migration 0005). A worker runs :func:`run_sweep_job` (:data:`~langclass.app.store.jobs.JOB_KINDS`),
the use case of ``langclass sweep`` (:func:`langclass.app.usecases.sweep.run`) with the job's
progress, cancellation, wall-clock budget and checkpoint directory. :func:`sweep_report` is the
result as ``GET /v1/sweeps/{id}`` shows it: per cell × encoding the share of languages whose N*
reaches the longest tested length, the encodings predicted per cell, the contradicting runs with
their languages, and the Markdown of ``sweep.md``.

The sweep tests the predictions of *Disentangling the Expressivity of RoPE* (§2.2, Thm 3.1,
Thm 3.2, Cor. 4.1; App. E for the protocol); docs/sweep.md.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict


from langclass.core.base.errors import LimitExceeded
from langclass.models.training.specs import TrainOverrides, _Integral  # integral numbers: 2 and 2.0, never true or "2"
from langclass.models.experiments.sweep import SWEEP_CELL_ENCODINGS, SWEEP_ENCODINGS, SWEEP_TRAINED_MODELS

__all__ = ["SweepRequest", "build_sweep_spec", "run_sweep_job", "sweep_report", "census_run_spec", "cell_bounds"]

SweepEncoding = Literal[SWEEP_ENCODINGS + SWEEP_TRAINED_MODELS]  # type: ignore[valid-type]
"""One of the encodings a sweep trains (:data:`~langclass.models.experiments.sweep.SWEEP_ENCODINGS` and
:data:`~langclass.models.experiments.sweep.SWEEP_TRAINED_MODELS`)."""


class SweepRequest(BaseModel):
    """A sweep to run as a job: the parameters of ``langclass sweep``.

    Without ``census_run`` the census of ≤ ``states`` states over ``alphabet`` letters is enumerated
    (defaults 3 and 2); with it the sample is drawn from that stored run's members (``states``
    defaults to the run's N and may be smaller; ``alphabet`` must be the run's K).
    """

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [
            {"states": 3, "alphabet": 2, "per_cell": 10, "profile": "cpu", "seed": 0},
            {"census_run": "3f0c…", "per_cell": 5, "overrides": {"max_steps": 50}},
        ]},
    )
    states: Annotated[int, Field(ge=1, le=5), _Integral, Strict()] | None = Field(None, description="N: at most this many states in the minimal DFA (default 3, or the census run's N)")
    alphabet: Annotated[int, Field(ge=1, le=4), _Integral, Strict()] | None = Field(None, description="K: letters a, b, … (default 2, or the census run's K)")
    per_cell: Annotated[int, Field(ge=1, le=1000), _Integral, Strict()] = Field(10, description="languages drawn per cell of the lattice")
    profile: Literal["cpu", "paper"] = Field("cpu", description="cpu (2-core CPU, about an hour for N=3, 10 per cell) or paper (App. E.2, GPU)")
    seed: Annotated[int, Field(ge=0, le=2**31 - 1), _Integral, Strict()] = Field(0, description="seed of the draw")
    encodings: list[SweepEncoding] | None = Field(None, min_length=1, max_length=len(SWEEP_ENCODINGS + SWEEP_TRAINED_MODELS),
                                                  description="encodings to train in every cell (default: per cell, the predicted "
                                                              "model and one or two baselines, SWEEP_CELL_ENCODINGS)")
    overrides: TrainOverrides | None = Field(None, description="experiment settings to change (max_steps, test_lengths, …), as --overrides")
    census_run: str | None = Field(None, min_length=1, max_length=64, pattern=r"^[^\x00]*$",
                                   description="id of a stored census run (GET /v1/census) to sample from instead of enumerating")
    max_attempts: Annotated[int, Field(ge=1, le=10), _Integral, Strict()] | None = Field(None, description="claims allowed if workers die (default LANGCLASS_JOB_MAX_ATTEMPTS)")


def census_run_spec(row: Any) -> dict[str, Any]:
    """What a sweep job needs of a stored run to read its members without the database: identity,
    N, K, classes and the data file (path and SHA-256, checked when read)."""
    return {"id": row.id, "max_states": row.max_states, "alphabet_size": row.alphabet_size, "class_keys": list(row.class_keys),
            "total": row.total, "data_path": row.data_path, "data_sha256": row.data_sha256, "data_bytes": row.data_bytes}


def _run_row(spec: Mapping[str, Any]) -> Any:
    """A detached ``CensusRunRow`` from :func:`census_run_spec`'s fields (only what reading the members needs)."""
    from langclass.app.store.orm import CensusRunRow

    return CensusRunRow(**{k: spec[k] for k in ("id", "max_states", "alphabet_size", "class_keys", "total", "data_path",
                                                "data_sha256", "data_bytes")})


def cell_bounds(profile_counts: Any, class_keys: list[str], states: int) -> dict[str, int]:
    """Cell → languages of a stored run with ≤ ``states`` states in it (from the run's
    ``census_profiles`` rows ``(profile text, states, count)``; an upper bound on what can be drawn:
    the trivial languages are only excluded when the members are read)."""
    from langclass.core.census.sample import CELLS, cell_of

    out = {c: 0 for c in CELLS}
    for text, n, count in profile_counts:
        if n > states:
            continue
        prof = {k: (None if ch == "-" else ch == "1") for k, ch in zip(class_keys, text)}
        cell = cell_of(prof)
        if cell is not None:
            out[cell] += int(count)
    return out


def _representative(alphabet: int) -> Any:
    """A two-state language over ``alphabet`` letters (an even number of a's) whose spec stands for
    every sampled language's in the checks before queueing (the job limits do not depend on the
    language beyond its alphabet; the periodic encodings get its period 2)."""
    from langclass.core.automata.automaton import DFA

    letters = [chr(ord("a") + i) for i in range(alphabet)]
    rows = [[1 if x == "a" else 0 for x in letters], [0 if x == "a" else 1 for x in letters]]
    return DFA.from_table(letters, rows, 0, [0])


def build_sweep_spec(body: SweepRequest, *, census_run: Any = None, run_profile_counts: Any = None,
                     limits: Any = None) -> dict[str, Any]:
    """The job spec of a sweep, checked as far as it can be without training.

    Args:
        body: the request.
        census_run: the stored run named by ``body.census_run`` (the caller looked it up: unknown → 404).
        run_profile_counts: its ``(profile, states, count)`` rows (bounds the sample per cell).
        limits: the service's :class:`~langclass.models.training.specs.JobLimits`.

    Returns:
        ``{"states", "alphabet", "per_cell", "seed", "profile", "encodings", "overrides",
        "census_run": census_run_spec(...) | None, "runs_bound"}``.

    Raises:
        InputError: unknown profile, bad ``overrides.test_lengths``, a census run that does not fit
            (``states`` above its N, ``alphabet`` other than its K, classes the cells need missing).
        LimitExceeded: ``max_sample_languages`` (the census to enumerate); ``max_sweep_runs`` on the
            most runs the sample can have (every cell full, or the run's cell sizes); any job limit
            of one language's experiment (``job_max_steps``, ``max_test_length``, memory, …).
    """
    from langclass.core.census.sample import CELLS, MAX_SAMPLE_LANGUAGES, check_census_size
    from langclass.models.experiments.sweep import MAX_SWEEP_RUNS, check_sweep, sweep_spec

    from .sweep import check_census_run, sweep_test_lengths, train_spec_for

    if census_run is not None:
        states = body.states if body.states is not None else int(census_run.max_states)
        alphabet = body.alphabet if body.alphabet is not None else int(census_run.alphabet_size)
        check_census_run(census_run, states, alphabet)
    else:
        states = body.states if body.states is not None else 3
        alphabet = body.alphabet if body.alphabet is not None else 2
        check_census_size(states, alphabet, max_languages=MAX_SAMPLE_LANGUAGES)
    overrides = body.overrides.model_dump(mode="json", exclude_none=True) if body.overrides is not None else None
    sweep_test_lengths(body.profile, overrides)
    encodings = list(dict.fromkeys(body.encodings)) if body.encodings else None  # None: per cell
    per_language = 0
    for encs in ([encodings] if encodings else list(dict.fromkeys(SWEEP_CELL_ENCODINGS.values()))):
        one = sweep_spec(train_spec_for(encs)(_representative(alphabet)), body.profile, overrides=overrides)
        per_language = max(per_language, check_sweep([one], limits=limits))
    if census_run is not None and run_profile_counts is not None:
        sizes = cell_bounds(run_profile_counts, list(census_run.class_keys), states)
        most = sum(min(body.per_cell, n) for n in sizes.values())
    else:
        most = len(CELLS) * body.per_cell
    if most * per_language > MAX_SWEEP_RUNS:
        raise LimitExceeded("max_sweep_runs", MAX_SWEEP_RUNS,
                            f"the sweep could train {most * per_language:,} runs ({most:,} languages × {per_language} runs), more than "
                            f"max_sweep_runs = {MAX_SWEEP_RUNS:,}", field="per_cell")
    return {"states": states, "alphabet": alphabet, "per_cell": body.per_cell, "seed": body.seed, "profile": body.profile,
            "encodings": encodings, "overrides": overrides,
            "census_run": census_run_spec(census_run) if census_run is not None else None,
            "runs_bound": most * per_language}


def _partial(exc: Any, spec: Mapping[str, Any]) -> dict[str, Any]:
    """A cancelled or stopped sweep's finished languages, aggregated like a whole one."""
    from langclass.core.census.sample import CELL_NAMES, CELLS
    from langclass.models.experiments.sweep_report import aggregate, contradictions

    from .sweep import encodings_of

    records = list(exc.partial.get("records") or [])
    labels = encodings_of(records, spec.get("encodings"))
    return {**{k: spec.get(k) for k in ("states", "alphabet", "per_cell", "seed", "profile")},
            "census_run": _summary(spec.get("census_run")), "cells": {c: CELL_NAMES[c] for c in CELLS}, "encodings": labels,
            "aggregate": aggregate(records, list(CELLS), labels), "contradictions": contradictions(records),
            "records": records, "languages": exc.partial.get("languages"), "complete": False}


def _summary(run: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not run:
        return None
    return {k: run[k] for k in ("id", "max_states", "alphabet_size", "total", "data_sha256")}


def run_sweep_job(spec: Mapping[str, Any], *, progress: Callable[[dict[str, Any]], None] | None = None,
                  should_cancel: Callable[[], bool] | None = None, limits: Any = None) -> dict[str, Any]:
    """The job function of kind ``sweep`` (a worker calls it with the stored spec).

    Draws the sample (from ``spec["census_run"]``'s data file when given), trains every language
    (:func:`langclass.app.usecases.sweep.run`, ``write=False``) and returns the content of
    ``sweep.json`` plus ``"complete": True``. Each finished language is written to
    ``spec["out_dir"]/languages/`` (the worker sets ``out_dir`` to ``<checkpoint root>/<job id>``
    when ``LANGCLASS_JOB_CHECKPOINT_DIR`` is set, so a retried attempt trains only the languages
    not finished; without it a temporary directory is used and removed).

    Progress reports: ``{"phase": "sampling"}``, then ``{"phase": "train", "step": languages done,
    "total": languages, "last_language": {cell, fingerprint, wall_s}, "current": the experiment's
    report of the language in training}``.

    Raises:
        InputError, LimitExceeded: the sample or a language's spec breaks a limit (before training).
        SweepCancelled: ``should_cancel()`` turned True — cancelled, over the job's wall-clock budget,
            or the worker stopping; ``.partial`` is the report of the finished languages
            (``"complete": False``).
        CensusDataError: the census run's data file is missing or altered.
    """
    from langclass.models.experiments.sweep import SweepCancelled

    from .sweep import run

    state: dict[str, Any] = {"phase": "sampling"}

    def report(**kw: Any) -> None:
        state.update(kw)
        if progress is not None:
            progress(dict(state))

    def on_language(done: int, total: int, rec: Mapping[str, Any] | None) -> None:
        last = None if rec is None else {"cell": rec["cell"], "fingerprint": rec["fingerprint"], "wall_s": rec["wall_s"]}
        report(phase="train", step=done, total=total, languages_done=done, languages=total, last_language=last, current=None)

    def on_run(_index: int, r: Mapping[str, Any]) -> None:
        report(current={k: r.get(k) for k in ("phase", "encoding", "step", "total", "run", "runs")})

    report()
    run_row = _run_row(spec["census_run"]) if spec.get("census_run") else None
    own_dir = None
    out_dir = spec.get("out_dir")
    if not out_dir:
        own_dir = out_dir = tempfile.mkdtemp(prefix="langclass-sweep-")
    try:
        result = run(int(spec["states"]), int(spec["alphabet"]), int(spec["per_cell"]), int(spec["seed"]), out_dir,
                     profile=spec.get("profile", "cpu"), encodings=spec.get("encodings"), overrides=spec.get("overrides"),
                     limits=limits, progress=on_language, census_run=run_row, write=False, should_cancel=should_cancel,
                     language_progress=on_run)
    except SweepCancelled as exc:
        exc.partial = _partial(exc, spec)
        raise
    finally:
        if own_dir is not None:
            shutil.rmtree(own_dir, ignore_errors=True)
    result["complete"] = True
    return result


def sweep_report(result: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The report of a sweep job's result (whole or partial) as ``GET /v1/sweeps/{id}`` shows it.

    Returns:
        None without a result; else ``{"complete", "census_run", "encodings", "cells": {cell: {"name",
        "languages", "tested", "not_tested", "predicted": [encodings predicted sufficient for most of
        the cell's tested languages], "encodings": {encoding: {"languages", "reached", "share",
        "predicted", "predicted_majority"}}}}, "contradictions": [{kind, cell, fingerprint, dfa,
        encoding, longest_perfect_length, longest_tested_length, accuracy, reason, note}],
        "sample", "runs", "markdown": sweep.md}``.
    """
    if not result or "aggregate" not in result:
        return None
    from .sweep import markdown_report

    cells = {}
    for cell, c in result["aggregate"]["cells"].items():
        cells[cell] = {"name": (result.get("cells") or {}).get(cell, cell), "languages": c["languages"], "tested": c["tested"],
                       "not_tested": c["not_tested"],
                       "predicted": [e for e, s in c["encodings"].items() if s["predicted_majority"]],
                       "encodings": c["encodings"]}
    return {"complete": bool(result.get("complete", True)), "census_run": result.get("census_run"),
            "encodings": list(result["encodings"]), "cells": cells, "contradictions": list(result["contradictions"]),
            "sample": result.get("sample"), "runs": result.get("runs"), "markdown": markdown_report(result)}
