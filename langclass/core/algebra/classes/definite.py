"""Definite and reverse definite languages, recognized on the minimal DFA alone (so without the monoid).

* L is k-definite (for words of length ≥ k, membership depends on the last k letters only) iff every
  word of length k maps all states of the minimal complete DFA to one state: then u·w and v·w end
  in one state for |w| = k; conversely two states p·w ≠ q·w (p, q reachable, the DFA minimal) are
  told apart by some z, and u·w·z, v·w·z share their last k letters. An n-state definite automaton
  is (n−1)-definite (M. Perles, M. O. Rabin & E. Shamir, "The theory of definite automata", 1963),
  so k < n is searched.
* L is reverse k-definite (membership of words of length ≥ k depends on the first k letters) iff
  every state the initial state reaches by a word of length k is a sink (L_q = Σ* or ∅: one state
  looping on every letter in a minimal DFA).

Both are locally testable (membership is a Boolean combination of the length-k prefix or suffix;
J. A. Brzozowski & I. Simon, "Characterizations of locally testable events", 1973) and in FO²[<]:
their syntactic semigroup S satisfies s·e = e (definite), resp. e·s = e (reverse definite), for every
idempotent e and s ∈ S, so a regular x = x·y·x of M = S¹ is idempotent — with e = y·x (resp. x·y),
x = x·e = e (resp. x = e·x = e) unless y = 1, where x = x·x — i.e. M ∈ DA (D. Thérien & T. Wilke,
"Over words, two variables are as powerful as one quantifier alternation", 1998). The analysis uses
this when the monoid is over its cap; the lattice then carries the answers to the classes containing
LT and FO²[<] (locally threshold testable, LTL[P,Y], star-free, FO²[<,MOD], FO[<,MOD]).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from langclass.core.automata.automaton import DFA
from .base import Evidence

__all__ = ["Definite", "DEFINITE_WORK", "find_definite", "check_definite"]

DEFINITE_WORK = 20_000_000
"""States visited (plus 64 per set, for its overhead) while following the sets Q·w level by level
(|w| = 1, 2, …); beyond it the language is not recognized as definite by this route (the answer
stays with the monoid's tests)."""


@dataclass(frozen=True)
class Definite(Evidence):
    """The language is ``k``-definite (``side`` "suffix": every word of length k maps all states to
    one state) or reverse k-definite (``side`` "prefix": every word of length k leads the initial
    state to a sink), hence locally testable and in FO²[<]."""

    CHECK = ("suffix: every word of length k maps all states of the minimal DFA to one state; prefix: every "
             "word of length k leads the initial state to a state looping on every letter")
    k: int
    side: str


def _suffix_levels(A: DFA, k_max: int, max_work: int, deadline=None) -> int | None:
    """Least k ≤ k_max with |Q·w| = 1 for every word w of length k; None if none or over the work."""
    n, t = A.num_states, A.transitions.astype(np.int64)
    if n == 1:
        return 0
    level = [np.arange(n, dtype=np.int64)]
    work = 0
    for k in range(1, k_max + 1):
        if deadline is not None:
            deadline.check("definite languages")
        nxt: dict[bytes, np.ndarray] = {}
        for S in level:
            work += (S.size + 64) * t.shape[1]
            if work > max_work:
                return None
            for a in range(t.shape[1]):
                T = np.unique(t[S, a])
                nxt.setdefault(T.tobytes(), T)
        level = list(nxt.values())
        if all(S.size == 1 for S in level):
            return k
    return None


def _prefix_levels(A: DFA, k_max: int) -> int | None:
    """Least k ≤ k_max with every state reached from the initial one by a word of length k a sink."""
    t = A.transitions.astype(np.int64)
    sink = (t == np.arange(A.num_states)[:, None]).all(axis=1)
    cur = np.array([A.initial], dtype=np.int64)
    for k in range(0, k_max + 1):
        if sink[cur].all():
            return k
        cur = np.unique(t[cur].ravel())
    return None


def find_definite(dfa: DFA, max_work: int = DEFINITE_WORK, deadline=None) -> Definite | None:
    """A :class:`Definite` certificate (the least k, suffix side first) or ``None``.

    Args:
        dfa: any complete DFA (minimized here).
        max_work: bound on the states visited by the suffix search (:data:`DEFINITE_WORK`).
        deadline: optional :class:`~langclass.core.base.limits.Deadline`, checked per word length.

    Raises:
        TimeLimitExceeded: the deadline passed.
    """
    A = dfa.canonical()
    n = A.num_states
    k = _suffix_levels(A, max(n - 1, 0), max_work, deadline)
    if k is not None:
        return Definite(k, "suffix")
    k = _prefix_levels(A, n)
    if k is not None:
        return Definite(k, "prefix")
    return None


def check_definite(dfa: DFA, cert: Definite) -> None:
    """Replay a :class:`Definite` certificate on the DFA (every word of length k, as the set of
    states it leads to).

    Raises:
        AssertionError: the claim does not hold (or the side is unknown), or k is not the least
            on its side (raised explicitly, so ``python -O`` skips none).
    """
    A = dfa.canonical()
    if cert.side not in ("suffix", "prefix"):
        raise AssertionError(f"unknown side {cert.side!r}")
    if not (isinstance(cert.k, int) and 0 <= cert.k <= max(A.num_states, 1)):
        raise AssertionError("k out of range")
    if cert.k > 0:  # k is the least: the claim fails at k − 1
        try:
            _check_definite_at(A, cert.side, cert.k - 1)
        except AssertionError:
            pass
        else:
            raise AssertionError(f"the language is already {cert.k - 1}-definite on that side: k is not least")
    _check_definite_at(A, cert.side, cert.k)


def _check_definite_at(A: DFA, side: str, k: int) -> None:
    """Raise AssertionError unless every word of length k does what ``side`` says (see :func:`check_definite`)."""
    t = A.transitions.astype(np.int64)
    if side == "prefix":
        sink = (t == np.arange(A.num_states)[:, None]).all(axis=1)
        cur = np.array([A.initial], dtype=np.int64)
        for _ in range(k):
            cur = np.unique(t[cur].ravel())
        if not sink[cur].all():
            raise AssertionError("a word of length k leads the initial state to a state that is not a sink")
        return
    level = {np.arange(A.num_states, dtype=np.int64).tobytes(): np.arange(A.num_states, dtype=np.int64)}
    for _ in range(k):
        nxt: dict[bytes, np.ndarray] = {}
        for S in level.values():
            for a in range(t.shape[1]):
                T = np.unique(t[S, a])
                nxt.setdefault(T.tobytes(), T)
        level = nxt
    if not all(S.size == 1 for S in level.values()):
        raise AssertionError("some word of length k maps two states to different states")
