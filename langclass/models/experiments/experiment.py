"""Experiments that test an encoding prediction by training: language × encodings × seeds × rates.

The single entry point is :func:`run_experiment`. It trains one recognizer per
(encoding, seed, learning rate), evaluates each on the same test strings, and compares the
outcome with the prediction (*Disentangling the Expressivity of RoPE*, §3.5 and App. E: max /
mean / std of accuracy and of the longest perfect length N* over the run grid; Table 2).

Spec (a JSON-ready dict; every key but ``language`` and ``encodings`` optional)::

    {
      "language": {...},            # DFA JSON (either form of core.parse.read_dfa_json): the canonical form {"alphabet", "initial", "accepting",
                                    #   "transitions": [[q', ...] per state, letters in alphabet order]}
                                    #   or the input schema {"alphabet", "states", "initial",
                                    #   "accepting", "transitions": {q: {symbol: q'}}}
      "encodings": ["nope", {"name": "rope_periodic", "params": {"period": 2}}, ...],
      "profile": "quick",           # "quick" (2-core CPU, ~a minute), "paper-lite" (2-core CPU,
                                    #   test lengths 41..500) or "paper" (App. E.2)
      "seeds": [0, 1, 2],           # default: the profile's seeds
      "learning_rates": [1e-3],     # default: the profile's learning rates
      "overrides": {                # any of the profile settings below
        "max_steps": 2000, "batch_size": 64, "patience": 100,
        "train_lengths": {"range": [1, 40]}, "test_lengths": {"range": [41, 100]} | {"lengths": [41, 45, 50]},
        "eval_per_length": 512, "near_miss_fraction": 0.5,
        "n_layers": 2, "d_model": 32, "n_heads": 4, "d_ff": 64, "length_scale": "none" | "log",
        "weight_decay": 0.01, "grad_clip": 1.0, "warmup_steps": 0,
        "device": "auto", "precision": "auto"
      },
      "prediction": {"sufficient": ["rope_periodic"], "reason": "...", "source": "..."},
      "eval_seed": 0,               # seeds the test strings (shared by every run)
      "batched": true,              # train (and evaluate) runs sharing a model shape together
      "checkpoint_dir": null,       # per-run checkpoints under this directory
      "setting": "strict",          # or "causal": non-strict mask, BOS w (no EOS), readout at the last position
      "task": "recognition"         # or "state_prediction" (causal only): the DFA state at every position
    }

Setting (:data:`~langclass.models.training.train.SETTINGS`): ``strict`` is the protocol of
*Disentangling the Expressivity of RoPE* (strict mask, ``BOS w EOS``, readout at EOS); ``causal``
is a causal decoder's (mask ``nonstrict``, ``BOS w``, readout ``last`` — the framing of the C-RASP
construction). The result and every run record name their ``setting`` and ``task``. With
``state_prediction`` a run's accuracy at a length is the share of test words whose every position's
state is right, and N* is defined from it as for recognition. The ``learned`` encoding gets
``max_positions`` = the longest train or test length + 2 unless the spec gives it (rows past the
training lengths are trained by no example and stay at their initialisation).

Lengths (``train_lengths``, ``test_lengths``) are written ``{"range": [a, b]}`` (every length a..b,
optional ``"step"``) or ``{"lengths": [n1, n2, …]}`` (exactly those). The old forms — a bare list,
where ``[a, b]`` means the range a..b, and ``{"min", "max", "step"}`` — are still read; the result's
``notes`` then says how they were read and how to write them.

Result (JSON-ready; ``accuracy_by_length`` keys are decimal strings, as JSON requires)::

    {"runs": [{"encoding": label, "encoding_name", "encoding_params", "manifest", "manifest_digest",
               "seed", "learning_rate", "steps", "stopped", "train_accuracy", "final_loss",
               "accuracy": mean over test lengths, "accuracy_by_length": {"41": 1.0, ...},
               "longest_perfect_length": N*, "reached_longest": bool, "wall_s"}, ...],
     "summary": {label: {"runs", "accuracy": {max, mean, std, min, count},
                         "longest_perfect_length": {...}, "steps": {...}, "reached_longest": int,
                         "verdict": {...}}},
     "verdict": {"prediction", "longest_tested_length", "longest_training_length",
                 "unseen_test_lengths": how many test lengths exceed every training length,
                 "length_generalization_tested": false when none does, or when at every such length the
                     language has words of one class only (then every status is "not_tested"),
                 "unseen_two_class_lengths": how many of them have both a word and a non-word,
                 "per_encoding": {label: {"status", "text", …}}, "text"},
     "language", "profile", "settings", "test_lengths", "longest_tested_length", "notes" (deprecated notation),
     "code_version", "torch_version", "device", "wall_s", "spec"}

N* convention: see :func:`langclass.models.training.evaluate.longest_perfect_length` (0 when the first
tested length already fails).

Verdict: an encoding the prediction names sufficient (``prediction.sufficient`` lists encoding
names or labels) is ``"confirmed"`` when at least one run of its grid reaches N* = the longest
tested length — Table 2 of the paper reports the best run of the grid — and ``"not_confirmed"``
otherwise (the theorem guarantees a parameterization, not that optimization finds it); the number
of runs that reached it is reported alongside. Every other encoding is ``"measured"``: its numbers
are reported without any claim.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded
from langclass.core.ingest.source import DfaSource
from langclass.core.ingest.source import parse_language as parse_source
from langclass.version import code_version

from pydantic import TypeAdapter

from langclass.models.training.data import DEFAULT_NEAR_MISS_FRACTION, LanguageSampler
from langclass.models.training.specs import (
    DEFAULT_JOB_LIMITS,
    JobLimits,
    Lengths,
    expand_lengths,
    length_count,
    length_max,
    length_notation_notes,
    parse_train_spec,
)
from langclass.models.training.evaluate import build_test_sets, evaluate_lengths, evaluate_states, longest_perfect_length
from langclass.models.training.train import (TrainConfig, TrainingCancelled, configure_threads, make_predict, make_state_check,
                                             resolve_device, train_recognizer)
from langclass.models.experiments.experiment_report import GridEncoding, format_results, summarize, verdict  # format_results: re-exported
from langclass.models.experiments.model_config import model_config as _model_config
from langclass.models.experiments.model_config import model_manifest as _manifest
from langclass.models.training.train_batched import MAX_GROUP_RUNS, batch_key, evaluate_group, train_group

__all__ = [
    "PROFILES",
    "run_experiment",
    "validate_spec",
    "format_results",
    "ExperimentCancelled",
    "MAX_RUNS",
    "MAX_TEST_LENGTH",
    "code_version",
]

MAX_RUNS = DEFAULT_JOB_LIMITS.max_runs
"""Default most runs (encodings × seeds × learning rates) in one experiment (limit ``max_runs``)."""

MAX_TEST_LENGTH = DEFAULT_JOB_LIMITS.max_test_length
"""Default longest train or test string (limit ``max_test_length``)."""

MAX_EVAL_STRINGS = DEFAULT_JOB_LIMITS.max_eval_strings
"""Default most test strings over all lengths (limit ``max_eval_strings``)."""

PROFILES: dict[str, dict[str, Any]] = {
    # Disentangling the Expressivity of RoPE, App. E.2.
    "paper": {
        "n_layers": 5,
        "d_model": 64,
        "n_heads": 8,
        "d_ff": 256,
        "length_scale": "none",
        "seeds": [0, 1, 2, 3, 4],
        "learning_rates": [1e-4, 3e-4, 5e-4],
        "batch_size": 128,
        "max_steps": 1_000_000,
        "patience": 1000,
        "train_lengths": {"range": [1, 40]},
        "test_lengths": {"range": [41, 500]},
        "eval_per_length": 512,
        "near_miss_fraction": DEFAULT_NEAR_MISS_FRACTION,
        "weight_decay": 0.01,
        "grad_clip": 1.0,
        "warmup_steps": 0,
        "device": "auto",
        "precision": "auto",
    },
    # Table 2 of Disentangling the Expressivity of RoPE (train lengths 1-40, every test length
    # 41-500) sized for a 2-core CPU: the quick model, 32 strings per test length; the runs of an
    # experiment train and evaluate together (langclass.models.training.train_batched). Attention scores are
    # scaled by ln(keys seen) for every encoding ("length_scale": "log", the log-length scaling of
    # Overcoming a Theoretical Limitation of Self-Attention): without it periodic RoPE reached only
    # N* 173-219 on (aa)*, every error a long near miss (one b among hundreds of a's) accepted
    # because soft attention dilutes the one b as 1/n; the scaling keeps its weight from
    # vanishing and carries RoPE_P to 500, while NoPE still cannot tell even from odd lengths.
    "paper-lite": {
        "n_layers": 2,
        "d_model": 32,
        "n_heads": 4,
        "d_ff": 64,
        "length_scale": "log",
        "seeds": [0],
        "learning_rates": [1e-3],
        "batch_size": 64,
        "max_steps": 1000,
        "patience": 200,
        "train_lengths": {"range": [1, 40]},
        "test_lengths": {"range": [41, 500]},
        "eval_per_length": 32,
        "near_miss_fraction": DEFAULT_NEAR_MISS_FRACTION,
        "weight_decay": 0.01,
        "grad_clip": 1.0,
        "warmup_steps": 0,
        "device": "cpu",
        "precision": "float32",
    },
    # Sized for a 2-core CPU: about a minute per encoding (issue 6 planning note).
    "quick": {
        "n_layers": 2,
        "d_model": 32,
        "n_heads": 4,
        "d_ff": 64,
        "length_scale": "none",
        "seeds": [0],
        "learning_rates": [1e-3],
        "batch_size": 64,
        "max_steps": 1500,
        "patience": 200,
        "train_lengths": {"range": [1, 40]},
        "test_lengths": {"range": [41, 100]},
        "eval_per_length": 512,
        "near_miss_fraction": DEFAULT_NEAR_MISS_FRACTION,
        "weight_decay": 0.01,
        "grad_clip": 1.0,
        "warmup_steps": 0,
        "device": "cpu",
        "precision": "float32",
    },
}



class ExperimentCancelled(Exception):
    """``should_cancel()`` returned True; ``partial`` holds the runs completed so far."""

    def __init__(self, partial: dict[str, Any]) -> None:
        super().__init__("experiment cancelled")
        self.partial = partial


# ------------------------------------------------------------------------------ spec parsing
def _language(data: Any) -> DFA:
    """The canonical minimal DFA of the spec's ``language`` (DFA JSON in either documented form,
    or its JSON text), read by the one language parser (:func:`langclass.core.ingest.source.parse_language`).

    Raises:
        DfaFormatError: malformed DFA JSON (``field`` under ``language``).
    """
    return parse_source(DfaSource(data, field="language")).dfa


MAX_LENGTHS = 100_000
"""Most distinct train or test lengths of one spec (a fixed bound, ``max_lengths``): an explicit list
holds at most as many, and a range is counted against it before it is listed (a range over 3·10⁷
with step 10 was listed — 3 million integers, 2.2 s — before the memory estimate refused it)."""


def _lengths(value: Any, field: str) -> list[int]:
    """The lengths a :data:`~langclass.models.training.specs.Lengths` value stands for (its size was checked
    against the limits before this is called).

    Raises:
        LimitExceeded: ``max_lengths`` — more than :data:`MAX_LENGTHS` lengths, counted without
            listing them."""
    _lengths_counted(value, field)
    return expand_lengths(value, field)


def _lengths_counted(value: Any, field: str) -> None:
    count = length_count(value)
    if count > MAX_LENGTHS:
        raise LimitExceeded("max_lengths", MAX_LENGTHS, f"{field.split('.')[-1]} has {count:,} lengths, more than "
                            f"{MAX_LENGTHS:,}; give a larger step or fewer lengths", field=field)



_LENGTHS = TypeAdapter(Lengths)


def _normalize(spec: Mapping[str, Any], limits: JobLimits = DEFAULT_JOB_LIMITS) -> dict[str, Any]:
    """Parse (:func:`~langclass.models.training.specs.parse_train_spec`), apply the profile, check every
    named limit, and only then expand the lengths."""
    parsed = parse_train_spec(spec)
    settings = copy.deepcopy(PROFILES[parsed.profile])
    seeds = list(parsed.seeds) if parsed.seeds is not None else settings["seeds"]
    lrs = list(parsed.learning_rates) if parsed.learning_rates is not None else settings["learning_rates"]
    del settings["seeds"], settings["learning_rates"]
    if parsed.overrides is not None:
        settings.update(parsed.overrides.model_dump(exclude_none=True))
        for key in ("train_lengths", "test_lengths"):  # keep the parsed form (model_dump made dicts of ranges)
            if getattr(parsed.overrides, key) is not None:
                settings[key] = getattr(parsed.overrides, key)
    for key in ("train_lengths", "test_lengths"):
        if isinstance(settings[key], Mapping):  # a profile's default (a spec's value is parsed already)
            settings[key] = _LENGTHS.validate_python(settings[key])
    parsed.check_limits(limits, n_seeds=len(seeds), n_rates=len(lrs), test_lengths=settings["test_lengths"],
                        eval_per_length=settings["eval_per_length"])
    for key in ("train_lengths", "test_lengths"):
        limits.check("max_test_length", length_max(settings[key]), f"overrides.{key}", f"the longest of {key}")
        _lengths_counted(settings[key], f"overrides.{key}")
    settings["train_lengths"] = _lengths(settings["train_lengths"], "overrides.train_lengths")
    settings["test_lengths"] = _lengths(settings["test_lengths"], "overrides.test_lengths")
    prediction = parsed.prediction
    if prediction is not None:
        if isinstance(prediction, str):
            prediction = {"sufficient": [prediction]}
        elif isinstance(prediction, list):
            prediction = {"sufficient": list(prediction)}
        else:
            prediction = prediction.model_dump()
    encodings = [GridEncoding(e.resolved_label(), e.name, dict(e.params)) for e in parsed.encoding_specs()]
    labels = [e.label for e in encodings]
    if len(set(labels)) != len(labels):
        raise InputError("two encodings have the same label; give them distinct params or labels", field="encodings")
    return {
        "profile": parsed.profile,
        "encodings": encodings,
        "seeds": [int(x) for x in seeds],
        "learning_rates": [float(x) for x in lrs],
        "settings": settings,
        "eval_seed": parsed.eval_seed if parsed.eval_seed is not None else 0,
        "prediction": prediction,
        "checkpoint_dir": parsed.checkpoint_dir,
        "batched": parsed.batched,
        "setting": parsed.setting,
        "task": parsed.task,
    }


# ------------------------------------------------------------------------------ entry point
def validate_spec(spec: Mapping[str, Any], limits: JobLimits = DEFAULT_JOB_LIMITS) -> dict[str, Any]:
    """Check a spec without training (what :func:`run_experiment` does first).

    Returns the normalized spec: ``profile``, ``encodings`` (objects with ``label``, ``name``,
    ``params``), ``seeds``, ``learning_rates``, ``settings`` (profile + overrides, lengths as
    lists), ``eval_seed``, ``prediction``, ``checkpoint_dir``, ``dfa`` (canonical :class:`DFA`) and
    ``model_configs`` (``{label: RecognizerConfig}``, so every encoding name and parameter is checked).

    Args:
        spec: the spec (a mapping or a :class:`~langclass.models.training.specs.TrainSpec`).
        limits: the named limits (:class:`~langclass.models.training.specs.JobLimits`; the service passes
            the ones its settings raise).

    Raises:
        InputError (and subclasses): a malformed spec, naming the field.
        LimitExceeded: any :class:`~langclass.models.training.specs.JobLimits` limit (``max_runs``,
            ``max_test_length``, ``max_eval_strings``, ``job_max_steps``, …), checked before any
            list of lengths or model is built; ``job_max_parameters`` on each run's model
            (:func:`langclass.models.training.footprint.footprint`) and ``job_max_memory_bytes`` on the
            whole job — stacked runs included (:func:`langclass.models.training.footprint.job_footprint`;
            the estimate is in the error's ``extra``).
    """
    norm = _normalize(spec, limits)
    settings = norm["settings"]
    if isinstance(spec, Mapping):
        spec_language = spec["language"]
    else:
        spec_language = spec.language
    dfa = _language(spec_language)
    model_configs = {}
    for i, e in enumerate(norm["encodings"]):
        try:
            model_configs[e.label] = _model_config(dfa, e, settings, norm["setting"], norm["task"])
        except InputError as err:
            sub = (err.field or "").split(".")[-1]
            raise type(err)(err.detail, field=f"encodings[{i}].params.{sub}" if sub and sub not in ("encoding", "params", "name") else f"encodings[{i}]") from None
    from langclass.models.training.footprint import check_footprint, check_job_memory, footprint, job_footprint

    for cfg in model_configs.values():  # each whole model, before anything is built
        check_footprint(limits, footprint(cfg, batch_size=settings["batch_size"], max_train_length=max(settings["train_lengths"]),
                                          precision=settings["precision"]), memory=False)
    # the whole job: the largest group of runs trained at once (stacked), the test strings, the process
    check_job_memory(limits, job_footprint(model_configs, settings, n_seeds=len(norm["seeds"]),
                                           n_learning_rates=len(norm["learning_rates"]), batched=norm["batched"] is not False))
    # the training settings are checked by TrainConfig itself
    TrainConfig(
        learning_rate=norm["learning_rates"][0], max_steps=settings["max_steps"], batch_size=settings["batch_size"],
        train_lengths=(settings["train_lengths"][0], settings["train_lengths"][-1]), near_miss_fraction=settings["near_miss_fraction"],
        weight_decay=settings["weight_decay"], grad_clip=settings["grad_clip"], warmup_steps=settings["warmup_steps"],
        patience=settings["patience"], precision=settings["precision"], task=norm["task"],
    )
    resolve_device(settings["device"])
    return {**norm, "dfa": dfa, "model_configs": model_configs}


def run_experiment(
    spec: Mapping[str, Any],
    *,
    progress: Callable[[dict[str, Any]], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
    limits: JobLimits | None = None,
    batched: bool | None = None,
    on_model: Callable[[dict[str, Any], Any], None] | None = None,
) -> dict[str, Any]:
    """Train and evaluate every (encoding, seed, learning rate) of ``spec``; see the module doc.

    Args:
        spec: the experiment (JSON-ready dict, documented in the module docstring).
        progress: called with ``{"phase": "sampling"|"train"|"evaluate"|"evaluated"|"done", "run", "runs", "encoding",
            "seed", "learning_rate", "step", "total", "loss", "train_accuracy",
            "last_evaluation"}`` — ``step``/``total`` count the current run's training steps,
            ``run`` (0-based) / ``runs`` the grid; ``last_evaluation`` is the last finished run's
            ``{encoding, seed, learning_rate, steps, accuracy, longest_perfect_length}``. During
            ``"sampling"`` (drawing the test strings) ``step``/``total`` count test lengths.
        should_cancel: polled every training step and between test lengths.
        limits: the named limits the spec is checked against (default
            :data:`~langclass.models.training.specs.DEFAULT_JOB_LIMITS`; the worker passes its settings').
        batched: train the runs that share a model shape (encodings of
            :data:`~langclass.models.training.train_batched.BATCHABLE_FAMILIES`, any seeds and learning
            rates) together with :func:`langclass.models.training.train_batched.train_group` (one grouped
            pass, each run stopping at its own early-stopping point) and evaluate them together
            (:func:`~langclass.models.training.train_batched.evaluate_group`) where
            :func:`~langclass.models.training.train_batched.can_batch` allows; the other runs train alone.
            None (default) takes the spec's ``batched`` (default true); False trains every run
            alone. Each run's ``trained_with`` says how many runs shared its pass, and its
            ``train_wall_s`` is then the group's time up to its stop (``eval_wall_s`` its share of
            the group's evaluation). Progress reports of a group carry ``group`` (the grid
            indices) and ``runs_active``.
        on_model: called with each evaluated run's record and its trained
            :class:`~langclass.models.nn.recognizer.Recognizer` (``langclass train --save``, the job's download).

    Returns:
        The JSON-ready result (``runs``, ``summary``, ``verdict``, settings, code version).

    Raises:
        InputError (and subclasses): a malformed spec, naming the field.
        LimitExceeded: a named limit of :class:`~langclass.models.training.specs.JobLimits` (too many
            runs ``max_runs``, too long strings ``max_test_length``, ``job_max_steps``, …).
        ExperimentCancelled: ``should_cancel()`` returned True (``.partial`` has finished runs).
    """
    t0 = time.perf_counter()
    if not isinstance(spec, Mapping):
        spec = spec.model_dump(exclude_none=True)
    norm = validate_spec(spec, limits or DEFAULT_JOB_LIMITS)
    if batched is None:
        batched = norm["batched"] is not False
    dfa: DFA = norm["dfa"]
    settings = norm["settings"]
    encodings: list[GridEncoding] = norm["encodings"]
    test_lengths = settings["test_lengths"]
    train_lengths = settings["train_lengths"]
    model_configs = norm["model_configs"]
    device = resolve_device(settings["device"])
    if device.type == "cpu":
        configure_threads()

    sampler = LanguageSampler(dfa, max(test_lengths[-1], train_lengths[-1]))
    longest = test_lengths[-1]
    states = norm["task"] == "state_prediction"
    # lengths where the test can fail: both a word and a non-word (recognition); every length (states)
    two_class = list(test_lengths) if states else [n for n in test_lengths if all(sampler.count(n))]
    test_sets: dict[int, Any] = {}

    runs: list[dict[str, Any]] = []
    last_eval: dict[str, Any] | None = None
    grid = [(e, s, lr) for e in encodings for s in norm["seeds"] for lr in norm["learning_rates"]]

    notes = length_notation_notes(spec)
    result_head = {
        "language": {"fingerprint": dfa.fingerprint(), "alphabet": list(dfa.alphabet), "num_states": dfa.num_states, "dfa": dfa.to_canonical_dict()},
        "profile": norm["profile"],
        "setting": norm["setting"],
        "task": norm["task"],
        "settings": settings,
        "seeds": norm["seeds"],
        "learning_rates": norm["learning_rates"],
        "eval_seed": norm["eval_seed"],
        "test_lengths": test_lengths,
        "longest_tested_length": longest,
        "n_star_convention": "largest tested N with accuracy 1.0 at every tested length <= N; 0 if the first tested length fails",
        "code_version": code_version(),
        "notes": notes,
        "torch_version": __import__("torch").__version__,
        "device": str(device),
        "batched": batched,
    }

    def finish(partial: bool) -> dict[str, Any]:
        summary = summarize(runs, encodings)
        outcome = verdict(summary, encodings, norm["prediction"], longest, test_lengths, train_lengths[-1], two_class)
        for label, v in outcome["per_encoding"].items():
            summary[label]["verdict"] = v
        out = {
            **result_head,
            "runs": runs,
            "summary": summary,
            "verdict": outcome,
            "complete": not partial,
            "wall_s": time.perf_counter() - t0,
            "spec": json.loads(json.dumps(spec, default=str)),
        }
        return out

    n_runs = len(encodings) * len(norm["seeds"]) * len(norm["learning_rates"])
    if progress is not None:
        progress({"phase": "sampling", "run": 0, "runs": n_runs, "step": 0, "total": len(test_lengths), "last_evaluation": None})
    for n in test_lengths:  # one length at a time, so a cancel is prompt even for long test grids
        if should_cancel is not None and should_cancel():
            raise ExperimentCancelled(finish(partial=True))
        test_sets.update(build_test_sets(sampler, [n], settings["eval_per_length"], norm["eval_seed"], settings["near_miss_fraction"]))

    def train_config(idx: int) -> TrainConfig:
        _enc, seed, lr = grid[idx]
        ckpt = None
        if norm["checkpoint_dir"]:
            # the run's index in the grid, never user text (a label such as "../x" must not pick the path)
            ckpt = str(Path(norm["checkpoint_dir"]) / f"run{idx:04d}")
        return TrainConfig(
            learning_rate=lr,
            max_steps=settings["max_steps"],
            batch_size=settings["batch_size"],
            train_lengths=(train_lengths[0], train_lengths[-1]),
            near_miss_fraction=settings["near_miss_fraction"],
            weight_decay=settings["weight_decay"],
            grad_clip=settings["grad_clip"],
            warmup_steps=settings["warmup_steps"],
            patience=settings["patience"],
            seed=seed,
            device=settings["device"],
            precision=settings["precision"],
            checkpoint_dir=ckpt,
            progress_every=max(1, min(50, settings["max_steps"] // 100 or 1)),
            task=norm["task"],
        )

    def progress_for(idx: int, **extra: Any) -> Callable[[dict[str, Any]], None]:
        enc, seed, lr = grid[idx]
        ctx = {"run": idx, "runs": len(grid), "encoding": enc.label, "seed": seed, "learning_rate": lr, **extra}

        def on_progress(p: dict[str, Any]) -> None:
            if progress is not None:
                progress({**ctx, **p, "last_evaluation": last_eval})

        return on_progress

    configs = [train_config(i) for i in range(len(grid))]
    for unit in _training_units(grid, configs, model_configs, batched):
        enc = grid[unit[0]][0]
        try:
            if len(unit) == 1:
                trained = [train_recognizer(model_configs[enc.label], configs[unit[0]], sampler,
                                            progress=progress_for(unit[0]), should_cancel=should_cancel)]
            else:
                trained = train_group([model_configs[grid[i][0].label] for i in unit], [configs[i] for i in unit], [sampler] * len(unit),
                                      progress=progress_for(unit[0], group=list(unit)), should_cancel=should_cancel)
        except TrainingCancelled:
            raise ExperimentCancelled(finish(partial=True)) from None
        t_eval = time.perf_counter()
        if len(unit) > 1:  # the runs of a group are evaluated together too
            progress_for(unit[0], group=list(unit))({"phase": "evaluate", "step": trained[0].steps, "total": settings["max_steps"]})
            accs = evaluate_group([tr.model for tr in trained], test_sets, should_cancel=should_cancel)
        else:
            accs = [None]
        group_eval_s = time.perf_counter() - t_eval
        for idx, tr, acc in zip(unit, trained, accs):
            enc, seed, lr = grid[idx]
            on_progress = progress_for(idx)
            t_eval = time.perf_counter()
            if acc is None:
                on_progress({"phase": "evaluate", "step": tr.steps, "total": settings["max_steps"]})
                if states:
                    acc = evaluate_states(make_state_check(tr.model, sampler, resolve_device(tr.device), tr.precision),
                                          test_sets, should_cancel=should_cancel)
                else:
                    predict = make_predict(tr.model, resolve_device(tr.device), tr.precision)
                    acc = evaluate_lengths(predict, test_sets, should_cancel=should_cancel)
            if len(acc) < len(test_sets):
                raise ExperimentCancelled(finish(partial=True))
            n_star = longest_perfect_length(acc)
            manifest, digest, model_digest = _manifest(tr.model)
            run = {
                "encoding": enc.label,
                "setting": norm["setting"],
                "task": norm["task"],
                "encoding_name": enc.name,
                "encoding_params": enc.params,
                "manifest": manifest,
                "manifest_digest": digest,
                "model_digest": model_digest,
                "seed": seed,
                "learning_rate": lr,
                "steps": tr.steps,
                "stopped": tr.stopped,
                "resumed_from": tr.resumed_from,
                "train_accuracy": tr.train_accuracy,
                "final_loss": tr.final_loss,
                "accuracy": float(np.mean(list(acc.values()))),
                "accuracy_by_length": {str(n): a for n, a in acc.items()},
                "longest_perfect_length": n_star,
                "reached_longest": n_star == longest,
                "train_wall_s": tr.wall_s,
                "eval_wall_s": (time.perf_counter() - t_eval) + group_eval_s / len(unit),
                "device": tr.device,
                "precision": tr.precision,
                "trained_with": len(unit),
            }
            runs.append(run)
            if on_model is not None:
                on_model(run, tr.model)
            last_eval = {k: run[k] for k in ("encoding", "seed", "learning_rate", "steps", "accuracy", "longest_perfect_length")}
            on_progress({"phase": "evaluated", "step": tr.steps, "total": settings["max_steps"]})
    order = {(e.label, sd, lr): i for i, (e, sd, lr) in enumerate(grid)}
    runs.sort(key=lambda r: order[(r["encoding"], r["seed"], r["learning_rate"])])
    result = finish(partial=False)
    if progress is not None:
        progress({"phase": "done", "run": len(grid), "runs": len(grid), "step": None, "total": None, "last_evaluation": last_eval})
    return result


def _training_units(grid: list[tuple[GridEncoding, int, float]], configs: list[TrainConfig], model_configs: Mapping[str, Any],
                    batched: bool) -> list[list[int]]:
    """Grid indices trained together: one index each, or with ``batched`` the runs with equal
    :func:`~langclass.models.training.train_batched.batch_key` (same model shape and shared settings; the
    encodings, seeds and learning rates may differ), at most ``MAX_GROUP_RUNS`` per unit, in grid
    order of their first run."""
    if not batched:
        return [[i] for i in range(len(grid))]
    groups: dict[Any, list[int]] = {}
    units: list[list[int]] = []
    for i, (enc, _seed, _lr) in enumerate(grid):
        key = batch_key(model_configs[enc.label], configs[i])
        if key is None:
            units.append([i])
            continue
        if key not in groups or len(groups[key]) >= MAX_GROUP_RUNS:
            groups[key] = []
            units.append(groups[key])
        groups[key].append(i)
    return units
