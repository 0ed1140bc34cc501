"""Training and evaluating the runs of an experiment grid in one pass (runs that share a model shape).

:func:`train_group` trains R recognizers whose configs share a shape
(:func:`~langclass.models.nn.grouped.group_key`: they may differ in positional encoding — any family of
:data:`BATCHABLE_FAMILIES` — in seed and in learning rate) together: their parameters are one
stacked tensor (:class:`~langclass.models.nn.grouped.GroupedRecognizers`), one forward/backward pass
scores every run on its own batch, and one stacked AdamW step (:class:`~langclass.models.nn.grouped.StackedAdamW`,
elementwise, so R independent steps) updates them. Gradient clipping is per run (each run's global
L2 norm, the rule of ``torch.nn.utils.clip_grad_norm_``). Each run stops at its own early-stopping
point (``patience`` perfect training batches in a row) and leaves the stack; the others continue.
:func:`evaluate_group` scores every run on the shared test strings in the same way.

Every run is the run :func:`~langclass.models.training.train.train_recognizer` would train with the same
:class:`~langclass.models.training.train.TrainConfig`: the same initial parameters (``torch.manual_seed(seed)``
before building the model), the same training batches (``random.Random(f"train/{seed}")``), the same
loss (mean binary cross-entropy over the batch), optimizer, clipping, warm-up and stopping rule —
the protocol of *Disentangling the Expressivity of RoPE*, App. E.2. Results agree up to
floating-point reassociation, not bit for bit: each step's batch is scored in ``length_buckets``
groups of similar string length (sorted by length), so padding is not computed, and the grouped
forward reads the EOS row only in the last layer, folds the LayerNorms into the next linear maps,
looks the first layer's projections up per token and, for runs with at most
:data:`~langclass.models.nn.class_attention.MAX_POSITION_CLASSES` distinct rotations (NoPE, periodic RoPE
of a small period) in a group without absolute encodings, attends in the first layer over counts of
key classes instead of over every key (:mod:`langclass.models.nn.grouped`). Over hundreds
of steps such rounding differences can move a run's trajectory; the tests pin the first steps'
losses and the verdicts.

Limits: soft attention, strict mask, pre-norm, float32, encodings of :data:`BATCHABLE_FAMILIES`, no
checkpoints (a run with ``checkpoint_dir`` trains alone); :func:`can_batch` says whether a run
qualifies. A group holds at most :data:`MAX_GROUP_RUNS` runs (larger grids are split).
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from langclass.core.base.errors import InputError

from langclass.models.training.data import LabeledWords, LanguageSampler
from langclass.models.nn.grouped import GROUPABLE_FAMILIES, GroupedRecognizers, StackedAdamW, group_key
from langclass.models.nn.tokens import BOS, EOS, NUM_SPECIAL, PAD
from langclass.models.training.train import TrainConfig, TrainingCancelled, TrainResult, _autocast, _precision, encode_batch, resolve_device

__all__ = ["BATCHABLE_FAMILIES", "MAX_GROUP_RUNS", "can_batch", "batch_key", "train_group", "evaluate_group"]

BATCHABLE_FAMILIES = GROUPABLE_FAMILIES
"""Encoding families whose modules hold only fixed tables (no parameters)."""

MAX_GROUP_RUNS = 32
"""Most runs trained in one group (a bigger grid is split into several groups)."""

EVAL_GROUP_ELEMENTS = 1 << 22
"""Attention-score elements (runs × strings × heads × T²) per evaluation chunk (about 16 MiB)."""

_SHARED_FIELDS = ("max_steps", "batch_size", "train_lengths", "near_miss_fraction", "weight_decay",
                  "betas", "eps", "grad_clip", "warmup_steps", "patience", "device", "precision")


def can_batch(model_config: Any, config: TrainConfig) -> bool:
    """True when a run of ``model_config`` / ``config`` can join a :func:`train_group` (see the
    module doc: a groupable shape, float32, no checkpoint directory)."""
    device = resolve_device(config.device)
    return (group_key(model_config) is not None and _precision(config.precision, device) == "float32"
            and config.checkpoint_dir is None)


def batch_key(model_config: Any, config: TrainConfig) -> tuple | None:
    """Runs with equal non-None keys can be trained in one :func:`train_group` (same shape and
    the same shared training settings); None when :func:`can_batch` refuses the run."""
    if not can_batch(model_config, config):
        return None
    return (group_key(model_config), tuple(repr(getattr(config, f)) for f in _SHARED_FIELDS))


def train_group(
    model_configs: Any,
    configs: Sequence[TrainConfig],
    samplers: Sequence[LanguageSampler],
    *,
    length_buckets: int = 4,
    progress: Callable[[dict[str, Any]], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
) -> list[TrainResult]:
    """Train one recognizer per config in one pass; see the module doc.

    Args:
        model_configs: one :class:`~langclass.models.nn.recognizer.RecognizerConfig` per run, or one
            shared by every run; all must have the same :func:`~langclass.models.nn.grouped.group_key`.
        configs: one :class:`TrainConfig` per run; every field but ``seed``, ``learning_rate`` and
            ``progress_every`` must be equal.
        samplers: one :class:`LanguageSampler` per run (runs may train on different languages over
            the same alphabet), covering the training lengths.
        length_buckets: groups of similar length each step's batch is split into (≥ 1).
        progress: called every ``progress_every`` steps (of the first config) with ``{"phase":
            "train", "step", "total", "runs_active", "loss", "train_accuracy"}`` (means over the
            active runs).
        should_cancel: polled every step.

    Returns:
        One :class:`TrainResult` per config, in order (``wall_s`` is the group's wall time up to
        the run's stop, shared by the runs that stop together).

    Raises:
        InputError: an empty group, configs that differ in a shared field or in shape, a run that
            :func:`can_batch` refuses, a sampler that cannot produce the training lengths, a bad device.
        TrainingCancelled: ``should_cancel()`` returned True.
        FloatingPointError: a run's loss became NaN or infinite.
    """
    from langclass.models.nn.recognizer import Recognizer

    R = len(configs)
    if R == 0 or len(samplers) != R:
        raise InputError("train_group needs one sampler per config and at least one run", field="configs")
    mcs = list(model_configs) if isinstance(model_configs, (list, tuple)) else [model_configs] * R
    if len(mcs) != R:
        raise InputError("train_group needs one model config per run (or one for all)", field="model_configs")
    first = configs[0]
    for c in configs[1:]:
        for f in _SHARED_FIELDS:
            if getattr(c, f) != getattr(first, f):
                raise InputError(f"runs of one group must share {f}: {getattr(c, f)!r} != {getattr(first, f)!r}", field=f)
    for mc, c in zip(mcs, configs):
        if not can_batch(mc, c):
            raise InputError("this run cannot be trained in a group (hard attention, a learnable encoding, "
                             "bfloat16, or checkpoints)", field="encoding")
    if len({group_key(mc) for mc in mcs}) != 1:
        raise InputError("runs of one group must share the model shape", field="model_configs")
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
    for mc, c in zip(mcs, configs):
        torch.manual_seed(c.seed)
        models.append(Recognizer(mc).to(device))
    group = GroupedRecognizers(models, device)
    opt = StackedAdamW(group.theta, [c.learning_rate for c in configs], first.betas, first.eps, first.weight_decay)
    rngs = [random.Random(f"train/{c.seed}") for c in configs]
    warm = max(0, first.warmup_steps)
    active = list(range(R))  # run index of each row of the stack
    patience = first.patience
    keep = patience or 100
    windows: list[list[tuple[float, float]]] = [[] for _ in range(R)]
    histories: list[list[dict[str, float]]] = [[] for _ in range(R)]
    perfect = [0] * R
    results: list[TrainResult | None] = [None] * R
    n_chunks = min(length_buckets, bs)
    step = 0
    t0 = time.perf_counter()
    while active:
        if should_cancel is not None and should_cancel():
            raise TrainingCancelled(step)
        A = len(active)
        batches = [samplers[r].draw_mixed(lengths, bs, rngs[r], first.near_miss_fraction) for r in active]
        target = torch.tensor(np.array([b.labels for b in batches], dtype=np.float32), device=device)  # [A, bs]
        ids_all, n_all = _encode_runs([b.words for b in batches], hi)  # [A, bs, hi + 2], [A, bs]
        orders = np.argsort(n_all, axis=1, kind="stable")  # each run's strings by length
        logits_parts, index_parts = [], []
        weights = group.weights()  # derived once per step for every bucket
        for chunk in np.array_split(np.arange(bs), n_chunks):
            sel = orders[:, chunk]  # [A, n]
            lens = np.take_along_axis(n_all, sel, axis=1)
            T = int(lens.max()) + 2
            ids = torch.from_numpy(ids_all[np.arange(A)[:, None], sel, :T]).to(device)  # [A, n, T] (PAD after EOS)
            eos = torch.from_numpy(lens + 1).to(device)  # [A, n]
            with _autocast(device, precision):
                logits_parts.append(group.logits(ids, eos, weights=weights))  # [A, n]
            index_parts.append(torch.from_numpy(sel).to(device))
        logits = torch.cat(logits_parts, dim=1)  # [A, bs] in bucket order
        y = torch.gather(target, 1, torch.cat(index_parts, dim=1))
        per_run = torch.nn.functional.binary_cross_entropy_with_logits(logits, y, reduction="none").mean(dim=1)  # [A]
        group.theta.grad = None
        per_run.sum().backward()
        grad = group.theta.grad
        if first.grad_clip is not None:
            norms = grad.norm(dim=1)  # each run's global L2 norm
            grad.mul_((first.grad_clip / (norms + 1e-6)).clamp(max=1.0)[:, None])
        opt.step(group.theta, grad, min(1.0, (step + 1) / warm) if warm else 1.0)
        step += 1
        acc = ((logits.detach() > 0) == (y > 0.5)).float().mean(dim=1).tolist()
        losses = per_run.detach().tolist()
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
            group.copy_into(a, model)
            model.eval()
            recent = windows[r][-min(len(windows[r]), keep):] or [(float("nan"), 0.0)]
            stopped = "early_stop" if patience is not None and perfect[r] >= patience else "max_steps"
            results[r] = TrainResult(model=model, steps=step, train_accuracy=float(np.mean([x for _, x in recent])),
                                     final_loss=float(np.mean([x for x, _ in recent])), stopped=stopped, wall_s=wall,
                                     device=str(device), precision=precision, resumed_from=None, history=histories[r])
        rows = [a for a in range(A) if a not in set(finished)]
        active = [active[a] for a in rows]
        if active:
            group.select(rows)
            opt.select(rows)
    return [r for r in results if r is not None]


def _encode_runs(words: Sequence[Sequence[Sequence[int]]], longest: int) -> tuple[np.ndarray, np.ndarray]:
    """Every run's batch in the layout of :func:`~langclass.models.training.train.encode_batch`, at once:
    ``ids int64 [A, bs, longest + 2]`` (``BOS w EOS`` then PAD) and the word lengths ``[A, bs]``."""
    A, bs = len(words), len(words[0])
    ids = np.full((A * bs, longest + 2), PAD, dtype=np.int64)
    ids[:, 0] = BOS
    every = [w for run in words for w in run]
    n = np.fromiter(map(len, every), dtype=np.int64, count=A * bs)
    total = int(n.sum())
    letters = np.fromiter(itertools.chain.from_iterable(every), dtype=np.int64, count=total)
    starts = np.cumsum(n) - n  # offset of each word in ``letters``
    row = np.repeat(np.arange(A * bs), n)
    ids[row, np.arange(total) - starts[row] + 1] = letters + NUM_SPECIAL  # letter i ↦ NUM_SPECIAL + i
    ids[np.arange(A * bs), n + 1] = EOS
    return ids.reshape(A, bs, longest + 2), n.reshape(A, bs)


def evaluate_group(
    models: Sequence[torch.nn.Module],
    test_sets: Mapping[int, LabeledWords],
    *,
    should_cancel: Callable[[], bool] | None = None,
) -> list[dict[int, float]]:
    """Accuracy per test length of every model, all models at once: ``[{length: correct/total}]``.

    The models must share a :func:`~langclass.models.nn.grouped.group_key`; each distinct word of a
    length is scored once for every model (one grouped forward per chunk of about
    :data:`EVAL_GROUP_ELEMENTS` attention-score elements). The decisions are those of
    :func:`langclass.models.training.train.make_predict` (accept iff logit > 0) up to floating-point
    reassociation. ``should_cancel`` is polled between lengths; when it returns True the lengths
    evaluated so far are returned (as :func:`langclass.models.training.evaluate.evaluate_lengths` does).

    Raises:
        ValueError: models that cannot be grouped.
    """
    group = GroupedRecognizers(list(models))
    device = group.device
    R, H = group.R, group.H
    out: list[dict[int, float]] = [{} for _ in range(R)]
    with torch.inference_mode():
        weights = group.weights()
        for n in sorted(test_sets):
            if should_cancel is not None and should_cancel():
                break
            data = test_sets[n]
            index: dict[tuple[int, ...], int] = {}
            slot = np.fromiter((index.setdefault(tuple(w), len(index)) for w in data.words), dtype=np.int64, count=len(data.words))
            uniq = list(index)
            decided = np.zeros((R, len(uniq)), dtype=bool)
            T = max((len(w) for w in uniq), default=0) + 2  # a test set's words all have length n: no padding
            chunk = max(1, EVAL_GROUP_ELEMENTS // (R * H * T * T))
            for i in range(0, len(uniq), chunk):
                ids, _valid, eos = encode_batch(uniq[i:i + chunk], device)
                decided[:, i:i + chunk] = (group.logits(ids[None], eos[None], weights=weights) > 0).cpu().numpy()
            truth = np.asarray(data.labels, dtype=bool)
            correct = (decided[:, slot] == truth[None, :]).sum(axis=1)
            for r in range(R):
                out[r][n] = 1.0 if int(correct[r]) == truth.size else int(correct[r]) / truth.size
    return out
