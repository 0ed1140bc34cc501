"""Training a transformer recognizer on a regular language (length-generalization protocol).

Protocol (*Disentangling the Expressivity of RoPE*, App. E.2): soft attention with strict future
masking, input ``BOS w EOS`` with the accept/reject readout at EOS, AdamW, batch 128, training
strings of length ≤ 40 drawn from the canonical DFA (:mod:`langclass.models.training.data`, half of the
negatives near misses), a step budget (the paper's 1,000,000) — here with early stopping once the
training accuracy has been perfect for ``patience`` consecutive steps (each step a fresh batch),
which is what lets a 2-core CPU reproduce the qualitative result in seconds.

Numerics: float32 on CPU; on CUDA the forward pass runs under ``torch.autocast`` with bfloat16
(parameters and optimizer state stay float32). Gradients are clipped to ``grad_clip`` (global
L2 norm). Everything is reproducible from ``seed`` on a given device: the parameter
initialisation (``torch.manual_seed``) and the stream of training batches (``random.Random``).

Settings (:data:`SETTINGS`; the model config carries them as ``mask`` and ``readout``): ``strict``
is the protocol above; ``causal`` is a causal decoder's — non-strict mask j ≤ i, input ``BOS w``
without EOS, the decision read at the last position (BOS for the empty word), the framing of the
C-RASP construction (*Counting Like Transformers: Compiling Temporal Counting Logic into Softmax
Transformers*). Tasks (:data:`TASKS`): ``recognition`` (binary cross-entropy on the accept logit)
and, in the causal setting only, ``state_prediction``: a classification head over the minimal
DFA's states at every position (BOS = the initial state, position t = the state after t letters),
cross-entropy averaged over every position of the batch, a word correct when every position's
state is right (the protocol of *Algebraic Decomposition Theory for Transformer Length
Generalization*).

Checkpoints (optional, ``checkpoint_dir``): ``last.pt`` holds the model, the optimizer, the step,
the best-so-far counters and both RNG states; a run with the same configuration digest resumes
from it (a retried job continues instead of starting over).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from langclass.core.base.errors import InputError

from langclass.models.training.data import DEFAULT_NEAR_MISS_FRACTION, LanguageSampler
from langclass.models.nn.tokens import BOS, EOS, NUM_SPECIAL, PAD

log = logging.getLogger("langclass.train")

__all__ = [
    "SETTINGS",
    "TASKS",
    "TrainConfig",
    "TrainResult",
    "TrainingCancelled",
    "train_recognizer",
    "make_predict",
    "make_state_check",
    "state_targets",
    "parameter_groups",
    "resolve_device",
    "configure_threads",
]


def _load_checkpoint(path: Path, device: Any) -> dict[str, Any] | None:
    """The state saved at ``path``, or None when there is none or it cannot be read safely.

    Loads with ``weights_only=True``: tensors and plain containers only, never arbitrary pickled
    objects (a ``last.pt`` planted in the directory cannot run code). A file that is not such a
    checkpoint is ignored — training starts over and overwrites it.
    """
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - unreadable or not weights-only: start over
        log.warning("ignoring checkpoint %s that cannot be loaded safely: %s", path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return None
    return state if isinstance(state, dict) else None


SETTINGS = ("strict", "causal")
"""Training settings: ``strict`` (strict mask, ``BOS w EOS``, readout at EOS) and ``causal``
(non-strict mask, ``BOS w``, readout at the last position); see the module doc."""

TASKS = ("recognition", "state_prediction")
"""Training tasks; ``state_prediction`` needs the causal setting (see the module doc)."""


class TrainingCancelled(Exception):
    """Raised when ``should_cancel()`` returned True; ``step`` is the last completed step."""

    def __init__(self, step: int) -> None:
        super().__init__(f"training cancelled after step {step}")
        self.step = step


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings of one run.

    Attributes:
        learning_rate: AdamW learning rate (constant after ``warmup_steps`` linear warm-up).
        max_steps: step budget (the paper: 1,000,000).
        batch_size: strings per step (paper: 128).
        train_lengths: ``(min, max)`` inclusive range of training lengths (paper: ≤ 40).
        near_miss_fraction: share of training negatives that are near misses.
        weight_decay, betas, eps: AdamW parameters.
        grad_clip: max global L2 norm of the gradient (``None`` = no clipping).
        warmup_steps: linear learning-rate warm-up.
        patience: early stop once this many consecutive training batches were classified
            perfectly (``None`` = run the whole budget).
        seed: seeds parameters and the training-batch stream.
        device: ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"``, ``"cuda:1"`` ...
        precision: ``"auto"`` (bfloat16 autocast on CUDA, float32 on CPU), ``"float32"``, ``"bfloat16"``.
        checkpoint_dir: directory for ``last.pt`` (``None`` = no checkpoints).
        checkpoint_every: steps between checkpoints.
        progress_every: steps between progress callbacks.
        task: ``"recognition"`` (default) or ``"state_prediction"`` (:data:`TASKS`; the model
            needs ``outputs`` = the number of states of the sampler's minimal DFA).
    """

    learning_rate: float = 3e-4
    max_steps: int = 1_000_000
    batch_size: int = 128
    train_lengths: tuple[int, int] = (1, 40)
    near_miss_fraction: float = DEFAULT_NEAR_MISS_FRACTION
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    grad_clip: float | None = 1.0
    warmup_steps: int = 0
    patience: int | None = 100
    seed: int = 0
    device: str = "auto"
    precision: str = "auto"
    checkpoint_dir: str | None = None
    checkpoint_every: int = 1000
    progress_every: int = 10
    task: str = "recognition"

    def __post_init__(self) -> None:
        def bad(name: str, why: str) -> InputError:
            return InputError(f"{name}: {why}", field=name)

        if not (isinstance(self.learning_rate, (int, float)) and 0 < self.learning_rate < 1 and math.isfinite(self.learning_rate)):
            raise bad("learning_rate", f"must lie in (0, 1), got {self.learning_rate!r}")
        if not isinstance(self.max_steps, int) or self.max_steps < 1:
            raise bad("max_steps", f"must be a positive integer, got {self.max_steps!r}")
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise bad("batch_size", f"must be a positive integer, got {self.batch_size!r}")
        lo, hi = self.train_lengths
        if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi):
            raise bad("train_lengths", f"must be (min, max) with 0 ≤ min ≤ max, got {self.train_lengths!r}")
        if not 0.0 <= self.near_miss_fraction <= 1.0:
            raise bad("near_miss_fraction", f"must lie in [0, 1], got {self.near_miss_fraction!r}")
        if self.patience is not None and (not isinstance(self.patience, int) or self.patience < 1):
            raise bad("patience", f"must be a positive integer or null, got {self.patience!r}")
        if self.grad_clip is not None and not self.grad_clip > 0:
            raise bad("grad_clip", f"must be positive or null, got {self.grad_clip!r}")
        if self.precision not in ("auto", "float32", "bfloat16"):
            raise bad("precision", f"must be auto, float32 or bfloat16, got {self.precision!r}")
        if self.task not in TASKS:
            raise bad("task", f"must be one of {', '.join(TASKS)}, got {self.task!r}")
        if self.checkpoint_every < 1 or self.progress_every < 1:
            raise bad("checkpoint_every", "checkpoint_every and progress_every must be ≥ 1")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["train_lengths"] = list(self.train_lengths)
        d["betas"] = list(self.betas)
        return d


@dataclass
class TrainResult:
    """Outcome of :func:`train_recognizer`.

    Attributes:
        model: the trained recognizer (in eval mode, on ``device``).
        steps: optimisation steps taken.
        train_accuracy: accuracy over the last ``min(patience, steps)`` training batches.
        final_loss: mean loss over the same window.
        stopped: ``"early_stop"`` (training accuracy perfect for ``patience`` steps) or ``"max_steps"``.
        wall_s: seconds spent training (excluding evaluation).
        device, precision: where and how it ran.
        resumed_from: the step a checkpoint resumed from, else None.
        history: ``[{"step", "loss", "train_accuracy"}]`` every ``progress_every`` steps.
    """

    model: torch.nn.Module
    steps: int
    train_accuracy: float
    final_loss: float
    stopped: str
    wall_s: float
    device: str
    precision: str
    resumed_from: int | None = None
    history: list[dict[str, float]] = field(default_factory=list)


def configure_threads(threads: int | None = None) -> int:
    """Set torch's intra-op CPU threads for a training process; returns the count set.

    Policy: ``threads`` if given, else the environment variable ``LANGCLASS_TORCH_THREADS``, else 1
    — capped by the CPUs this process may use. One thread is the default because these recognizers
    are tiny (d_model 32–64) and each worker slot is its own process: measured on the 2-core
    development machine while other processes were busy, 20 steps of a d_model-16 model took 0.30 s
    with 1 thread and 6.7 s with 2 (intra-op threads spinning against each other). Set
    ``LANGCLASS_TORCH_THREADS=2`` for a lone foreground run on an otherwise idle machine.

    Raises:
        InputError: ``LANGCLASS_TORCH_THREADS`` is not a positive integer.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        cpus = os.cpu_count() or 1
    if threads is None:
        env = os.environ.get("LANGCLASS_TORCH_THREADS", "").strip()
        if env:
            if not env.isdigit() or int(env) < 1:
                raise InputError(f"LANGCLASS_TORCH_THREADS must be a positive integer, got {env!r}", field="LANGCLASS_TORCH_THREADS")
            threads = int(env)
        else:
            threads = 1
    n = max(1, min(cpus, threads))
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def resolve_device(device: str) -> torch.device:
    """``"auto"`` → CUDA when available else CPU; otherwise ``torch.device(device)``.

    Raises:
        InputError: an unknown device string, or CUDA asked for but not available.
    """
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise InputError(f"unknown device {device!r}", field="device") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError("CUDA was requested but is not available", field="device")
    return dev


def _precision(precision: str, device: torch.device) -> str:
    if precision == "auto":
        return "bfloat16" if device.type == "cuda" else "float32"
    return precision


def _autocast(device: torch.device, precision: str):
    if precision == "bfloat16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return torch.autocast(device_type=device.type, enabled=False)


# ----------------------------------------------------------------------------- model glue
def encode_batch(words: Sequence[Sequence[int]], device: torch.device, eos: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ``BOS w EOS`` ids for words given as letter indices (``BOS w`` when ``eos`` is
    False: the causal setting).

    Returns ``ids [B, T]`` (int64; letter i ↦ ``NUM_SPECIAL + i``, PAD after EOS, T = longest + 2,
    or longest + 1 without EOS), ``valid [B, T]`` (bool, False on padding) and ``eos_index [B]``
    (the readout index: |w| + 1 at EOS, or |w| = the last token without EOS), the layout of
    :meth:`langclass.models.nn.tokens.Vocabulary.batch` (built here without the symbol round trip).
    """
    extra = 2 if eos else 1
    lengths = np.fromiter((len(w) for w in words), dtype=np.int64, count=len(words))
    T = int(lengths.max()) + extra if len(words) else extra
    ids = np.full((len(words), T), PAD, dtype=np.int64)  # [B, T]
    ids[:, 0] = BOS
    for r, w in enumerate(words):
        if len(w):
            ids[r, 1 : len(w) + 1] = np.asarray(w, dtype=np.int64) + NUM_SPECIAL
    if eos:
        ids[np.arange(len(words)), lengths + 1] = EOS
    t_ids = torch.from_numpy(ids)
    valid = t_ids != PAD  # [B, T]
    eos = torch.from_numpy(lengths + (1 if eos else 0))  # [B]
    return t_ids.to(device, non_blocking=True), valid.to(device, non_blocking=True), eos.to(device, non_blocking=True)


def _eos(model: torch.nn.Module) -> bool:
    """Whether ``model`` reads ``BOS w EOS`` (readout at EOS) rather than ``BOS w`` (readout last)."""
    return getattr(getattr(model, "config", None), "readout", "eos") == "eos"


def state_targets(sampler: LanguageSampler, words: Sequence[Sequence[int]], T: int) -> np.ndarray:
    """The minimal DFA's state after every prefix, aligned with ``BOS w`` ids: ``int64 [B, T]``,
    entry [b, 0] the initial state (at BOS), [b, t] the state after the first t letters, and
    ``-100`` (ignored by the loss) on padding. States are numbered as in ``sampler.dfa`` (canonical)."""
    delta, q0 = sampler.dfa.transitions.tolist(), sampler.dfa.initial
    out = np.full((len(words), T), -100, dtype=np.int64)
    for r, w in enumerate(words):
        q = q0
        out[r, 0] = q
        for t, a in enumerate(w, start=1):
            q = delta[q][a]
            out[r, t] = q
    return out


def make_state_check(model: torch.nn.Module, sampler: LanguageSampler, device: torch.device, precision: str = "float32",
                     batch_tokens: int = 1 << 16) -> Callable[[list[tuple[int, ...]]], np.ndarray]:
    """A ``check(words) -> bool [len(words)]`` closure for a state-prediction model: True where the
    argmax class at every position of ``BOS w`` equals the DFA state there (:func:`state_targets`)."""

    @torch.inference_mode()
    def check(words: list[tuple[int, ...]]) -> np.ndarray:
        model.eval()
        out = np.zeros(len(words), dtype=bool)
        order = sorted(range(len(words)), key=lambda i: len(words[i]))
        i = 0
        while i < len(order):
            bsz = max(1, batch_tokens // (len(words[order[i]]) + 1))
            chunk = order[i : i + bsz]
            batch_words = [words[j] for j in chunk]
            ids, valid, _ = encode_batch(batch_words, device, eos=False)
            with _autocast(device, precision):
                pred = model.position_logits(ids, valid).argmax(dim=-1).cpu().numpy()  # [B, T]
            target = state_targets(sampler, batch_words, ids.shape[1])
            out[chunk] = ((pred == target) | (target < 0)).all(axis=1)
            i += bsz
        return out

    return check


def _logits(model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Accept logits ``[B]`` (float32) of the recognizer on a padded batch."""
    ids, valid, eos = batch
    return model(ids, valid, eos).float().reshape(-1)


def make_predict(model: torch.nn.Module, device: torch.device, precision: str = "float32", batch_tokens: int = 1 << 16) -> Callable[[list[tuple[int, ...]]], np.ndarray]:
    """A ``predict(words) -> bool [len(words)]`` closure (accept iff logit > 0).

    Each distinct word is run once (test sets repeat words: a language like (aa)* has a single
    positive per length), sorted by length, in batches of about ``batch_tokens`` tokens.
    """

    @torch.inference_mode()
    def predict(words: list[tuple[int, ...]]) -> np.ndarray:
        model.eval()
        index: dict[tuple[int, ...], int] = {}
        slot = np.fromiter((index.setdefault(tuple(w), len(index)) for w in words), dtype=np.int64, count=len(words))
        uniq = list(index)
        decided = np.zeros(len(uniq), dtype=bool)
        order = sorted(range(len(uniq)), key=lambda i: len(uniq[i]))
        i = 0
        while i < len(order):
            n = len(uniq[order[i]]) + 2
            bsz = max(1, batch_tokens // n)
            chunk = order[i : i + bsz]
            batch = encode_batch([uniq[j] for j in chunk], device, eos=_eos(model))
            with _autocast(device, precision):
                logits = _logits(model, batch)
            decided[chunk] = (logits > 0).cpu().numpy()
            i += bsz
        return decided[slot]

    return predict


# ----------------------------------------------------------------------------- training
def parameter_groups(model: torch.nn.Module, weight_decay: float, learning_rate: float | None = None) -> list[dict[str, Any]]:
    """AdamW parameter groups: every parameter of ``model.encoding`` (frequencies, gates, order
    spectra, amplitudes, slopes of a learnable encoding such as ``pj_bias``) without weight decay,
    everything else with ``weight_decay``. Decay would pull ω towards 0 (0.01 over 1500 steps at lr
    1e-3 moves π to 3.09, tens of radians of phase error at lag 500) and bias the gates
    (*PJ-RoPE: A Fourier–Jet–Affine Position Space for Relative Attention*, §6 diagnostics read them).

    An encoding with ``optimizer_groups()`` (``pj_bias``) splits its parameters into named groups
    whose learning rate is ``learning_rate × lr_scale`` (when ``learning_rate`` is given)."""
    enc = getattr(model, "encoding", None)
    skip = {id(p) for p in enc.parameters()} if isinstance(enc, torch.nn.Module) else set()
    decay = [p for p in model.parameters() if id(p) not in skip]
    groups: list[dict[str, Any]] = [{"params": decay, "weight_decay": weight_decay}]
    custom = enc.optimizer_groups() if hasattr(enc, "optimizer_groups") else None
    if custom:
        for g in custom:
            if g["params"]:
                grp = {"params": list(g["params"]), "weight_decay": 0.0, "name": g["name"]}
                if learning_rate is not None:
                    grp["lr"] = learning_rate * float(g["lr_scale"])
                groups.append(grp)
        return groups
    no_decay = [p for p in model.parameters() if id(p) in skip]
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    return groups


def _config_digest(model_config: Any, config: TrainConfig, sampler: LanguageSampler) -> str:
    payload = {
        "model": model_config.to_dict() if hasattr(model_config, "to_dict") else repr(model_config),
        "train": {k: v for k, v in config.to_dict().items() if k not in ("checkpoint_dir", "checkpoint_every", "progress_every", "device", "max_steps")
                  and not (k == "task" and v == "recognition")},  # recognition: the digest of checkpoints made before tasks
        "language": sampler.dfa.fingerprint(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def train_recognizer(
    model_config: Any,
    config: TrainConfig,
    sampler: LanguageSampler,
    *,
    progress: Callable[[dict[str, Any]], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
    extra_loss: Callable[[torch.nn.Module], torch.Tensor] | None = None,
) -> TrainResult:
    """Train a fresh :class:`~langclass.models.nn.recognizer.Recognizer` on the sampler's language.

    Args:
        model_config: a :class:`~langclass.models.nn.recognizer.RecognizerConfig`.
        config: optimisation settings.
        sampler: a :class:`LanguageSampler` whose ``max_length`` covers ``config.train_lengths``.
        progress: called every ``config.progress_every`` steps with
            ``{"phase": "train", "step", "total", "loss", "train_accuracy"}``.
        should_cancel: polled every step; True stops training promptly.
        extra_loss: optional penalty ``f(model) -> scalar`` added to the loss every step (the
            sparsity prior of the ``sectors`` experiments); the reported loss includes it.

    Raises:
        TrainingCancelled: ``should_cancel()`` returned True.
        InputError: the sampler cannot produce the training lengths, or a bad device.
    """
    from langclass.models.nn.recognizer import Recognizer

    lo, hi = config.train_lengths
    if hi > sampler.max_length:
        raise InputError(f"training length {hi} exceeds the sampler's max_length {sampler.max_length}", field="train_lengths")
    states = config.task == "state_prediction"
    outputs = getattr(model_config, "outputs", 1)
    if states and outputs != sampler.dfa.num_states:
        raise InputError(f"state prediction needs outputs = {sampler.dfa.num_states} (the states of the minimal DFA), "
                         f"the model has {outputs}", field="task")
    if not states and outputs != 1:
        raise InputError(f"recognition needs outputs = 1, the model has {outputs}", field="task")
    device = resolve_device(config.device)
    precision = _precision(config.precision, device)
    lengths = list(range(lo, hi + 1))

    torch.manual_seed(config.seed)
    model = Recognizer(model_config).to(device)
    optimizer = torch.optim.AdamW(
        parameter_groups(model, config.weight_decay, config.learning_rate), lr=config.learning_rate, betas=config.betas, eps=config.eps
    )
    warm = max(0, config.warmup_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0)
    rng = random.Random(f"train/{config.seed}")
    step = 0
    perfect_run = 0
    window: list[tuple[float, float]] = []  # (loss, accuracy) of recent steps
    history: list[dict[str, float]] = []
    resumed_from: int | None = None

    ckpt_path: Path | None = None
    digest = _config_digest(model_config, config, sampler)
    if config.checkpoint_dir:
        ckpt_dir = Path(config.checkpoint_dir)
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        ckpt_path = ckpt_dir / "last.pt"
        state = _load_checkpoint(ckpt_path, device)
        if state is not None:
            if state.get("digest") == digest:
                model.load_state_dict(state["model"])
                optimizer.load_state_dict(state["optimizer"])
                scheduler.load_state_dict(state["scheduler"])
                rng.setstate(state["rng"])
                torch.set_rng_state(state["torch_rng"])
                step, perfect_run, window = state["step"], state["perfect_run"], list(state["window"])
                history = list(state["history"])
                resumed_from = step

    def save() -> None:
        if ckpt_path is None:
            return
        tmp = ckpt_path.with_suffix(".tmp")
        torch.save(
            {
                "digest": digest,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "rng": rng.getstate(),
                "torch_rng": torch.get_rng_state(),
                "step": step,
                "perfect_run": perfect_run,
                "window": window,
                "history": history,
                "train_config": config.to_dict(),
            },
            tmp,
        )
        os.replace(tmp, ckpt_path)

    patience = config.patience
    keep = patience or 100
    loss_fn = torch.nn.BCEWithLogitsLoss()
    with_eos = _eos(model)
    t0 = time.perf_counter()
    stopped = "max_steps"
    model.train()
    while step < config.max_steps:
        if should_cancel is not None and should_cancel():
            save()
            raise TrainingCancelled(step)
        batch = sampler.draw_mixed(lengths, config.batch_size, rng, config.near_miss_fraction)
        tensors = encode_batch(batch.words, device, eos=with_eos)
        if states:
            target = torch.from_numpy(state_targets(sampler, batch.words, tensors[0].shape[1])).to(device)  # [B, T]
            with _autocast(device, precision):
                logits = model.position_logits(tensors[0], tensors[1])  # [B, T, Q]
            loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), target.flatten(), ignore_index=-100)
        else:
            target = torch.tensor(batch.labels, dtype=torch.float32, device=device)
            with _autocast(device, precision):
                logits = _logits(model, tensors)
            loss = loss_fn(logits, target)
        if extra_loss is not None:
            loss = loss + extra_loss(model)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        scheduler.step()
        step += 1
        with torch.no_grad():
            if states:  # a word is right when every position's state is
                acc = float(((logits.detach().argmax(-1) == target) | (target < 0)).all(dim=1).float().mean())
            else:
                acc = float(((logits.detach() > 0) == (target > 0.5)).float().mean())
        lv = float(loss.detach())
        if not math.isfinite(lv):
            raise FloatingPointError(f"training loss became {lv} at step {step}")
        window.append((lv, acc))
        if len(window) > keep:
            window.pop(0)
        perfect_run = perfect_run + 1 if acc == 1.0 else 0
        if step % config.progress_every == 0 or step == config.max_steps:
            rec = {"step": step, "loss": lv, "train_accuracy": acc}
            history.append(rec)
            if progress is not None:
                progress({"phase": "train", "total": config.max_steps, **rec})
        if ckpt_path is not None and step % config.checkpoint_every == 0:
            save()
        if patience is not None and perfect_run >= patience:
            stopped = "early_stop"
            break
    wall = time.perf_counter() - t0
    save()
    model.eval()
    recent = window[-min(len(window), keep) :] or [(float("nan"), 0.0)]
    return TrainResult(
        model=model,
        steps=step,
        train_accuracy=float(np.mean([a for _, a in recent])),
        final_loss=float(np.mean([l for l, _ in recent])),
        stopped=stopped,
        wall_s=wall,
        device=str(device),
        precision=precision,
        resumed_from=resumed_from,
        history=history,
    )
