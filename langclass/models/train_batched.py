"""Training several runs that share a model shape in one pass (the seeds of an experiment grid).

:func:`train_group` trains R recognizers of one :class:`~langclass.models.recognizer.RecognizerConfig`
that differ only in their seed (and so in their initial parameters and their stream of training
batches) together: their parameters are stacked along a leading run axis
(``torch.func.stack_module_state``), one forward/backward pass evaluates all of them on their own
batches (``torch.func.vmap`` over ``torch.func.functional_call``), and one AdamW step updates the
stacked tensors — AdamW is elementwise, so a stacked step is R independent steps. Gradient clipping
is per run (each run's global L2 norm, the formula of ``torch.nn.utils.clip_grad_norm_``). Each run
stops at its own early-stopping point (``patience`` perfect training batches in a row); it then
leaves the stack and the others continue.

Every run is the run :func:`~langclass.models.train.train_recognizer` would train with the same
:class:`~langclass.models.train.TrainConfig`: the same initial parameters (``torch.manual_seed(seed)``
before building the model), the same training batches (``random.Random(f"train/{seed}")``), the same
loss (mean binary cross-entropy over the batch), optimizer, clipping and stopping rule. Results agree
up to floating-point reassociation, not bit for bit: each step's batch is scored in
``length_buckets`` groups of similar string length (sorted by length) so that padding is not
computed — padding never changes a recognizer's output (:mod:`langclass.models.attention`) — and
the vmapped kernels sum in another order.

Limits: soft attention, encodings without learnable parameters (:data:`BATCHABLE_FAMILIES`), no
checkpoints (a run with ``checkpoint_dir`` trains alone). :func:`can_batch` says whether a run
qualifies.
"""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch.func import functional_call, stack_module_state, vmap

from langclass.core.errors import InputError

from .data import LanguageSampler
from .tokens import PAD
from .train import TrainConfig, TrainingCancelled, TrainResult, _autocast, _precision, encode_batch, resolve_device

__all__ = ["BATCHABLE_FAMILIES", "can_batch", "train_group"]

BATCHABLE_FAMILIES = frozenset({"nope", "rope", "rope_periodic", "sinusoidal", "sinusoidal_periodic", "alibi"})
"""Encoding families whose modules hold only fixed tables (no parameters), checked under vmap by the tests."""

_SHARED_FIELDS = ("learning_rate", "max_steps", "batch_size", "train_lengths", "near_miss_fraction", "weight_decay",
                  "betas", "eps", "grad_clip", "warmup_steps", "patience", "device", "precision")


def can_batch(model_config: Any, config: TrainConfig) -> bool:
    """True when a run of ``model_config`` / ``config`` can join a :func:`train_group` (soft attention,
    an encoding of :data:`BATCHABLE_FAMILIES`, no checkpoint directory)."""
    enc = getattr(model_config, "encoding", {}) or {}
    return (getattr(model_config, "attention", None) == "soft" and enc.get("name") in BATCHABLE_FAMILIES
            and config.checkpoint_dir is None)


def train_group(
    model_config: Any,
    configs: Sequence[TrainConfig],
    samplers: Sequence[LanguageSampler],
    *,
    length_buckets: int = 4,
    progress: Callable[[dict[str, Any]], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
) -> list[TrainResult]:
    """Train one recognizer per config (same shape, seeds may differ) in one pass; see the module doc.

    Args:
        model_config: the shared :class:`~langclass.models.recognizer.RecognizerConfig`.
        configs: one :class:`TrainConfig` per run; every field but ``seed`` (and the progress
            interval) must be equal.
        samplers: one :class:`LanguageSampler` per run (usually the same object), covering the
            training lengths.
        length_buckets: groups of similar length each step's batch is split into (≥ 1).
        progress: called every ``progress_every`` steps with ``{"phase": "train", "step", "total",
            "runs_active", "loss", "train_accuracy"}`` (means over the active runs).
        should_cancel: polled every step.

    Returns:
        One :class:`TrainResult` per config, in order (``wall_s`` is the group's wall time up to
        the run's stop, shared by the runs that stop together).

    Raises:
        InputError: an empty group, configs that differ in a shared field, a run that
            :func:`can_batch` refuses, a sampler that cannot produce the training lengths, a bad device.
        TrainingCancelled: ``should_cancel()`` returned True.
        FloatingPointError: a run's loss became NaN or infinite.
    """
    from .recognizer import Recognizer

    R = len(configs)
    if R == 0 or len(samplers) != R:
        raise InputError("train_group needs one sampler per config and at least one run", field="configs")
    first = configs[0]
    for c in configs[1:]:
        for f in _SHARED_FIELDS:
            if getattr(c, f) != getattr(first, f):
                raise InputError(f"runs of one group must share {f}: {getattr(c, f)!r} != {getattr(first, f)!r}", field=f)
    for c in configs:
        if not can_batch(model_config, c):
            raise InputError("this run cannot be trained in a group (hard attention, a learnable encoding, or checkpoints)",
                             field="encoding")
    if isinstance(length_buckets, bool) or not isinstance(length_buckets, int) or length_buckets < 1:
        raise InputError(f"length_buckets must be a positive integer, got {length_buckets!r}", field="length_buckets")
    lo, hi = first.train_lengths
    for s in samplers:
        if hi > s.max_length:
            raise InputError(f"training length {hi} exceeds the sampler's max_length {s.max_length}", field="train_lengths")
    device = resolve_device(first.device)
    precision = _precision(first.precision, device)
    lengths = list(range(lo, hi + 1))
    bs = first.batch_size

    models = []
    for c in configs:
        torch.manual_seed(c.seed)
        models.append(Recognizer(model_config).to(device))
    for m in models:
        m.train()
    rngs = [random.Random(f"train/{c.seed}") for c in configs]
    base = copy.deepcopy(models[0]).to("meta")
    buffers = {n: b for n, b in models[0].named_buffers()}  # fixed encoding tables, the same for every run
    params, _ = stack_module_state(models)  # name → [R, ...] leaves
    no_decay = {"encoding." + n for n, _ in models[0].encoding.named_parameters()}

    def forward(p: dict[str, torch.Tensor], ids: torch.Tensor, valid: torch.Tensor, eos: torch.Tensor) -> torch.Tensor:
        return functional_call(base, (p, buffers), (ids, valid, eos))

    batched_forward = vmap(forward, in_dims=(0, 0, 0, 0), randomness="different")

    def make_optimizer(ps: dict[str, torch.Tensor]) -> torch.optim.AdamW:
        groups = [{"params": [t for n, t in ps.items() if n not in no_decay], "weight_decay": first.weight_decay}]
        if any(n in no_decay for n in ps):
            groups.append({"params": [t for n, t in ps.items() if n in no_decay], "weight_decay": 0.0})
        return torch.optim.AdamW(groups, lr=first.learning_rate, betas=first.betas, eps=first.eps)

    warm = max(0, first.warmup_steps)

    def lr_at(s: int) -> float:  # LambdaLR(min(1, (s + 1)/warm)) of train_recognizer
        return first.learning_rate * (min(1.0, (s + 1) / warm) if warm else 1.0)

    optimizer = make_optimizer(params)
    active = list(range(R))  # run index of each row of the stacked tensors
    patience = first.patience
    keep = patience or 100
    windows: list[list[tuple[float, float]]] = [[] for _ in range(R)]
    histories: list[list[dict[str, float]]] = [[] for _ in range(R)]
    perfect = [0] * R
    results: list[TrainResult | None] = [None] * R
    step = 0
    t0 = time.perf_counter()
    while active:
        if should_cancel is not None and should_cancel():
            raise TrainingCancelled(step)
        A = len(active)
        batches = [samplers[r].draw_mixed(lengths, bs, rngs[r], first.near_miss_fraction) for r in active]
        target = torch.tensor(np.array([b.labels for b in batches], dtype=np.float32), device=device)  # [A, bs]
        orders = [np.argsort(np.fromiter((len(w) for w in b.words), dtype=np.int64, count=bs), kind="stable") for b in batches]
        logits_all = torch.empty(A, bs, device=device)
        loss_runs = torch.zeros(A, device=device)
        optimizer.zero_grad(set_to_none=True)
        for chunk in np.array_split(np.arange(bs), min(length_buckets, bs)):
            sel = [o[chunk] for o in orders]
            encoded = [encode_batch([b.words[j] for j in s], device) for b, s in zip(batches, sel)]
            T = max(e[0].shape[1] for e in encoded)
            ids = torch.stack([torch.nn.functional.pad(e[0], (0, T - e[0].shape[1]), value=PAD) for e in encoded])  # [A, n, T]
            valid = ids != PAD
            eos = torch.stack([e[2] for e in encoded])  # [A, n]
            idx = torch.from_numpy(np.stack(sel)).to(device)  # [A, n]
            y = torch.gather(target, 1, idx)
            with _autocast(device, precision):
                logits = batched_forward(params, ids, valid, eos)
            logits = logits.float()  # [A, n]
            per_run = torch.nn.functional.binary_cross_entropy_with_logits(logits, y, reduction="none").sum(dim=1) / bs
            per_run.sum().backward()
            loss_runs += per_run.detach()
            logits_all.scatter_(1, idx, logits.detach())
        if first.grad_clip is not None:
            grads = [p.grad for p in params.values() if p.grad is not None]
            norms = torch.sqrt(sum(g.reshape(A, -1).float().pow(2).sum(dim=1) for g in grads))  # [A]
            coef = (first.grad_clip / (norms + 1e-6)).clamp(max=1.0)
            for g in grads:
                g.mul_(coef.view(-1, *([1] * (g.dim() - 1))).to(g.dtype))
        optimizer.step()
        step += 1
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        acc = ((logits_all > 0) == (target > 0.5)).float().mean(dim=1).tolist()
        losses = loss_runs.tolist()
        finished = []
        for a, r in enumerate(active):
            lv = losses[a]
            if not math.isfinite(lv):
                raise FloatingPointError(f"training loss of run {r} (seed {configs[r].seed}) became {lv} at step {step}")
            windows[r].append((lv, acc[a]))
            if len(windows[r]) > keep:
                windows[r].pop(0)
            perfect[r] = perfect[r] + 1 if acc[a] == 1.0 else 0
            if step % configs[r].progress_every == 0 or step == first.max_steps:
                histories[r].append({"step": step, "loss": lv, "train_accuracy": acc[a]})
            if (patience is not None and perfect[r] >= patience) or step >= first.max_steps:
                finished.append(a)
        if progress is not None and step % first.progress_every == 0:
            progress({"phase": "train", "step": step, "total": first.max_steps, "runs_active": A,
                      "loss": float(np.mean(losses)), "train_accuracy": float(np.mean(acc))})
        if not finished:
            continue
        wall = time.perf_counter() - t0
        for a in finished:
            r = active[a]
            model = models[r]
            with torch.no_grad():
                for name, p in model.named_parameters():
                    p.copy_(params[name][a])
            model.eval()
            recent = windows[r][-min(len(windows[r]), keep):] or [(float("nan"), 0.0)]
            stopped = "early_stop" if patience is not None and perfect[r] >= patience else "max_steps"
            results[r] = TrainResult(model=model, steps=step, train_accuracy=float(np.mean([x for _, x in recent])),
                                     final_loss=float(np.mean([x for x, _ in recent])), stopped=stopped, wall_s=wall,
                                     device=str(device), precision=precision, resumed_from=None, history=histories[r])
        rows = [a for a in range(A) if a not in set(finished)]
        active = [active[a] for a in rows]
        if active:
            params, optimizer = _compact(params, optimizer, rows, make_optimizer)
    return [r for r in results if r is not None]


def _compact(params: dict[str, torch.Tensor], optimizer: torch.optim.AdamW, rows: list[int],
             make_optimizer: Callable[[dict[str, torch.Tensor]], torch.optim.AdamW]) -> tuple[dict[str, torch.Tensor], torch.optim.AdamW]:
    """Keep ``rows`` of every stacked parameter and of its AdamW moments (same step count and lr)."""
    index = torch.tensor(rows, dtype=torch.long, device=next(iter(params.values())).device)
    new = {n: p.detach().index_select(0, index).clone().requires_grad_(True) for n, p in params.items()}
    opt = make_optimizer(new)
    lrs = [g["lr"] for g in optimizer.param_groups]
    for g, lr in zip(opt.param_groups, lrs):
        g["lr"] = lr
    for n, p in params.items():
        state = optimizer.state.get(p)
        if state:
            opt.state[new[n]] = {k: (v.index_select(0, index).clone() if torch.is_tensor(v) and v.dim() > 0 else
                                     (v.clone() if torch.is_tensor(v) else v)) for k, v in state.items()}
    return new, opt
