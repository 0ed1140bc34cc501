"""Length-generalization evaluation: accuracy per test length and the longest perfect length N*.

Protocol (*Disentangling the Expressivity of RoPE*, §3.5 and App. E.2): for every tested length
draw 512 labelled strings (balanced where both classes exist, half of the negatives near misses,
see :mod:`langclass.models.training.data`), report the accuracy per length and

    N* = the largest tested N such that accuracy is 100% at every tested length ≤ N.

Convention when the *first* tested length already fails: N* = 0 — the value the paper's Table 4
reports for such runs (e.g. SiPE_NP, base 1e8, on (aa)*: N* max 0.0). Read N* = 0 as "no tested
length was perfect"; N* is never a training length.

Everything here is model-agnostic: a model enters only through a ``predict`` callable mapping a
list of words (tuples of letter indices) to a boolean numpy array (accept/reject).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from langclass.core.base.errors import InputError

from langclass.models.training.data import DEFAULT_NEAR_MISS_FRACTION, LabeledWords, LanguageSampler

__all__ = [
    "longest_perfect_length",
    "build_test_sets",
    "evaluate_lengths",
    "evaluate_states",
    "describe",
    "Predict",
]

Predict = Callable[[list[tuple[int, ...]]], np.ndarray]
"""``predict(words) -> bool array [len(words)]``: the model's accept decision for each word."""


def longest_perfect_length(accuracy_by_length: Mapping[int, float]) -> int:
    """N*: the largest tested length N with accuracy exactly 1.0 at every tested length ≤ N.

    Args:
        accuracy_by_length: ``{length: accuracy}`` (keys may be str digits, as after a JSON
            round trip); accuracy 1.0 means every string of that length was classified right.

    Returns:
        N*, or 0 when the shortest tested length is not perfect (or nothing was tested)
        — the convention of *Disentangling the Expressivity of RoPE*, Table 4.

    Example:
        >>> longest_perfect_length({41: 1.0, 42: 1.0, 43: 0.99, 44: 1.0})
        42
        >>> longest_perfect_length({41: 0.5, 42: 1.0})
        0
    """
    best = 0
    for n in sorted(int(k) for k in accuracy_by_length):
        acc = accuracy_by_length[n] if n in accuracy_by_length else accuracy_by_length[str(n)]  # type: ignore[index]
        if acc != 1.0:
            break
        best = n
    return best


def build_test_sets(
    sampler: LanguageSampler,
    lengths: Sequence[int],
    per_length: int = 512,
    seed: int = 0,
    near_miss_fraction: float = DEFAULT_NEAR_MISS_FRACTION,
) -> dict[int, LabeledWords]:
    """One labelled test set per length, reproducible from ``seed``.

    Each length uses its own generator seeded by ``("test", seed, length)``, so a test set does
    not depend on which other lengths are tested.

    Raises:
        InputError: empty ``lengths``, a length outside the sampler's range, ``per_length < 1``.
    """
    if not lengths:
        raise InputError("no test lengths", field="test_lengths")
    if per_length < 1:
        raise InputError(f"per_length must be ≥ 1, got {per_length}", field="eval_per_length")
    out: dict[int, LabeledWords] = {}
    for n in sorted(set(int(x) for x in lengths)):
        rng = random.Random(f"test/{seed}/{n}")
        out[n] = sampler.draw(n, per_length, rng, near_miss_fraction)
    return out


def evaluate_lengths(
    predict: Predict,
    test_sets: Mapping[int, LabeledWords],
    *,
    should_cancel: Callable[[], bool] | None = None,
) -> dict[int, float]:
    """Accuracy per length: ``{length: correct / total}`` (exactly 1.0 iff all correct).

    ``should_cancel`` is polled between lengths; when it returns True the lengths evaluated so
    far are returned (the caller decides what a partial evaluation means).
    """
    acc: dict[int, float] = {}
    for n in sorted(test_sets):
        if should_cancel is not None and should_cancel():
            break
        data = test_sets[n]
        pred = np.asarray(predict(list(data.words)), dtype=bool)
        truth = np.asarray(data.labels, dtype=bool)
        if pred.shape != truth.shape:
            raise RuntimeError(f"predict returned shape {pred.shape} for {truth.shape[0]} words")
        correct = int((pred == truth).sum())
        acc[n] = 1.0 if correct == truth.size else correct / truth.size
    return acc


def evaluate_states(
    check: Callable[[list[tuple[int, ...]]], np.ndarray],
    test_sets: Mapping[int, LabeledWords],
    *,
    should_cancel: Callable[[], bool] | None = None,
) -> dict[int, float]:
    """State-prediction accuracy per length: ``{length: words with every position's state right /
    words}`` (exactly 1.0 iff all right). ``check(words) -> bool [len(words)]`` says, per word,
    whether the model predicted the minimal DFA's state at every position
    (:func:`langclass.models.training.train.make_state_check`); the protocol of *Algebraic
    Decomposition Theory for Transformer Length Generalization*. ``should_cancel`` as in
    :func:`evaluate_lengths`."""
    acc: dict[int, float] = {}
    for n in sorted(test_sets):
        if should_cancel is not None and should_cancel():
            break
        words = list(test_sets[n].words)
        ok = np.asarray(check(words), dtype=bool)
        if ok.shape != (len(words),):
            raise RuntimeError(f"check returned shape {ok.shape} for {len(words)} words")
        correct = int(ok.sum())
        acc[n] = 1.0 if correct == len(words) else correct / len(words)
    return acc


def describe(values: Sequence[float]) -> dict[str, float | int | None]:
    """``{"max", "mean", "std", "min", "count"}`` of a sample (population std, ddof = 0, as
    the spread over a run grid); all None for an empty sample."""
    vals = [float(v) for v in values]
    if not vals:
        return {"max": None, "mean": None, "std": None, "min": None, "count": 0}
    arr = np.asarray(vals, dtype=np.float64)
    std = float(arr.std()) if arr.size > 1 else 0.0
    return {"max": float(arr.max()), "mean": float(arr.mean()), "std": std if math.isfinite(std) else None, "min": float(arr.min()), "count": int(arr.size)}
