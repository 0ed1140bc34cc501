"""Evidence types several families share: separating contexts, counters, the monoid as words.

Each is a frozen :class:`~langclass.core.algebra.classes.base.Evidence` dataclass; what a replay checks for
it is written next to it in ``CHECK`` and done by :mod:`langclass.core.algebra.classes.replaykit`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import Evidence, words

__all__ = ["Separation", "Counter", "MonoidWords", "CERT_MONOID_MAX", "monoid_words", "separation"]

CERT_MONOID_MAX = 512
"""Algebraic certificates carry the whole monoid as words (:class:`MonoidWords`) up to this many
elements; beyond it they carry the figures only (``monoid`` is then ``None``)."""


@dataclass(frozen=True)
class Separation(Evidence):
    """Words showing that two elements differ: exactly one of prefix·w₁·suffix, prefix·w₂·suffix is
    accepted (w₁, w₂ words of the two elements); ``state`` is where the prefix leads."""

    state: int
    prefix: tuple[str, ...]
    suffix: tuple[str, ...]
    first_accepted: bool


@dataclass(frozen=True)
class Counter(Evidence):
    """A counter: a state q and m ≥ 2 with q·w ≠ q and q·w^m = q (so η(w) generates the cyclic group
    Z_m); ``prefix`` leads the initial state to q and ``cycle`` is q, q·w, …, q·w^{m-1}."""

    CHECK = "q·w ≠ q and q·w^m = q"
    word: tuple[str, ...]
    state: int
    m: int
    cycle: tuple[int, ...]
    prefix: tuple[str, ...]


@dataclass(frozen=True)
class MonoidWords(Evidence):
    """The transition monoid as a tree of words: element 0 is ε, element i ≥ 1 is the word of
    ``parents[i-1]`` followed by ``letters[i-1]`` (shortlex-least words, parents before children).

    A replay computes the transformations of these words on the minimal DFA, checks that they are
    pairwise distinct and closed under every letter (so they are exactly the syntactic monoid) and
    then checks the claimed property by its definition on them."""

    CHECK = "the words are pairwise distinct transformations closed under every letter: the whole monoid"
    parents: tuple[int, ...]
    letters: tuple[str, ...]


def monoid_words(M) -> MonoidWords | None:
    """:class:`MonoidWords` of a :class:`~langclass.core.algebra.monoid.TransitionMonoid`, or ``None``
    when it has more than :data:`CERT_MONOID_MAX` elements."""
    if M.size > CERT_MONOID_MAX:
        return None
    alpha = M.dfa.alphabet
    return MonoidWords(tuple(int(p) for p in M.parent[1:].tolist()),
                       tuple(alpha[int(a)] for a in M.last_letter[1:].tolist()))


def separation(ctx, t1: np.ndarray, t2: np.ndarray) -> Separation:
    """Words u, v and a state q showing that two transformations are different elements of the
    monoid of ``ctx.dfa``: exactly one of u·w₁·v and u·w₂·v is accepted (w₁, w₂ any words of t1, t2)."""
    diff = np.flatnonzero(np.asarray(t1) != np.asarray(t2))
    assert diff.size, "the transformations are equal"
    q = int(diff[0])
    u = ctx.access_word(q)
    v = ctx.separating_word(int(t1[q]), int(t2[q]))
    return Separation(q, words(u), words(v), bool(ctx.dfa.accepting[int(ctx.dfa.run(v, int(t1[q])))]))
