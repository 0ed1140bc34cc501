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


from langclass.core.base.errors import InputError, LimitExceeded
from langclass.models.training.specs import TrainOverrides, _Integral  # integral numbers: 2 and 2.0, never true or "2"
from langclass.models.experiments.sweep import (CAUSAL_SWEEP_ENCODINGS, STRICT_SWEEP_CATALOGUE, SWEEP_CELL_ENCODINGS,
                                               check_sweep_encodings)

__all__ = ["SweepRequest", "build_sweep_spec", "run_sweep_job", "sweep_report", "census_run_spec", "cell_bounds"]

SweepEncoding = Literal[tuple(dict.fromkeys(STRICT_SWEEP_CATALOGUE + CAUSAL_SWEEP_ENCODINGS))]  # type: ignore[valid-type]
"""One of the encodings a sweep trains (:data:`~langclass.models.experiments.sweep.SWEEP_ENCODINGS` and
:data:`~langclass.models.experiments.sweep.SWEEP_TRAINED_MODELS` in the strict setting,
:data:`~langclass.models.experiments.sweep.CAUSAL_SWEEP_ENCODINGS` in the causal one)."""


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
    per_cell: Annotated[int, Field(ge=1, le=1000), _Integral, Strict()] | None = Field(None, description="languages drawn per cell of the lattice (default: the profile's — 4 strict, 3 causal at cpu — else 10)")
    profile: Literal["cpu", "paper"] = Field("cpu", description="cpu (2-core CPU, about an hour for N=3, 10 per cell) or paper (App. E.2, GPU)")
    seed: Annotated[int, Field(ge=0, le=2**31 - 1), _Integral, Strict()] = Field(0, description="seed of the draw")
    encodings: list[SweepEncoding] | None = Field(None, min_length=1, max_length=len(STRICT_SWEEP_CATALOGUE),
                                                  description="encodings to train in every cell (default: the setting's: per strict "
                                                              "cell the predicted model and one or two baselines, "
                                                              "SWEEP_CELL_ENCODINGS; nope, learned, rope, alibi in the causal one; a "
                                                              "suite: nope and learned)")
    setting: Literal["strict", "causal"] | None = Field(None, description="strict (default; strict mask, BOS w EOS, readout at EOS; the seven "
                                                        "cells) or causal (non-strict mask, BOS w, readout at the last position; the cells "
                                                        "split by C-RASP; the default of a suite). Both settings: queue one sweep of each "
                                                        "(langclass sweep --setting both runs them together)")
    overrides: TrainOverrides | None = Field(None, description="experiment settings to change (max_steps, test_lengths, …), as --overrides")
    census_run: str | None = Field(None, min_length=1, max_length=64, pattern=r"^[^\x00]*$",
                                   description="id of a stored census run (GET /v1/census) to sample from instead of enumerating")
    max_attempts: Annotated[int, Field(ge=1, le=10), _Integral, Strict()] | None = Field(None, description="claims allowed if workers die (default LANGCLASS_JOB_MAX_ATTEMPTS)")
    suite: str | None = Field(None, min_length=1, max_length=64, pattern=r"^[^\x00]*$",
                              description="train every language of this published suite instead of a census sample "
                                          "(state-tracking-crasp; docs/sweep.md, 'The published suite')")
    setting: Literal["strict", "causal"] | None = Field(None, description="with suite: the training setting (default causal)")
    task: Literal["recognition", "state_prediction"] | None = Field(None, description="with suite: the training task (default recognition)")
    limit: Annotated[int, Field(ge=1, le=10_000), _Integral, Strict()] | None = Field(None, description="with suite: only its first N languages")
    only: list[Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[^\x00]*$")]] | None = Field(
        None, min_length=1, max_length=1000, description="with suite: only these languages (the suite's names)")


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


def cell_bounds(profile_counts: Any, class_keys: list[str], states: int, setting: str = "strict") -> dict[str, int]:
    """Cell → languages of a stored run with ≤ ``states`` states in it (from the run's
    ``census_profiles`` rows ``(profile text, states, count)``; an upper bound on what can be drawn:
    the trivial languages are only excluded when the members are read); the cells of ``setting``."""
    from langclass.core.census.sample import PARTITIONS, cell_of

    cells = PARTITIONS[setting][0]
    out = {c: 0 for c in cells}
    for text, n, count in profile_counts:
        if n > states:
            continue
        prof = {k: (None if ch == "-" else ch == "1") for k, ch in zip(class_keys, text)}
        cell = cell_of(prof, cells)
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
    from langclass.core.census.sample import MAX_SAMPLE_LANGUAGES, PARTITIONS, check_census_size
    from langclass.models.experiments.sweep import MAX_SWEEP_RUNS, check_sweep, sweep_profiles, sweep_spec

    from .sweep import DEFAULT_PER_CELL, check_census_run, sweep_test_lengths, train_spec_for

    if body.suite is not None:
        return _suite_spec(body, limits)
    if body.limit is not None or body.only or body.task is not None:
        raise InputError("limit, only and task need suite", field="suite")
    setting = body.setting or "strict"
    cells, _names, keys = PARTITIONS[setting]
    check_sweep_encodings(setting, body.encodings or ())
    if census_run is not None:
        states = body.states if body.states is not None else int(census_run.max_states)
        alphabet = body.alphabet if body.alphabet is not None else int(census_run.alphabet_size)
        check_census_run(census_run, states, alphabet, keys)
    else:
        states = body.states if body.states is not None else 3
        alphabet = body.alphabet if body.alphabet is not None else 2
        check_census_size(states, alphabet, max_languages=MAX_SAMPLE_LANGUAGES)
    overrides = body.overrides.model_dump(mode="json", exclude_none=True) if body.overrides is not None else None
    sweep_test_lengths(body.profile, overrides, setting)
    encodings = list(dict.fromkeys(body.encodings)) if body.encodings else None  # None: the setting's default
    if encodings is None and setting == "causal":
        encodings = list(CAUSAL_SWEEP_ENCODINGS)
    per_language = 0
    for encs in ([encodings] if encodings else list(dict.fromkeys(SWEEP_CELL_ENCODINGS.values()))):
        one = sweep_spec(train_spec_for(list(encs), setting)(_representative(alphabet)), body.profile, overrides=overrides)
        per_language = max(per_language, check_sweep([one], limits=limits))
    per_cell = body.per_cell if body.per_cell is not None else (sweep_profiles(setting)[body.profile].get("per_cell")
                                                                 or DEFAULT_PER_CELL)
    if census_run is not None and run_profile_counts is not None:
        sizes = cell_bounds(run_profile_counts, list(census_run.class_keys), states, setting)
        most = sum(min(per_cell, n) for n in sizes.values())
    else:
        most = len(cells) * per_cell
    if most * per_language > MAX_SWEEP_RUNS:
        raise LimitExceeded("max_sweep_runs", MAX_SWEEP_RUNS,
                            f"the sweep could train {most * per_language:,} runs ({most:,} languages × {per_language} runs), more than "
                            f"max_sweep_runs = {MAX_SWEEP_RUNS:,}", field="per_cell")
    return {"states": states, "alphabet": alphabet, "per_cell": per_cell, "seed": body.seed, "profile": body.profile,
            "setting": setting, "encodings": encodings, "overrides": overrides,
            "census_run": census_run_spec(census_run) if census_run is not None else None,
            "runs_bound": most * per_language}


def _suite_spec(body: SweepRequest, limits: Any) -> dict[str, Any]:
    """The job spec of a suite sweep: the suite, its languages and one language's spec checked.

    Raises:
        InputError: unknown suite, names not in it, a sweep-only field given (``census_run``,
            ``states``, ``alphabet``, ``per_cell``). LimitExceeded: ``max_sweep_runs``, or a job limit of one language's experiment.
    """
    from langclass.core.base.errors import InputError
    from langclass.models.experiments.sweep import MAX_SWEEP_RUNS, check_sweep, sweep_spec

    from langclass.models.training.specs import check_task

    from .suite import SUITE_ENCODINGS, SUITE_STRICT_ENCODINGS, SUITE_SWEEP_PROFILES, select_languages
    from .sweep import sweep_test_lengths, train_spec_for

    for name in ("census_run", "states", "alphabet", "per_cell"):  # the census sweep's fields
        if getattr(body, name) is not None:
            raise InputError(f"{name} does not apply to a suite sweep", field=name)
    langs = select_languages(body.suite, only=body.only, limit=body.limit)
    overrides = body.overrides.model_dump(mode="json", exclude_none=True) if body.overrides is not None else None
    profile = SUITE_SWEEP_PROFILES[body.profile]
    setting, task = body.setting or "causal", body.task or "recognition"
    check_task(setting, task)
    sweep_test_lengths(profile, overrides, setting)
    encodings = (list(dict.fromkeys(body.encodings)) if body.encodings
                 else list(SUITE_ENCODINGS if setting == "causal" else SUITE_STRICT_ENCODINGS))
    check_sweep_encodings(setting, encodings)  # as a census sweep: only the setting's encodings (a 422 before queueing)
    widest = max(langs, key=lambda lang: len(lang.alphabet))  # the widest alphabet stands for every language's limits
    spec_for = train_spec_for(encodings, setting, task=task)
    per_language = check_sweep([sweep_spec(spec_for(widest.dfa()), profile, overrides=overrides)], limits=limits)
    if len(langs) * per_language > MAX_SWEEP_RUNS:
        raise LimitExceeded("max_sweep_runs", MAX_SWEEP_RUNS, f"the suite would train {len(langs) * per_language:,} runs", field="suite")
    return {"suite": body.suite, "setting": setting, "task": task, "only": body.only, "limit": body.limit, "profile": body.profile,
            "encodings": encodings, "overrides": overrides, "runs_bound": len(langs) * per_language}


def _partial(exc: Any, spec: Mapping[str, Any]) -> dict[str, Any]:
    """A cancelled or stopped sweep's finished languages, aggregated like a whole one."""
    from langclass.core.census.sample import PARTITIONS
    from langclass.models.experiments.sweep_report import aggregate, contradictions

    from .sweep import encodings_of

    setting = spec.get("setting", "strict")
    cells, names, _keys = PARTITIONS[setting]
    records = list(exc.partial.get("records") or [])
    labels = encodings_of(records, spec.get("encodings"))
    return {**{k: spec.get(k) for k in ("states", "alphabet", "per_cell", "seed", "profile")}, "setting": setting,
            "census_run": _summary(spec.get("census_run")), "cells": {c: names[c] for c in cells}, "encodings": labels,
            "aggregate": aggregate(records, list(cells), labels), "contradictions": contradictions(records),
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
        if spec.get("suite"):
            from .suite import run_suite

            result = run_suite(spec["suite"], out_dir, profile=spec.get("profile", "cpu"), setting=spec.get("setting") or "causal",
                               task=spec.get("task") or "recognition",
                               encodings=spec.get("encodings"), only=spec.get("only"), limit=spec.get("limit"),
                               overrides=spec.get("overrides"), limits=limits, progress=on_language, write=False,
                               should_cancel=should_cancel, language_progress=on_run)
        else:
            result = run(int(spec["states"]), int(spec["alphabet"]), int(spec["per_cell"]), int(spec["seed"]), out_dir,
                         profile=spec.get("profile", "cpu"), encodings=spec.get("encodings"), overrides=spec.get("overrides"),
                         limits=limits, progress=on_language, census_run=run_row, write=False, should_cancel=should_cancel,
                         language_progress=on_run, setting=spec.get("setting", "strict"))
    except SweepCancelled as exc:
        if not spec.get("suite"):  # a suite run attaches its own partial report (run_suite)
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
        None without a result; for a suite sweep ``{"complete", "suite", "source", "setting", "encodings",
        "agreement", "rows", "runs", "markdown": suite.md's tables}``; else ``{"complete", "census_run", "encodings", "cells": {cell: {"name",
        "languages", "tested", "not_tested", "predicted": [encodings predicted sufficient for most of
        the cell's tested languages], "encodings": {encoding: {"languages", "reached", "share",
        "predicted", "predicted_majority"}}}}, "contradictions": [{kind, cell, fingerprint, dfa,
        encoding, longest_perfect_length, longest_tested_length, accuracy, reason, note}],
        "sample", "runs", "markdown": sweep.md}``.
    """
    if result and "rows" in result and "agreement" in result:  # a suite sweep
        from langclass.models.experiments.suite_report import markdown_suite

        return {"complete": bool(result.get("complete", True)), "suite": result.get("suite"), "source": result.get("source"),
                "setting": result.get("setting"), "encodings": list(result["encodings"]), "agreement": result["agreement"],
                "rows": list(result["rows"]), "runs": result.get("runs"),
                "markdown": markdown_suite(result["rows"], result["agreement"], result["encodings"])}
    if not result or "aggregate" not in result:
        return None
    from .sweep import markdown_report

    cells = {}
    for cell, c in result["aggregate"]["cells"].items():
        cells[cell] = {"name": (result.get("cells") or {}).get(cell, cell), "languages": c["languages"], "tested": c["tested"],
                       "not_tested": c["not_tested"],
                       "predicted": [e for e, s in c["encodings"].items() if s["predicted_majority"]],
                       "encodings": c["encodings"]}
    return {"complete": bool(result.get("complete", True)), "setting": result.get("setting", "strict"), "census_run": result.get("census_run"),
            "encodings": list(result["encodings"]), "cells": cells, "contradictions": list(result["contradictions"]),
            "sample": result.get("sample"), "runs": result.get("runs"), "markdown": markdown_report(result)}
