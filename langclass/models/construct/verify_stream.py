"""Bounded verification: words in fixed-size chunks, long words in query blocks, and the guard that
checks the deadline and the cancellation between them.

The construction's checks (:mod:`langclass.models.construct.verify`) never hold more than one chunk of words:
a chunk has at most ``CHUNK_ENTRIES // per_word`` words (``per_word`` the model's tensor entries for
one word), and a word whose attention scores alone exceed :data:`CHUNK_ENTRIES` is evaluated in
blocks of query rows. Peak memory is therefore independent of the number of words. The
:class:`Guard` is called before every chunk and, inside one forward pass, after every layer and
query block, so a deadline or a cancellation stops a run within one block's work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.base.limits import Deadline, Limits

__all__ = ["CHUNK_ENTRIES", "ConstructionCancelled", "Guard", "CancellableLimits", "all_words", "word_chunks",
           "chunk_words", "query_block", "dfa_accepts", "word_text", "random_set"]

CHUNK_ENTRIES = 1 << 22
"""Tensor entries one verification step may hold per intermediate (≈ 32 MB in float64): words are
checked in chunks of at most ``CHUNK_ENTRIES // (length · width)`` words, ``width`` the model's
per-position cost (heads × length for the scores, d_model, feed-forward units × inputs, checked
vectors), and a long word's scores are computed in query blocks of at most this many entries. Peak
memory is therefore independent of the number of words (and linear, not quadratic, in a word's length
for the hidden state); the deadline and cancellation are checked between chunks and blocks."""


class ConstructionCancelled(Exception):
    """``should_cancel()`` returned True; ``partial`` holds what was verified so far."""

    def __init__(self, partial: dict) -> None:
        super().__init__("construction cancelled")
        self.partial = partial


class CancelDeadline(Deadline):
    """A :class:`Deadline` whose every check also polls ``cancel()`` (raising :class:`ConstructionCancelled`),
    so the deadline checks inside synthesis and class decisions make them cancellable too."""

    __slots__ = ("cancel",)

    def __init__(self, seconds: float | None, cancel: Callable[[], bool]) -> None:
        super().__init__(seconds)
        self.cancel = cancel

    def check(self, step: str = "") -> None:
        super().check(step)
        if self.cancel():
            raise ConstructionCancelled({"phase": step or "synthesis"})


@dataclass(frozen=True)
class CancellableLimits(Limits):
    """:class:`Limits` of one construction: every :meth:`deadline` ends at ``end`` (a
    ``time.monotonic()`` instant: the run's start + ``time_limit_s``) or sooner, so synthesis,
    planning, build and verification share one budget instead of each step starting its own; and it
    is a :class:`CancelDeadline` polling ``cancel`` when one is given. A copy with a smaller
    ``time_limit_s`` (``dataclasses.replace``) ends at the earlier of the two instants."""

    cancel: Callable[[], bool] | None = field(default=None, compare=False, hash=False, repr=False)
    end: float | None = field(default=None, compare=False, hash=False, repr=False)

    def deadline(self) -> Deadline:
        d = Deadline(self.time_limit_s) if self.cancel is None else CancelDeadline(self.time_limit_s, self.cancel)
        if self.end is not None:
            d.end_by(self.end)
        return d


def all_words(k: int, L: int, start: int = 0, count: int | None = None) -> np.ndarray:
    """Words ``start … start + count − 1`` (all by default) of the lexicographic list of the k^L words
    of length L over k letters: int64 ``[count, L]``."""
    total = k ** L
    count = total - start if count is None else max(0, min(count, total - start))
    if L == 0:
        return np.zeros((count, 0), dtype=np.int64)
    idx = np.arange(start, start + count, dtype=np.int64)[:, None]
    powers = k ** np.arange(L - 1, -1, -1, dtype=np.int64)[None, :]
    return (idx // powers) % k


def word_chunks(k: int, L: int, per_word: int):
    """The k^L words of length L in chunks of at most ``max(1, CHUNK_ENTRIES // per_word)`` words:
    yields int64 ``[≤ chunk, L]`` arrays, never holding more than one chunk (fixed-size streaming)."""
    size = chunk_words(per_word)
    for start in range(0, k ** L, size):
        yield all_words(k, L, start, size)


def chunk_words(per_word: int) -> int:
    """Words per chunk for a per-word cost of ``per_word`` tensor entries."""
    return max(1, CHUNK_ENTRIES // max(1, per_word))


def query_block(batch: int, heads: int, T: int) -> int | None:
    """Query rows per score block so that ``batch × heads × rows × T ≤ CHUNK_ENTRIES`` (None: all rows fit)."""
    rows = CHUNK_ENTRIES // max(1, batch * heads * T)
    return None if rows >= T else max(1, rows)


class Guard:
    """The deadline and the cancellation flag of one verification, checked between chunks, layers
    and query blocks: ``guard(step)`` raises :class:`~langclass.core.base.errors.TimeLimitExceeded`
    (``step`` names the phase) once the deadline passed and :class:`ConstructionCancelled` (with the
    counts so far, ``partial``) once ``should_cancel()`` is True. ``checks`` counts the checks made."""

    def __init__(self, deadline: Deadline | None, should_cancel: Callable[[], bool] | None, partial: dict) -> None:
        self.deadline, self.should_cancel, self.partial = deadline, should_cancel, partial
        self.step = ""
        self.checks = 0

    def __call__(self, step: str | None = None) -> None:
        if step is not None:
            self.step = step
        self.checks += 1
        if self.deadline is not None:
            self.deadline.check(self.step)
        if self.should_cancel is not None and self.should_cancel():
            raise ConstructionCancelled(self.partial)

    def tick(self) -> None:
        """The check inside one forward pass (between layers and query blocks), for the current step."""
        self()


def dfa_accepts(dfa: DFA, words: np.ndarray) -> np.ndarray:
    """Whether ``dfa`` accepts each row of the int64 ``[B, N]`` letter indices (bool ``[B]``)."""
    states = np.full(words.shape[0], dfa.initial, dtype=np.int64)
    t = dfa.transitions
    for col in range(words.shape[1]):
        states = t[states, words[:, col]]
    return dfa.accepting[states]


def word_text(alphabet: Sequence[str], w: Sequence[int]) -> str | list[str]:
    """A word of letter indices as text (a list of symbols when some symbol is longer than one character)."""
    syms = [alphabet[int(i)] for i in w]
    return "".join(syms) if all(len(a) == 1 for a in alphabet) else syms


def random_set(dfa: DFA, k: int, lengths: Sequence[int], rng: np.random.Generator, start: int = 0) -> list[np.ndarray]:
    """One word per requested length, alternately accepted / rejected by ``dfa`` (uniform among them;
    falls back to the other label, then to a uniform word, when none exists)."""
    from langclass.core.automata.words import sample_word

    idx = {a: i for i, a in enumerate(dfa.alphabet)}
    out = []
    for t, L in enumerate(lengths):
        want = (t + start) % 2 == 0
        w = sample_word(dfa, int(L), want, rng)
        if w is None:
            w = sample_word(dfa, int(L), not want, rng)
        arr = np.array([idx[s] for s in w], dtype=np.int64) if w is not None else rng.integers(0, k, int(L))
        out.append(arr)
    return out
