"""Brute-force algebra on Python tuples for the local tests (issue 22): no langclass.core.algebra code.

The transition monoid of a minimal DFA is enumerated as tuples (x·y: apply x, then y), the levels
η(Σ^j) are computed one after the other, and the local properties are checked by their definitions:

* U_m = η((Σ^m)⁺) = ⋃_{j ≥ 1} η(Σ^{jm}); the stability index s (least s with η(Σ^s) = η(Σ^{2s}));
* U locally R-trivial: for every idempotent e ∈ U, eUe = {e·u·e : u ∈ U} has x ↦ x·eUe injective;
* U ∈ LDA: for every idempotent e ∈ U, every x ∈ eUe with x ∈ x·eUe·x is idempotent.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from langclass.core.automata.automaton import DFA


class LocalBrute:
    def __init__(self, dfa: DFA) -> None:
        A = dfa.canonical()
        n = A.num_states
        self.gens = [tuple(int(A.transitions[q, a]) for q in range(n)) for a in range(A.num_letters)]
        self._levels = [None, frozenset(self.gens)]
        self.s = self._stability()

    @staticmethod
    def mul(x, y):
        return tuple(y[q] for q in x)

    def level(self, j: int) -> frozenset:
        while len(self._levels) <= j:
            self._levels.append(frozenset(self.mul(x, g) for x in self._levels[-1] for g in self.gens))
        return self._levels[j]

    def _stability(self) -> int:
        s = 1
        while self.level(s) != self.level(2 * s):
            s += 1
        return s

    def u(self, m: int) -> frozenset:
        """η((Σ^m)⁺): the union of the levels η(Σ^{jm}) until that sequence repeats."""
        seen, out, j = set(), set(), 1
        while True:
            lev = self.level(j * m)
            if lev in seen:
                return frozenset(out)
            seen.add(lev)
            out |= lev
            j += 1

    def stable(self) -> frozenset:
        return self.level(self.s)

    def local(self, U, e):
        return {self.mul(self.mul(e, u), e) for u in U}

    def locally_r_trivial(self, U) -> bool:
        for e in U:
            if self.mul(e, e) != e:
                continue
            N = self.local(U, e)
            ideals = [frozenset(self.mul(x, y) for y in N) for x in N]
            if len(set(ideals)) != len(N):
                return False
        return True

    def in_lda(self, U) -> bool:
        for e in U:
            if self.mul(e, e) != e:
                continue
            N = self.local(U, e)
            for x in N:
                if any(self.mul(self.mul(x, y), x) == x for y in N) and self.mul(x, x) != x:
                    return False
        return True

    def least_y_mod_modulus(self, up_to: int | None = None) -> int | None:
        """The least m ≤ up_to (default s) with U_m locally R-trivial."""
        for m in range(1, (self.s if up_to is None else up_to) + 1):
            if self.locally_r_trivial(self.u(m)):
                return m
        return None


@st.composite
def small_dfas(draw, n_max: int = 4, k_max: int = 2):
    """Random complete DFAs over {a, b, …} with up to ``n_max`` states and ``k_max`` letters (minimized)."""
    n = draw(st.integers(1, n_max))
    k = draw(st.integers(1, k_max))
    table = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), min_size=n, max_size=n))
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return DFA(tuple("abc"[:k]), np.array(table, dtype=np.int64), 0, np.array(acc, dtype=bool)).canonical()
