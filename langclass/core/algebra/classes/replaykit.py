"""What a replay needs: words run on the minimal DFA, and the monoid rebuilt from a certificate's words.

Nothing here reads :mod:`langclass.core.algebra.monoid`: element identities are decided by comparing the
transformations of words on the DFA, and :class:`WordMonoid` rebuilds the syntactic monoid from a
:class:`~langclass.core.algebra.classes.evidence.MonoidWords` certificate (checking that the words are all
of it) and answers the algebraic definitions on it by brute force — an algorithm independent of
the deciders' Green's relations, Cayley graphs and stable-semigroup levels.
"""

from __future__ import annotations

import linecache
import os
from functools import cached_property

import numpy as np

from langclass.core.automata.automaton import DFA
from .evidence import MonoidWords, Separation

__all__ = ["Checker", "ReplayError", "WordMonoid"]


class ReplayError(AssertionError):
    """A certificate or witness does not replay on the DFA; the message names the class, the
    evidence kind and the check that failed (a subclass of ``AssertionError`` for older callers)."""


def describe_failed_check(err: AssertionError) -> str:
    """What an ``assert`` without a message checked: its source line, function, file and line."""
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return "a replay check failed"
    code = tb.tb_frame.f_code
    source = linecache.getline(code.co_filename, tb.tb_lineno).strip().removeprefix("assert ").rstrip(",")
    return f"check `{source}` in {code.co_name} ({os.path.basename(code.co_filename)}:{tb.tb_lineno}) does not hold"


class Checker:
    """Runs words on one canonical minimal DFA; a failed check raises :class:`ReplayError` (never a bare
    ``assert``, which ``python -O`` would strip)."""

    def __init__(self, dfa: DFA) -> None:
        self.A = dfa.canonical()
        self.n = self.A.num_states

    def tr(self, word) -> np.ndarray:
        """The transformation ``[n]`` of a word (``q ↦ q·w``)."""
        out = np.arange(self.n)
        for a in self.A.encode(list(word)):
            out = self.A.transitions[out, a].astype(np.int64)
        return out

    def same(self, w1, w2) -> bool:
        """η(w1) = η(w2)."""
        return bool(np.array_equal(self.tr(w1), self.tr(w2)))

    def run(self, word, q: int | None = None) -> int:
        return int(self.A.run(list(word), q) if q is not None else self.A.run(list(word)))

    def accepts(self, word) -> bool:
        return bool(self.A.accepts(list(word)))

    @staticmethod
    def cat(*ws) -> list[str]:
        out: list[str] = []
        for w in ws:
            out += list(w)
        return out

    def omega(self, w) -> list[str]:
        """w^p for the least p ≥ 1 with η(w)^p idempotent."""
        x = self.tr(w)
        p, y = 1, x
        while not np.array_equal(y[y], y):
            y = x[y]
            p += 1
        return list(w) * p

    def check_context(self, sep: Separation, w1, w2) -> None:
        """Exactly one of prefix·w1·suffix, prefix·w2·suffix is accepted, the first iff ``first_accepted``."""
        a1 = self.accepts(self.cat(sep.prefix, w1, sep.suffix))
        a2 = self.accepts(self.cat(sep.prefix, w2, sep.suffix))
        if not (a1 != a2 and a1 == sep.first_accepted):
            raise ReplayError("the separating context does not separate")
        if self.run(sep.prefix) != sep.state:
            raise ReplayError("the context's prefix does not lead to its state")

    def idempotent_word(self, w) -> None:
        if not (len(w) > 0 and self.same(self.cat(w, w), w)):
            raise ReplayError(f"{list(w)} is not a nonempty idempotent word")

    def monoid(self, mw: MonoidWords) -> WordMonoid:
        """The syntactic monoid rebuilt from a certificate's words (checked to be all of it)."""
        return WordMonoid(self, mw)


class WordMonoid:
    """The transition monoid given by the words of a :class:`MonoidWords`, checked and tabulated.

    Construction checks (raising :class:`ReplayError`) that the words' transformations are pairwise distinct, that element 0 is
    the identity and that the set is closed under right multiplication by every letter — then it is
    the transition monoid (it contains the letters' closure and lies inside it).

    Attributes:
        X: ``[m, n]`` transformations; T: ``[m, m]`` multiplication table (x·y at ``[x, y]``).
    """

    def __init__(self, chk: Checker, mw: MonoidWords) -> None:
        A = chk.A
        m = len(mw.parents) + 1
        if len(mw.letters) != m - 1:
            raise ReplayError("parents and letters differ in length")
        X = np.zeros((m, chk.n), dtype=np.int64)
        X[0] = np.arange(chk.n)
        for i, (p, a) in enumerate(zip(mw.parents, mw.letters), start=1):
            if not (0 <= p < i):
                raise ReplayError("a parent must come before its child")
            X[i] = A.transitions[X[p], A.letter_index(a)]
        index = {row.tobytes(): i for i, row in enumerate(X)}
        if len(index) != m:
            raise ReplayError("two words of the certificate have the same transformation")
        right = np.empty((m, A.num_letters), dtype=np.int64)
        for a in range(A.num_letters):
            for x, row in enumerate(A.transitions[X, a].astype(np.int64)):
                j = index.get(row.tobytes())
                if j is None:
                    raise ReplayError("the certificate's words are not closed under the letters")
                right[x, a] = j
        self.X, self.m, self.k, self.right = X, m, A.num_letters, right
        self._chk, self._index = chk, index
        self._parents = list(mw.parents)
        self._letters = [A.letter_index(a) for a in mw.letters]
        self.letter_ids = right[0].copy()

    def element(self, word) -> int:
        """The id of η(word) among the certificate's elements."""
        return self._index[self._chk.tr(word).tobytes()]

    @cached_property
    def T(self) -> np.ndarray:
        """``[m, m]``: column y is column parent(y) read through the right Cayley graph on y's last
        letter (x·(p·a) = (x·p)·a), so only the m·|Σ| right products are looked up."""
        R = self.right
        out = np.empty((self.m, self.m), dtype=np.int64)
        out[:, 0] = np.arange(self.m)
        for y, (p, a) in enumerate(zip(self._parents, self._letters), start=1):
            out[:, y] = R[out[:, p], a]
        return out

    @cached_property
    def idempotent(self) -> np.ndarray:
        ar = np.arange(self.m)
        return self.T[ar, ar] == ar

    @cached_property
    def semigroup(self) -> np.ndarray:
        """Boolean ``[m]``: the elements of η(Σ⁺) (closure of the letters under products)."""
        mask = np.zeros(self.m, dtype=bool)
        mask[self.letter_ids] = True
        while True:
            cur = np.flatnonzero(mask)
            new = mask.copy()
            new[self.T[np.ix_(cur, self.letter_ids)].ravel()] = True
            if (new == mask).all():
                return mask
            mask = new

    def levels(self) -> tuple[int, np.ndarray]:
        """``(s, T)``: the least s ≥ 1 with η(Σ^s) = η(Σ^{2s}) and the mask of η(Σ^s), by computing
        the sets η(Σ^j) one after the other."""
        sets = [None]
        cur = np.zeros(self.m, dtype=bool)
        cur[self.letter_ids] = True
        sets.append(cur)
        s = 1
        while True:
            while len(sets) <= 2 * s:
                nxt = np.zeros(self.m, dtype=bool)
                nxt[self.T[np.ix_(np.flatnonzero(sets[-1]), self.letter_ids)].ravel()] = True
                sets.append(nxt)
            if (sets[s] == sets[2 * s]).all():
                return s, sets[s]
            s += 1

    def power(self, x: int, p: int) -> int:
        r = 0
        for _ in range(p):
            r = int(self.T[r, x])
        return r

    def omega_idempotent(self, x: int) -> int:
        y = x
        while not self.idempotent[y]:
            y = int(self.T[y, x])
        return y

    def regular(self) -> np.ndarray:
        """Boolean ``[m]``: x is regular (x = x·y·x for some y)."""
        T = self.T
        ar = np.arange(self.m)
        return np.array([(T[T[x], x] == x).any() for x in ar])

    def r_classes(self) -> np.ndarray:
        """Label ``[m]`` of the R-class of every element (equal right ideals xM)."""
        keys = [np.unique(self.T[x]).tobytes() for x in range(self.m)]
        lab = {k: i for i, k in enumerate(dict.fromkeys(keys))}
        return np.array([lab[k] for k in keys])

    def l_classes(self) -> np.ndarray:
        """Label ``[m]`` of the L-class of every element (equal left ideals Mx)."""
        keys = [np.unique(self.T[:, x]).tobytes() for x in range(self.m)]
        lab = {k: i for i, k in enumerate(dict.fromkeys(keys))}
        return np.array([lab[k] for k in keys])

    def local(self, e: int, f: int | None = None) -> np.ndarray:
        """Element ids of eMf."""
        f = e if f is None else f
        return np.unique(self.T[self.T[e]][:, f])
