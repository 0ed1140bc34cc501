"""How much of a construction's verification fits its time limit: the all-words length and the random
words chosen from the model's measured cost per word and the time left.

Under the defaults (no ``all_words_up_to`` / ``random_words`` / ``random_max_length`` given) and a
time limit, :class:`VerificationBudget` sizes the checks of
:func:`~langclass.models.construct.verify.verify_formula_model` and
:func:`~langclass.models.construct.verify.verify_brasp_model`:

1. every word up to the **minimum length** :func:`minimum_all_words_length` is always checked — the
   number of states of the minimal DFA, so that every state is reached by a checked word (a shortest
   word to a state has fewer letters than the DFA has states) and then read on every letter: every
   transition of the minimal DFA is exercised. A run that cannot reach it is a
   :class:`~langclass.core.base.errors.TimeLimitExceeded` naming the minimum and the model's
   measured cost per word (:meth:`VerificationBudget.cannot_reach_minimum`), raised as soon as a
   reliable measurement predicts it (:data:`EARLY_FACTOR`), or when the deadline passes inside the
   minimum;
2. longer lengths, up to the default (:func:`default_all_words_length`), while the prediction for
   the next length fits in :data:`ALL_WORDS_SHARE` of the time left when verification began. The
   prediction is the model's measured cost: seconds ≈ c0 · forward passes + c1 · tensor entries
   (the words of a length are checked in chunks, one forward pass each, of the tensor entries the
   model's check of one word costs), fitted by least squares to every length and word checked so far;
3. then the random words (and, for conventional RoPE, the words past N_max), shortest first, while the
   prediction for the next word fits in the time left less :data:`MARGIN_S`.

The record says what was verified (:meth:`VerificationBudget.record`). Explicit options are kept as
given: then only the deadline applies, as before.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from langclass.core.base.errors import TimeLimitExceeded
from langclass.core.base.limits import Deadline, Limits
from langclass.models.construct.options import _count_words as count_words, default_all_words_length
from langclass.models.construct.verify_stream import chunk_words

__all__ = ["VerificationBudget", "verification_budget", "default_all_words_length", "minimum_all_words_length", "count_words",
           "ALL_WORDS_SHARE", "MARGIN_S"]

ALL_WORDS_SHARE = 0.7
"""Part of the time left at the start of verification that all words past the minimum may use; the
rest goes to the random words."""

EARLY_MEASURE_S = 1.0
EARLY_FACTOR = 3.0
"""The minimum is refused before it is tried only when the last length measured took at least
:data:`EARLY_MEASURE_S` seconds (shorter ones are dominated by the per-pass overhead and the
machine's load: extrapolated over the minimum's words they overestimate tens of times) and the
prediction exceeds the time left :data:`EARLY_FACTOR` times; otherwise the minimum is tried and the
error is raised when the deadline passes inside it."""

MARGIN_S = 1.0
"""Seconds kept free before the deadline (assembling the record)."""


def minimum_all_words_length(num_states: int | None, default: int) -> int:
    """The guaranteed exhaustive length: the minimal DFA's number of states (every transition exercised,
    module docstring), at least 1, at most ``default``; 4 (or ``default``) without a DFA."""
    return max(1, min(default, 4 if num_states is None else num_states))


class VerificationBudget:
    """The sizing of one verification (module docstring).

    Args:
        deadline: the verification's deadline — the construction's, :data:`MARGIN_S` earlier (None, or
            one without an end: nothing is sized).
        minimum: the guaranteed all-words length; ``target`` the longest tried.
        k: |Σ|. ``entries``: tensor entries the model's check of one word of length L costs (set by
            the verification when None).
        sized_all, sized_random: whether the all-words length / the random words were left to the
            defaults (otherwise they are checked as given).
        describe: the model's size for the limit error (e.g. "246,918 parameters").
    """

    def __init__(self, deadline: Deadline | None, *, minimum: int, target: int, k: int,
                 entries: Callable[[int], int] | None = None, sized_all: bool, sized_random: bool, describe: str = "") -> None:
        left = None if deadline is None else deadline.remaining
        self.deadline = deadline
        self.timed = left is not None
        self.minimum, self.target, self.k = min(minimum, target), target, k
        self.entries = entries
        self.sized_all = sized_all and self.timed
        self.sized_random = sized_random and self.timed
        self.describe = describe
        self.t_start = time.monotonic()
        self.left_at_start = left
        self.all_words_until = None if left is None else self.t_start + ALL_WORDS_SHARE * left
        self.points: list[tuple[int, int, float]] = []  # (forward passes, tensor entries, seconds) measured
        self.measured_at: int | None = None
        self.seconds_per_word: dict[int, float] = {}
        self.stopped: list[str] = []
        self.random_skipped = 0

    # ---------------------------------------------------------------- cost model
    def _fit(self) -> tuple[float, float] | None:
        """``(c0, c1)`` of seconds ≈ c0 · forward passes + c1 · tensor entries, least squares over the
        measured lengths and words (non-negative; None before two measurements)."""
        pts = self.points
        if len(pts) < 2:
            return None
        s00 = sum(x0 * x0 for x0, _, _ in pts)
        s01 = sum(x0 * x1 for x0, x1, _ in pts)
        s11 = sum(x1 * x1 for _, x1, _ in pts)
        b0 = sum(x0 * y for x0, _, y in pts)
        b1 = sum(x1 * y for _, x1, y in pts)
        det = s00 * s11 - s01 * s01
        c0 = (b0 * s11 - b1 * s01) / det if det > 0 else -1.0
        c1 = (s00 * b1 - s01 * b0) / det if det > 0 else -1.0
        if c0 < 0 or c1 < 0:  # one term alone
            c0, c1 = (0.0, b1 / s11) if c0 < 0 else (b0 / s00, 0.0)
        return c0, c1

    def predict(self, L: int, words: int) -> float | None:
        """Predicted seconds of checking ``words`` words of length ``L`` (None before two measurements)."""
        fit = self._fit()
        if fit is None:
            return None
        per_word = max(1, self.entries(L))
        return fit[0] * math.ceil(words / chunk_words(per_word)) + fit[1] * words * per_word

    def _measure(self, L: int, words: int, seconds: float) -> None:
        if L > 0 and words:
            per_word = max(1, self.entries(L))
            self.points.append((math.ceil(words / chunk_words(per_word)), words * per_word, seconds))

    # ---------------------------------------------------------------- all words
    def all_words_length(self, L: int) -> bool:
        """Whether to check the words of length ``L`` (called before each length, in order).

        Raises:
            TimeLimitExceeded: the measured cost predicts that the minimum cannot be reached.
        """
        if not self.sized_all:
            return True
        if L <= self.minimum:
            if self._fit() is not None and self.points[-1][2] >= EARLY_MEASURE_S:
                need = sum(self.predict(n, self.k ** n) for n in range(L, self.minimum + 1))
                left = self.deadline.remaining
                if need > EARLY_FACTOR * left:
                    raise self.cannot_reach_minimum(L - 1, need, left)
            return True
        pred = self.predict(L, self.k ** L)
        if pred is not None and time.monotonic() + pred > self.all_words_until:
            self.stopped.append(f"all words: length {L} would need about {pred:.1f} s, past the share of the "
                                f"time limit left for them")
            return False
        return True

    def measured(self, L: int, words: int, seconds: float) -> None:
        """Record the time the words of length ``L`` took."""
        self._measure(L, words, seconds)
        if words and L > 0:
            self.measured_at = L
            self.seconds_per_word[L] = seconds / words

    def cannot_reach_minimum(self, reached: int, need: float | None = None, left: float | None = None) -> TimeLimitExceeded:
        """The limit error of a verification that cannot check every word up to the minimum."""
        n = self.minimum
        cost = ""
        if self.measured_at is not None:
            cost = (f" at this model's measured {1000 * self.seconds_per_word[self.measured_at]:.3g} ms per word of "
                    f"length {self.measured_at}")
        how = (f"need about {need:.0f} s{cost}, and {left:.0f} s of the time limit are left" if need is not None
               else f"did not finish within the time limit{cost} (all words checked up to length {reached})")
        err = TimeLimitExceeded(
            "time_limit_s", self.deadline.seconds if self.deadline else None,
            f"the verification cannot reach its minimum: all words up to length {n} ({count_words(self.k, n):,} "
            f"words over {self.k} letters, every transition of the minimal DFA exercised) {how}"
            + (f"; the model has {self.describe}" if self.describe else "")
            + "; raise time_limit_s, or give all_words_up_to explicitly")
        err.extra.update({"step": f"verification (all words up to the minimum length {n})",
                          "minimum_all_words_up_to": n, "all_words_checked_up_to": reached,
                          "seconds_per_word": None if self.measured_at is None else self.seconds_per_word[self.measured_at],
                          "measured_at_length": self.measured_at})
        return err

    # ---------------------------------------------------------------- random words
    def random_word(self, L: int) -> bool:
        """Whether to check one more random (or past-N_max) word of length ``L`` (lengths ascending
        within a phase); once one is skipped, every longer one is too."""
        if not self.sized_random:
            return True
        if self.random_skipped:
            self.random_skipped += 1
            return False
        pred = self.predict(L, 1)
        left = self.deadline.remaining
        if pred is not None and pred > left:
            self.random_skipped = 1
            self.stopped.append(f"random words: one of length {L} would need about {pred:.1f} s, "
                                f"{left:.1f} s were left")
            return False
        return True

    def random_measured(self, L: int, seconds: float) -> None:
        """Record the time one word of length ``L`` took."""
        self._measure(L, 1, seconds)

    def ran_out(self, phase: str, L: int) -> None:
        """The deadline passed inside an optional check (``phase`` at length ``L``): it stops there."""
        self.stopped.append(f"{phase}: the time limit passed during length {L}")
        if phase != "all words":
            self.random_skipped = max(self.random_skipped, 1)

    def record(self, all_words_up_to: int, random_planned: int) -> dict[str, Any]:
        """What was verified and how it was chosen (the record's ``verification``)."""
        return {"sized_to_time_limit": self.sized_all or self.sized_random,
                "time_left_s": None if self.left_at_start is None else round(self.left_at_start, 2),
                "minimum_all_words_up_to": self.minimum if self.sized_all else None,
                "all_words_target": self.target, "all_words_up_to": all_words_up_to,
                "random_words_planned": random_planned,
                "random_words_skipped": self.random_skipped,
                "seconds_per_word": {str(L): round(s, 6) for L, s in sorted(self.seconds_per_word.items())},
                "stopped_by_time": self.stopped}


def verification_budget(prep: dict, limits: Limits, n: int, size: dict) -> tuple[Deadline, VerificationBudget]:
    """The verification's deadline (:data:`MARGIN_S` before the construction's, whose end is
    ``limits.end``) and its sizing: the all-words length ``n`` and the random words are fitted to the
    time left when the spec left them to the defaults (``prep`` is the construction's prepared spec,
    ``size`` its planned size)."""
    opts, dfa = prep["opts"], prep["dfa"]
    vdeadline = Deadline(limits.time_limit_s)
    if getattr(limits, "end", None) is not None:
        vdeadline.end_by(limits.end - MARGIN_S)
    num_states = None if dfa is None else dfa.canonical().num_states
    budget = VerificationBudget(
        vdeadline, minimum=minimum_all_words_length(num_states, n), target=n, k=len(prep["alphabet"]),
        sized_all="all_words_up_to" not in opts, sized_random=not {"random_words", "random_max_length"} & set(opts),
        describe=f"{size['parameters']:,} parameters, {size['layers']} layers, d_model {size['d_model']}")
    return vdeadline, budget
