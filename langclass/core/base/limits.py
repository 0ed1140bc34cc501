"""Limits on every expensive step, and a wall-clock deadline helper.

Each limit has a name; hitting it raises :class:`~langclass.core.base.errors.LimitExceeded` (or
:class:`~langclass.core.base.errors.TimeLimitExceeded`) carrying that name and its value, so a user
knows which knob was hit. The service builds a :class:`Limits` from its settings.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from .errors import LimitExceeded, TimeLimitExceeded

__all__ = ["Limits", "Deadline", "DEFAULT_LIMITS", "RECORD_TEXT_CHARS", "readback_limits"]


@dataclass(frozen=True)
class Limits:
    """Bounds on input size and work.

    Attributes:
        max_regex_length: characters in a regex or formula.
        max_nesting_depth: parenthesis / operator nesting depth of a regex or formula.
        max_repetition: the largest n or m in a bounded repetition ``{n}``, ``{n,m}``.
        max_states: states of any intermediate DFA (after determinization, products).
        max_alphabet: symbols in the alphabet.
        max_monoid_size: elements of the transition monoid.
        max_monoid_entries: stored entries (elements × states) of the transition monoid's table.
        max_k_automaton_letters: letters (= |Σ|^k) of a k-automaton built eagerly.
        time_limit_s: wall-clock seconds of one analysis or construction (None = unlimited).
        max_parameters: parameters of one constructed transformer, checked on its plan before any
            weight is allocated (None = unlimited).
    """

    max_regex_length: int = 10_000
    max_nesting_depth: int = 200
    max_repetition: int = 1_000
    max_states: int = 100_000
    max_alphabet: int = 64
    max_monoid_size: int = 100_000
    max_monoid_entries: int = 100_000_000
    max_k_automaton_letters: int = 1_000_000
    time_limit_s: float | None = 60.0
    max_parameters: int | None = 10_000_000

    def check(self, name: str, observed: int | float, *, field: str | None = None) -> None:
        """Raise :class:`LimitExceeded` naming ``name`` (and the input ``field``) when ``observed`` exceeds the limit."""
        bound = getattr(self, name)
        if bound is not None and observed > bound:
            raise LimitExceeded(name, bound, f"{name}={bound} exceeded (needed at least {observed})", field=field)

    def deadline(self) -> "Deadline":
        """A :class:`Deadline` starting now for ``time_limit_s``."""
        return Deadline(self.time_limit_s)


DEFAULT_LIMITS = Limits()


class Deadline:
    """Cooperative wall-clock limit: call :meth:`check` inside long loops.

    Raises:
        TimeLimitExceeded: (from :meth:`check`) once ``seconds`` have passed; ``limit`` is
            ``"time_limit_s"`` and ``extra['step']`` names the step that was running.
    """

    __slots__ = ("seconds", "_end")

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._end = None if seconds is None else time.monotonic() + seconds

    def check(self, step: str = "") -> None:
        if self._end is not None and time.monotonic() > self._end:
            err = TimeLimitExceeded("time_limit_s", self.seconds, f"time limit of {self.seconds} s exceeded during {step or 'analysis'}")
            err.extra["step"] = step or "analysis"
            raise err

    def end_by(self, end: float) -> None:
        """End at the ``time.monotonic()`` instant ``end`` if that is sooner (a step inside a larger
        budget: the message still names ``seconds``, the limit that was set)."""
        self._end = end if self._end is None else min(self._end, end)

    @property
    def remaining(self) -> float | None:
        return None if self._end is None else max(0.0, self._end - time.monotonic())


RECORD_TEXT_CHARS = 4_000_000
"""Longest formula or B-RASP program text the product writes into a record (the ``formula`` and
``program`` of a construct record): a longer one is recorded as None. Everything it writes is read
back under :func:`readback_limits`."""


def readback_limits(limits: Limits = DEFAULT_LIMITS) -> Limits:
    """``limits`` with the text bounds raised to what the product writes itself: ``max_regex_length``
    to :data:`RECORD_TEXT_CHARS` and ``max_nesting_depth`` to half of it (a text of n characters nests
    at most n / 2 parentheses or operators deep); for formulas and programs the product recorded (a
    local-divisor formula runs to 10⁵ characters, past the 10⁴ of user input), never for user input."""
    return replace(limits, max_regex_length=max(limits.max_regex_length, RECORD_TEXT_CHARS),
                   max_nesting_depth=max(limits.max_nesting_depth, RECORD_TEXT_CHARS // 2))
