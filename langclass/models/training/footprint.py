"""How large a training run is before it runs: parameters, memory of weights and optimizer state, and
activation memory of one training step — checked against named limits when a job is validated.

The per-dimension limits (``job_max_d_model``, ``job_max_layers``, …) each admit their maximum, but
not all at once: d_model 4096, 48 layers, d_ff 16384 and 64 heads are 9.7·10⁹ parameters. The
:class:`~langclass.models.training.specs.JobLimits` ``job_max_parameters`` and ``job_max_memory_bytes``
bound the whole, from :func:`footprint` (the recognizer of :mod:`langclass.models.nn.recognizer`: token
embedding, per layer the four attention projections, two feed-forward layers and two LayerNorms, the
final LayerNorm and the readout, plus the encoding's own parameters).

Memory of one run in training (bytes, the model's float width ``w``):

* weights, gradients and AdamW's two moments: 4·P·w;
* activations kept for the backward pass, per layer and string of T tokens (T = longest training
  string + BOS + EOS): about 10·T·d_model + 2·T·d_ff values (inputs and outputs of the norms,
  projections, residuals and feed-forward), and 2·H·T² (attention scores and probabilities,
  materialized by the exact attention): B·L·(10·T·d + 2·T·d_ff + 2·H·T²)·w.

The activation count is an estimate (within a small factor of what autograd keeps); the parameter
count is exact (a test compares it with the built model).
"""

from __future__ import annotations

from typing import Any

__all__ = ["footprint", "parameter_count", "check_footprint", "job_footprint", "check_job_memory"]

FLOAT_BYTES = {"float32": 4, "float64": 8, "bfloat16": 2, "float16": 2}


def parameter_count(config: Any) -> int:
    """The number of parameters of a :class:`~langclass.models.nn.recognizer.Recognizer` with this
    :class:`~langclass.models.nn.recognizer.RecognizerConfig` (the encoding's counted by building it on
    torch's ``meta`` device: no memory is allocated)."""
    d, L, H = config.d_model, config.n_layers, config.n_heads
    inner, dff, b = H * config.head_dim, config.ff_dim, 1 if config.bias else 0
    vocab = len(config.alphabet) + 3  # PAD, BOS, EOS
    attn = 3 * (d * inner + b * inner) + inner * d + b * d
    ff = d * dff + b * dff + dff * d + b * d
    norms = 4 * d if config.norm != "none" else 0
    total = vocab * d + L * (attn + ff + norms) + (2 * d if config.norm == "pre" else 0) + d + b
    return total + _encoding_parameters(config)


def _encoding_parameters(config: Any) -> int:
    import torch

    try:
        with torch.device("meta"):
            enc = config.build_encoding()
    except Exception:  # noqa: BLE001 - an encoding that computes on its tensors while built (pj_bias reads
        enc = config.build_encoding()  # numpy from them): built for real, its own errors raised there
    return int(sum(p.numel() for p in enc.parameters()))


def footprint(config: Any, *, batch_size: int, max_train_length: int, precision: str = "float32") -> dict[str, Any]:
    """Parameters and training memory of one run (see the module docstring).

    Args:
        config: the run's :class:`~langclass.models.nn.recognizer.RecognizerConfig`.
        batch_size: strings per step; max_train_length: the longest training string.
        precision: ``float32``, ``bfloat16`` (``auto`` counts as float32).

    Returns:
        ``{"parameters", "weight_bytes", "training_state_bytes", "activation_bytes", "memory_bytes"}``.
    """
    w = FLOAT_BYTES.get(precision if precision in FLOAT_BYTES else config.dtype, 4)
    P = parameter_count(config)
    T = max_train_length + 2
    d, L, H, dff = config.d_model, config.n_layers, config.n_heads, config.ff_dim
    act = batch_size * max(L, 1) * (10 * T * d + 2 * T * dff + 2 * H * T * T) * w
    state = 4 * P * w
    return {"parameters": P, "weight_bytes": P * w, "training_state_bytes": state, "activation_bytes": act,
            "memory_bytes": state + act}


def _gib(x: float) -> str:
    return f"{x / 2**30:.3g} GiB"


def check_footprint(limits: Any, fp: dict[str, Any], field: str = "overrides", *, memory: bool = True) -> None:
    """Raise :class:`~langclass.core.base.errors.LimitExceeded` (a 422) naming ``job_max_parameters``
    or ``job_max_memory_bytes`` when the footprint of one run is over it; the message and the
    error's ``extra`` carry the estimate. ``memory=False`` checks the parameters only (a job's memory
    is checked as a whole by :func:`check_job_memory`)."""
    from langclass.core.base.errors import LimitExceeded

    if fp["parameters"] > limits.job_max_parameters:
        err = LimitExceeded("job_max_parameters", limits.job_max_parameters,
                            f"the model has {fp['parameters']:,} parameters ({_gib(fp['weight_bytes'])} of weights), "
                            f"over job_max_parameters={limits.job_max_parameters:,}", field=field)
        err.extra["estimate"] = fp
        raise err
    if memory and fp["memory_bytes"] > limits.job_max_memory_bytes:
        err = LimitExceeded("job_max_memory_bytes", limits.job_max_memory_bytes,
                            f"one training step needs about {_gib(fp['memory_bytes'])} ({_gib(fp['training_state_bytes'])} "
                            f"of weights, gradients and optimizer state, {_gib(fp['activation_bytes'])} of activations), "
                            f"over job_max_memory_bytes={limits.job_max_memory_bytes:,} ({_gib(limits.job_max_memory_bytes)})",
                            field=field)
        err.extra["estimate"] = fp
        raise err


BASE_PROCESS_BYTES = 350 * 2**20
"""Resident memory of a job process before its first model: the interpreter, torch, numpy, the
database driver and the job's own code (measured 0.23–0.35 GiB with torch 2.x on Linux)."""

SINGLE_RUN_FACTOR = 2.4
"""Measured peak of a run trained alone (:func:`~langclass.models.training.train.train_recognizer`:
every string padded to the longest, the reference modules' autograd graph) over the activation
count of :func:`footprint`: 2.3–2.6 (bench/job_memory.py, torch 2.x on CPU)."""

GROUPED_RUN_FACTOR = 0.5
"""The same ratio for a run of a stacked group (:func:`~langclass.models.training.train_batched.train_group`:
strings in four length buckets, so about half the padded positions; folded LayerNorms, the last
layer at EOS only, fused attention where there is no bias): 0.47–0.49 measured on groups of 4 and
12 runs whose activations were dominated by the T² and by the linear terms respectively."""

TEST_STRING_OVERHEAD_BYTES = 120
"""Memory of one stored test string beyond its letters (the tuple, its label, the index of
distinct words); each letter is one 8-byte reference."""


def job_footprint(model_configs: Any, settings: Any, *, n_seeds: int, n_learning_rates: int,
                  batched: bool = True) -> dict[str, Any]:
    """Estimated peak resident memory of a whole train job (bytes): the process, the stored test
    strings and the largest unit of runs trained at once — the runs of one stacked group
    (:func:`~langclass.models.training.train_batched.train_group`: every run of the grid that shares a
    model shape, at most :data:`~langclass.models.training.train_batched.MAX_GROUP_RUNS`, each with its
    own weights, optimizer state and activations) or one run trained alone.

    Args:
        model_configs: ``{label: RecognizerConfig}`` (one per encoding of the grid).
        settings: the normalized settings (``batch_size``, ``train_lengths``, ``test_lengths``,
            ``eval_per_length``, ``precision``).
        n_seeds / n_learning_rates: runs per encoding are their product.
        batched: the spec's ``batched`` (False: every run trains alone).

    Returns:
        ``{"memory_bytes", "process_bytes", "test_strings_bytes", "largest_unit_runs",
        "largest_unit_bytes", "per_run": {label: footprint}}``.
    """
    from langclass.models.nn.grouped import group_key
    from langclass.models.training.train_batched import MAX_GROUP_RUNS

    precision = settings.get("precision", "float32")
    longest = max(settings["train_lengths"])
    per_run = {label: footprint(cfg, batch_size=settings["batch_size"], max_train_length=longest, precision=precision)
               for label, cfg in model_configs.items()}
    runs_each = max(1, n_seeds * n_learning_rates)
    groups: dict[Any, int] = {}
    unit_bytes, unit_runs = 0, 1
    for label, cfg in model_configs.items():
        fp = per_run[label]
        alone = fp["training_state_bytes"] + SINGLE_RUN_FACTOR * fp["activation_bytes"]
        key = group_key(cfg) if batched and precision in ("auto", "float32") else None
        if key is None:
            if alone > unit_bytes:
                unit_bytes, unit_runs = int(alone), 1
            continue
        groups[key] = groups.get(key, 0) + runs_each
        one = fp["training_state_bytes"] + GROUPED_RUN_FACTOR * fp["activation_bytes"]
        r = min(groups[key], MAX_GROUP_RUNS)
        if r == 1:
            one = alone  # a group of one trains alone
        if r * one > unit_bytes:
            unit_bytes, unit_runs = int(r * one), r
    tests = settings.get("test_lengths") or []
    test_bytes = sum(settings.get("eval_per_length", 0) * (8 * n + TEST_STRING_OVERHEAD_BYTES) for n in tests)
    total = BASE_PROCESS_BYTES + test_bytes + unit_bytes
    return {"memory_bytes": int(total), "process_bytes": BASE_PROCESS_BYTES, "test_strings_bytes": int(test_bytes),
            "largest_unit_runs": unit_runs, "largest_unit_bytes": unit_bytes, "per_run": per_run}


def check_job_memory(limits: Any, jfp: dict[str, Any], field: str = "overrides") -> None:
    """Raise :class:`~langclass.core.base.errors.LimitExceeded` (a 422) naming ``job_max_memory_bytes``
    when the whole job's estimate (:func:`job_footprint`) is over it; ``extra["estimate"]`` carries
    the job's estimate and the :func:`footprint` of its largest run (``parameters``,
    ``activation_bytes``, …; ``memory_bytes`` is the job's)."""
    from langclass.core.base.errors import LimitExceeded

    if jfp["memory_bytes"] <= limits.job_max_memory_bytes:
        return
    runs = jfp["largest_unit_runs"]
    unit = f"{runs} runs trained together in one stacked group" if runs > 1 else "one run"
    err = LimitExceeded("job_max_memory_bytes", limits.job_max_memory_bytes,
                        f"the job needs about {_gib(jfp['memory_bytes'])} of memory ({_gib(jfp['largest_unit_bytes'])} for {unit}, "
                        f"{_gib(jfp['test_strings_bytes'])} of test strings, {_gib(jfp['process_bytes'])} of process), "
                        f"over job_max_memory_bytes={limits.job_max_memory_bytes:,} ({_gib(limits.job_max_memory_bytes)}); "
                        "use fewer seeds or encodings per job, a smaller batch, width or training length", field=field)
    biggest = max(jfp["per_run"].values(), key=lambda fp: fp["memory_bytes"]) if jfp["per_run"] else {}
    err.extra["estimate"] = {**{k: v for k, v in biggest.items() if k != "memory_bytes"},
                             **{k: v for k, v in jfp.items() if k != "per_run"}}
    raise err
