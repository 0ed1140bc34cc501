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

__all__ = ["footprint", "parameter_count", "check_footprint"]

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


def check_footprint(limits: Any, fp: dict[str, Any], field: str = "overrides") -> None:
    """Raise :class:`~langclass.core.base.errors.LimitExceeded` (a 422) naming ``job_max_parameters``
    or ``job_max_memory_bytes`` when the footprint is over it; the message and the error's ``extra``
    carry the estimate."""
    from langclass.core.base.errors import LimitExceeded

    if fp["parameters"] > limits.job_max_parameters:
        err = LimitExceeded("job_max_parameters", limits.job_max_parameters,
                            f"the model has {fp['parameters']:,} parameters ({_gib(fp['weight_bytes'])} of weights), "
                            f"over job_max_parameters={limits.job_max_parameters:,}", field=field)
        err.extra["estimate"] = fp
        raise err
    if fp["memory_bytes"] > limits.job_max_memory_bytes:
        err = LimitExceeded("job_max_memory_bytes", limits.job_max_memory_bytes,
                            f"one training step needs about {_gib(fp['memory_bytes'])} ({_gib(fp['training_state_bytes'])} "
                            f"of weights, gradients and optimizer state, {_gib(fp['activation_bytes'])} of activations), "
                            f"over job_max_memory_bytes={limits.job_max_memory_bytes:,} ({_gib(limits.job_max_memory_bytes)})",
                            field=field)
        err.extra["estimate"] = fp
        raise err
