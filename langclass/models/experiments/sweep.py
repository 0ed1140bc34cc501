"""The sweep: the encoding prediction tested by training across a stratified sample of census languages.

For every sampled language (:func:`langclass.core.census.sample.stratified_sample`) the sweep runs
:func:`langclass.models.experiments.experiment.run_experiment` with every catalogue encoding (:data:`SWEEP_ENCODINGS`,
batched grids as a train job) and the prediction the caller's ``spec_for`` attaches — the app layer
passes the train job's (:func:`langclass.app.usecases.experiments.build_train_spec`, *Disentangling
the Expressivity of RoPE*, §2.2, Thm 3.1, Thm 3.2, Cor. 4.1). Each finished language is written to
``out_dir/languages/<fingerprint>.json`` before the next starts; a rerun with the same out_dir reads
those and trains only the rest (a kill loses at most the language in progress).
The report (:mod:`langclass.models.experiments.sweep_report`) aggregates per cell × encoding and lists the
contradicting runs.

The causal setting (``setting`` in the specs ``spec_for`` gives) trains :data:`CAUSAL_SWEEP_ENCODINGS`
with :data:`CAUSAL_SWEEP_PROFILES`; every record names its ``setting``.

Profiles (:data:`SWEEP_PROFILES`): ``"cpu"`` — the quick model, a short training and test lengths
41–100, sized so N = 3 over two letters with 10 languages per cell (70 languages × 6 encodings)
takes about an hour on a 2-core CPU; ``"paper"`` — App. E.2 (5 layers, 5 seeds × 3 learning rates,
test lengths 41–500) for a GPU.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded

__all__ = ["SWEEP_ENCODINGS", "SWEEP_TRAINED_MODELS", "STRICT_SWEEP_CATALOGUE", "check_sweep_encodings", "SWEEP_CELL_ENCODINGS", "SWEEP_PROFILES", "SUITE_SWEEP_PROFILES",
           "CAUSAL_SWEEP_ENCODINGS", "CAUSAL_SWEEP_PROFILES", "sweep_profiles", "MAX_SWEEP_RUNS", "SweepLanguage", "SweepCancelled",
           "sweep_spec", "check_sweep",
           "language_record", "run_language", "run_sweep"]

SWEEP_ENCODINGS: tuple[str, ...] = ("nope", "sinusoidal", "sinusoidal_periodic", "rope", "rope_periodic", "alibi")
"""The catalogue encodings of *Disentangling the Expressivity of RoPE* (``--encoding`` chooses among
these and :data:`SWEEP_TRAINED_MODELS`; without it each cell trains :data:`SWEEP_CELL_ENCODINGS`)."""

SWEEP_TRAINED_MODELS: tuple[str, ...] = ("recency", "recency_periodic", "hard_nope", "hard_mod_onehot")
"""The models the product predicts beyond the soft catalogue: trainable recency heads (LTL[P,Y]),
with periodic RoPE (LTL[P,Y,MOD]), unique hard attention with NoPE (star-free) and with marks i mod m
(FO[<,MOD])."""

STRICT_SWEEP_CATALOGUE: tuple[str, ...] = SWEEP_ENCODINGS + SWEEP_TRAINED_MODELS
"""What a strict sweep may train: the soft catalogue and the product's other predicted models."""


def check_sweep_encodings(setting: str, encodings: Sequence[str]) -> None:
    """Every encoding is one the ``setting``'s sweep trains (:data:`CAUSAL_SWEEP_ENCODINGS` in the causal
    setting, :data:`STRICT_SWEEP_CATALOGUE` in the strict one).

    Raises:
        InputError: the first that is not (``field="encodings[i]"``)."""
    catalogue = CAUSAL_SWEEP_ENCODINGS if setting == "causal" else STRICT_SWEEP_CATALOGUE
    for i, e in enumerate(encodings):
        if e not in catalogue:
            raise InputError(f"encodings[{i}]: {e!r} is not an encoding of the {setting} setting's sweep "
                             f"({', '.join(catalogue)})", field=f"encodings[{i}]")


SWEEP_CELL_ENCODINGS: dict[str, tuple[str, ...]] = {
    "ltl_p": ("nope", "rope"),
    "mod": ("rope_periodic", "nope"),
    "y": ("recency", "nope", "rope"),
    "y_mod": ("recency_periodic", "rope_periodic"),
    "sf": ("hard_nope", "nope"),
    "fo_mod": ("hard_mod_onehot", "rope_periodic"),
    "beyond": ("nope", "rope_periodic"),
}
"""Cell → what a sweep trains there by default: first the model the product predicts sufficient in
that cell (none in ``beyond``), then one or two baselines — the soft encoding that is predicted in the
cell below, and conventional RoPE where the classifier's soft answer names it (LTL[P,Y]). Training
only these keeps the CPU profile within its time budget (docs/sweep.md)."""

SWEEP_PROFILES: dict[str, dict[str, Any]] = {
    # 2-core CPU, the strict half of `langclass sweep --setting both`: each cell's SWEEP_CELL_ENCODINGS (2-3
    # models), at most 4 languages per cell. Measured with `nice` on the shared 2-core machine (load ~7):
    # 48-66 s per language (N = 3, K = 2, per_cell = 1: 7 languages in 462 s), so the 28 languages of
    # 4 per cell take 22-31 minutes; with the causal half (~11 minutes) the whole sweep fits the hour.
    "cpu": {"base": "quick", "seeds": [0], "learning_rates": [1e-3], "per_cell": 4,
            "overrides": {"max_steps": 700, "patience": 200, "train_lengths": {"range": [1, 40]},
                          "test_lengths": {"range": [41, 100]}, "eval_per_length": 64}},
    # Disentangling the Expressivity of RoPE, App. E.2 (the experiment's "paper" profile), for a GPU.
    "paper": {"base": "paper", "seeds": None, "learning_rates": None, "overrides": {}},
}
"""Sweep profile → the experiment profile it starts from, seeds, learning rates and overrides."""

SUITE_SWEEP_PROFILES: dict[str, dict[str, Any]] = {
    # The published suite (langclass.core.ingest.suite) on a 2-core CPU: its lengths (train up to 50,
    # test up to 500) with the test lengths sampled (51, then one per 100, 32 strings each) and a short
    # training (≤ 200 steps of batch 32): 9.6 CPU-seconds per language on average in the causal setting
    # with NoPE and learned absolute (11 languages measured; 300 steps of batch 64 and ten test lengths
    # took 25-29), so the 123 distinct languages take about 20 CPU-minutes (docs/sweep.md, "The
    # published suite").
    "suite-cpu": {"base": "quick", "seeds": [0], "learning_rates": [1e-3], "per_cell": None,
                  "overrides": {"max_steps": 200, "patience": 100, "batch_size": 32, "train_lengths": {"range": [1, 50]},
                                "test_lengths": {"lengths": [51, 100, 200, 300, 400, 500]}, "eval_per_length": 32}},
    # The suite's lengths on the paper profile (App. E.2 model and grid), for a GPU.
    "suite-paper": {"base": "paper", "seeds": None, "learning_rates": None, "per_cell": None,
                    "overrides": {"train_lengths": {"range": [1, 50]}, "test_lengths": {"range": [51, 500]}}},
}
"""The published suite's profiles (:mod:`langclass.app.usecases.suite`), in either setting: the suite's lengths."""
SWEEP_PROFILES.update(SUITE_SWEEP_PROFILES)

CAUSAL_SWEEP_ENCODINGS: tuple[str, ...] = ("nope", "learned", "rope", "alibi")
"""The encodings of the causal setting (NoPE, learned absolute positions, RoPE, ALiBi): the positional
schemes of causal decoders that *A Formal Framework for Understanding Length Generalization in
Transformers* and *Counting Like Transformers* discuss."""

CAUSAL_SWEEP_PROFILES: dict[str, dict[str, Any]] = {
    # 2-core CPU, the causal half of `langclass sweep --setting both`. The runs train one after another (the
    # grouped trainer is strict-mask only), so the model is smaller than the strict profile's (d_model 16,
    # 2 heads, 2 layers), batch 32, at most 200 steps, every third test length 41..100, 16 strings per
    # length, 3 languages per cell. Measured with `nice` on the shared 2-core machine (load average ~7):
    # 32.5 s for a^*b^* with the 4 encodings (the quick profile's 300 steps, batch 64, d_model 32 took
    # 91.7 s); the whole causal sweep of N = 3, K = 2 (9 non-empty cells, 27 languages, 108 runs) took
    # 675 s, 10-31 s per language (docs/sweep.md).
    "cpu": {"base": "quick", "seeds": [0], "learning_rates": [1e-3], "per_cell": 3,
            "overrides": {"max_steps": 200, "patience": 50, "batch_size": 32, "d_model": 16, "n_heads": 2, "d_ff": 32,
                          "train_lengths": {"range": [1, 40]}, "test_lengths": {"range": [41, 100], "step": 3},
                          "eval_per_length": 16}},
    # App. E.2 sizes for a GPU, as the strict setting's paper profile.
    "paper": {"base": "paper", "seeds": None, "learning_rates": None, "per_cell": None, "overrides": {}},
}
"""Sweep profile → the causal setting's experiment profile, seeds, learning rates, overrides and the
most languages per cell it draws (``per_cell``: None = the sweep's ``per_cell``)."""
CAUSAL_SWEEP_PROFILES.update(SUITE_SWEEP_PROFILES)


def sweep_profiles(setting: str = "strict") -> dict[str, dict[str, Any]]:
    """:data:`SWEEP_PROFILES` (``"strict"``) or :data:`CAUSAL_SWEEP_PROFILES` (``"causal"``).

    Raises:
        InputError: another setting (``field="setting"``)."""
    if setting == "strict":
        return SWEEP_PROFILES
    if setting == "causal":
        return CAUSAL_SWEEP_PROFILES
    raise InputError(f"unknown setting {setting!r}; expected strict or causal", field="setting")


MAX_SWEEP_RUNS = 20_000
"""Most training runs (languages × encodings × seeds × learning rates) in one sweep (limit ``max_sweep_runs``)."""

SweepLanguage = tuple[str, DFA, Mapping[str, Any]]
"""(cell, canonical DFA, class profile) of one sampled language."""


class SweepCancelled(Exception):
    """``should_cancel()`` returned True during :func:`run_sweep`; ``partial`` holds
    ``{"records": the languages finished so far (sample order), "languages": sample size,
    "complete": False}`` (their records are also in ``out_dir``, so a rerun resumes from them)."""

    def __init__(self, partial: dict[str, Any]) -> None:
        super().__init__("the sweep was cancelled")
        self.partial = partial


def sweep_spec(base: Mapping[str, Any], profile: str, *, seeds: Sequence[int] | None = None,
               overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The experiment spec of one language: ``base`` (``language``, ``encodings``, ``prediction``,
    ``setting`` and, when given, ``task`` from the caller's ``spec_for``) with the sweep profile's
    settings for that setting (:func:`sweep_profiles`), then ``seeds`` / ``overrides``.

    Raises:
        InputError: unknown profile (``field="profile"``) or setting.
    """
    profiles = sweep_profiles(base.get("setting", "strict"))
    if profile not in profiles:
        raise InputError(f"unknown sweep profile {profile!r}; expected one of {', '.join(profiles)}", field="profile")
    p = profiles[profile]
    spec = {k: v for k, v in base.items() if k in ("language", "encodings", "prediction", "setting", "task")}
    spec["profile"] = p["base"]
    spec["overrides"] = {**p["overrides"], **(overrides or {})}
    if seeds is not None:
        spec["seeds"] = list(seeds)
    elif p["seeds"] is not None:
        spec["seeds"] = list(p["seeds"])
    if p["learning_rates"] is not None:
        spec["learning_rates"] = list(p["learning_rates"])
    return spec


def check_sweep(specs: Sequence[Mapping[str, Any]], *, limits: Any = None, max_runs: int = MAX_SWEEP_RUNS) -> int:
    """Check every language's spec (:func:`langclass.models.experiments.experiment.validate_spec`: each named job
    limit, parameters and memory) and the total number of runs, before anything trains.

    Returns:
        The total number of training runs.

    Raises:
        LimitExceeded: ``max_sweep_runs``, or any job limit of one language's experiment.
        InputError: a malformed spec.
    """
    from langclass.models.experiments.experiment import validate_spec
    from langclass.models.training.specs import DEFAULT_JOB_LIMITS

    total = 0
    for spec in specs:
        norm = validate_spec(spec, limits or DEFAULT_JOB_LIMITS)
        total += len(norm["encodings"]) * len(norm["seeds"]) * len(norm["learning_rates"])
    if total > max_runs:
        raise LimitExceeded("max_sweep_runs", max_runs, f"the sweep would train {total:,} runs, more than max_sweep_runs = {max_runs:,}",
                            field="per_cell")
    return total


def language_record(cell: str, dfa: DFA, profile: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    """The sweep's record of one language from its experiment result (the shape in
    :mod:`langclass.models.experiments.sweep_report`; the best run of each encoding's grid counts, as in App. E)."""
    pred = (result.get("spec") or {}).get("prediction") or {}
    reasons = pred.get("per_encoding") or {}
    encodings: dict[str, Any] = {}
    for label, s in result["summary"].items():
        r = reasons.get(label) or {}
        encodings[s["encoding_name"]] = {  # one encoding per family in a sweep: keyed by family, so cells compare
            "label": label,
            "encoding_name": s["encoding_name"],
            "encoding_params": s["encoding_params"],
            "predicted_sufficient": r.get("sufficient"),
            "reason": r.get("reason"),
            "longest_perfect_length": int(s["longest_perfect_length"]["max"]),
            "accuracy": float(s["accuracy"]["max"]),
            "reached_longest": s["reached_longest"] > 0,
            "runs": s["runs"],
        }
    v = result["verdict"]
    return {"cell": cell, "setting": result.get("setting", "strict"), "fingerprint": dfa.fingerprint(), "dfa": dfa.to_canonical_dict(),
            "profile": {k: v2 for k, v2 in profile.items()}, "longest_tested_length": result["longest_tested_length"],
            "length_generalization_tested": bool(v["length_generalization_tested"]),
            "unseen_two_class_lengths": v.get("unseen_two_class_lengths"), "encodings": encodings,
            "language_period": pred.get("language_period"), "wall_s": result["wall_s"], "code_version": result["code_version"]}


def run_language(cell: str, dfa_json: Mapping[str, Any], profile: Mapping[str, Any], spec: Mapping[str, Any], *,
                 should_cancel: Callable[[], bool] | None = None, limits: Any = None,
                 progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Train one language's grid and return its record (a plain function of JSON data, so a Ray task
    can run it).

    Args:
        should_cancel, limits, progress: passed to :func:`langclass.models.experiments.experiment.run_experiment`.

    Raises:
        ExperimentCancelled: ``should_cancel()`` turned True during the training."""
    from langclass.core.ingest.source import DfaSource, parse_language

    from langclass.models.experiments.experiment import run_experiment

    dfa = parse_language(DfaSource(dict(dfa_json), field="language")).dfa
    return language_record(cell, dfa, profile, run_experiment(spec, should_cancel=should_cancel, limits=limits, progress=progress))


Runner = Callable[[list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]]], Iterable[dict[str, Any]]]
"""Runs :func:`run_language` on each ``(cell, dfa_json, profile, spec)`` and yields the records as they finish (any order)."""


def _local_runner(todo: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]], *, should_cancel: Callable[[], bool] | None = None,
                  limits: Any = None, language_progress: Callable[[int, dict[str, Any]], None] | None = None) -> Iterable[dict[str, Any]]:
    for i, args in enumerate(todo):
        report = None if language_progress is None else (lambda r, i=i: language_progress(i, r))
        yield run_language(*args, should_cancel=should_cancel, limits=limits, progress=report)


def _write(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(tmp, path)


def run_sweep(languages: Sequence[SweepLanguage], spec_for: Callable[[DFA], Mapping[str, Any]], out_dir: str | Path, *,
              profile: str = "cpu", seeds: Sequence[int] | None = None, overrides: Mapping[str, Any] | None = None,
              runner: Runner | None = None, limits: Any = None, max_runs: int = MAX_SWEEP_RUNS,
              progress: Callable[[int, int, Mapping[str, Any] | None], None] | None = None,
              should_cancel: Callable[[], bool] | None = None,
              language_progress: Callable[[int, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Train every language of the sample with every encoding of its spec; resumable.

    Args:
        languages: ``(cell, dfa, profile)`` of each sampled language.
        spec_for: the language's ``language`` / ``encodings`` / ``prediction`` (the train job's spec).
        out_dir: records go to ``out_dir/languages/<fingerprint>.json``; records already there are
            reused (a rerun trains only the missing languages).
        profile: ``"cpu"`` or ``"paper"`` (:data:`SWEEP_PROFILES`, or :data:`CAUSAL_SWEEP_PROFILES` for
            specs of the causal setting).
        seeds, overrides: replace the profile's seeds / add to its overrides.
        runner: how the languages train (default: one after another here; the Ray runner of
            :mod:`langclass.app.execution.sweep_ray` runs one task per language).
        limits: the job limits each language's experiment is checked against.
        max_runs: limit ``max_sweep_runs`` on the total runs.
        progress: called with ``(done, total, record or None)`` after each language.
        should_cancel: polled before each language and (local runner) during its training; when it
            turns True the sweep stops with :exc:`SweepCancelled` (the finished languages stay in
            ``out_dir``; a rerun resumes from them).
        language_progress: local runner only: ``(index in the languages still to train, the
            experiment's progress report)`` while a language trains.

    Returns:
        ``{"records": [...] in sample order, "runs": total runs, "resumed": languages read from out_dir,
        "profile", "spec_settings", "wall_s"}``.

    Raises:
        LimitExceeded, InputError: as :func:`check_sweep` — before any training.
        SweepCancelled: ``should_cancel()`` turned True (``.partial``: the finished records).
    """
    from langclass.models.experiments.experiment import ExperimentCancelled

    t0 = time.perf_counter()
    out = Path(out_dir)
    (out / "languages").mkdir(parents=True, exist_ok=True)
    specs = [sweep_spec(spec_for(dfa), profile, seeds=seeds, overrides=overrides) for _c, dfa, _p in languages]
    total_runs = check_sweep(specs, limits=limits, max_runs=max_runs)
    records: dict[str, dict[str, Any]] = {}
    todo = []
    for (cell, dfa, prof), spec in zip(languages, specs):
        fp = dfa.fingerprint()
        path = out / "languages" / f"{fp}.json"
        if path.exists():
            try:
                rec = json.loads(path.read_text(encoding="utf-8"))
                if rec.get("fingerprint") == fp and rec.get("spec") == json.loads(json.dumps(spec, default=str)):
                    records[fp] = rec
                    continue
            except (OSError, ValueError):
                pass  # a damaged record is trained again
        todo.append((cell, dfa.to_canonical_dict(), dict(prof), spec))
    resumed = len(records)
    if progress is not None:
        progress(resumed, len(languages), None)

    def cancelled() -> SweepCancelled:
        done = [records[dfa.fingerprint()] for _c, dfa, _p in languages if dfa.fingerprint() in records]
        return SweepCancelled({"records": done, "languages": len(languages), "complete": False, "profile": profile})

    if runner is None:
        results = _local_runner(todo, should_cancel=should_cancel, limits=limits, language_progress=language_progress)
    else:
        results = runner(todo)
    it = iter(results)
    while True:
        if should_cancel is not None and should_cancel():
            raise cancelled()
        try:
            rec = next(it)
        except StopIteration:
            break
        except ExperimentCancelled:
            raise cancelled() from None
        spec = next(t[3] for t in todo if t[1] == rec["dfa"])
        rec["spec"] = json.loads(json.dumps(spec, default=str))
        _write(out / "languages" / f"{rec['fingerprint']}.json", rec)
        records[rec["fingerprint"]] = rec
        if progress is not None:
            progress(len(records), len(languages), rec)
    ordered = [records[dfa.fingerprint()] for _c, dfa, _p in languages]
    setting = specs[0].get("setting", "strict") if specs else "strict"
    return {"records": ordered, "runs": total_runs, "resumed": resumed, "profile": profile,
            "settings": sweep_profiles(setting)[profile], "overrides": dict(overrides or {}), "seeds": list(seeds) if seeds else None,
            "wall_s": time.perf_counter() - t0}
