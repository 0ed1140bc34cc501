"""The transition monoid value: elements, words, the Cayley graphs and products without lookups.

Every element is a transformation of the states ``Q = {0..n-1}`` written as an integer array of
length ``n`` (``x[q] = q·x``, right action). The class combines this module's products and tables
with Green's relations (:mod:`.green`), the stable semigroup (:mod:`.stable`), groups
(:mod:`.groups`) and descriptions (:mod:`.describe`); :func:`~langclass.core.algebra.monoid.transition_monoid`
(:mod:`.closure`) builds it (V. Froidure & J.-E. Pin, "Algorithms for computing finite semigroups", 1997).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import LimitExceeded
from langclass.core.base.limits import Deadline
from .describe import DescribeMixin
from .green import GreenMixin
from .groups import GroupsMixin
from .permgroup import cycle_lcm
from .stable import StableMixin

__all__ = ["TransitionMonoid", "SMALL_TABLES"]

SMALL_TABLES = 4096
"""Monoids of at most this many elements keep their right Cayley graph and words as Python lists too
(``TransitionMonoid._small_tables``): products by walking the graph instead of numpy lookups."""


@dataclass(frozen=True, eq=False)
class TransitionMonoid(GreenMixin, StableMixin, GroupsMixin, DescribeMixin):
    """The transition monoid M of a (canonical, minimal, complete) DFA, with its Cayley graphs.

    Attributes:
        dfa: the canonical minimal complete DFA whose transformations generate M.
        elements: ``[m, n]`` unsigned integer array, read-only; row ``x`` is the transformation of
            element ``x`` (``elements[x, q] = q·x``). Row 0 is the identity.
        parent: ``int64 [m]``: the shortlex-least word of ``x`` is that of ``parent[x]`` followed by
            letter ``last_letter[x]`` (``-1`` for the identity).
        last_letter: ``int64 [m]``.
        lengths: ``int64 [m]``: length of the shortlex-least word (BFS layer).
        right: ``int64 [m, |Σ|]`` right Cayley graph, ``right[x, a]`` = id of x·a.
        identity_in_semigroup: some nonempty word acts as the identity (1 ∈ η(Σ⁺)).
        identity_word_plus: the shortlex-least nonempty word acting as the identity, or ``None``.

    Use :func:`transition_monoid` to build one.
    """

    dfa: DFA
    elements: np.ndarray
    parent: np.ndarray
    last_letter: np.ndarray
    lengths: np.ndarray
    right: np.ndarray
    identity_in_semigroup: bool
    identity_word_plus: tuple[str, ...] | None
    _lookup: Any = field(repr=False)

    # ------------------------------------------------------------------ basics
    @property
    def size(self) -> int:
        """|M| (the identity included)."""
        return int(self.elements.shape[0])

    @property
    def num_states(self) -> int:
        return int(self.elements.shape[1])

    @property
    def semigroup_size(self) -> int:
        """|η(Σ⁺)|."""
        return self.size if self.identity_in_semigroup else self.size - 1

    @cached_property
    def in_semigroup(self) -> np.ndarray:
        """Boolean ``[m]``: element belongs to the syntactic semigroup η(Σ⁺)."""
        mask = np.ones(self.size, dtype=bool)
        mask[0] = self.identity_in_semigroup
        mask.setflags(write=False)
        return mask

    @cached_property
    def letter_ids(self) -> np.ndarray:
        """``int64 [|Σ|]``: element id of each letter."""
        return self.right[0].copy()

    @cached_property
    def _small_tables(self) -> tuple[list[list[int]], list[int], list[int]] | None:
        """``(right, parent, last_letter)`` as Python lists for a monoid of at most
        :data:`SMALL_TABLES` elements (``None`` above): :meth:`word_indices` and :meth:`multiply`
        read them instead of indexing numpy arrays one scalar at a time."""
        if self.size > SMALL_TABLES:
            return None
        return self.right.tolist(), self.parent.tolist(), self.last_letter.tolist()

    def word_indices(self, x: int) -> list[int]:
        """Letter indices of the shortlex-least word of element ``x``."""
        out = []
        x = int(x)
        small = self._small_tables
        if small is not None:
            _, parent, last = small
            while x != 0:
                out.append(last[x])
                x = parent[x]
            out.reverse()
            return out
        while x != 0:
            out.append(int(self.last_letter[x]))
            x = int(self.parent[x])
        out.reverse()
        return out

    def word(self, x: int) -> tuple[str, ...]:
        """The shortlex-least word (tuple of symbols) of element ``x``; ``()`` for the identity."""
        a = self.dfa.alphabet
        return tuple(a[i] for i in self.word_indices(x))

    def id_of(self, transformation: np.ndarray) -> int | None:
        """Element id of a transformation (array ``[n]``), or ``None`` if it is not in M."""
        r = int(self._lookup.get_many(np.asarray(transformation)[None, :])[0])
        return None if r < 0 else r

    def ids_of(self, rows: np.ndarray) -> np.ndarray:
        """Element ids of many transformations ``[r, n]`` (``-1`` where not in M)."""
        return self._lookup.get_many(rows)

    def element_of_word(self, word) -> int:
        """Element id η(w) of a word (symbols), by walking the right Cayley graph.

        Raises:
            UnknownSymbolError: a symbol outside Σ.
        """
        x = 0
        for a in self.dfa.encode(word):
            x = int(self.right[x, a])
        return x

    def compose(self, x: int, y: int) -> np.ndarray:
        """The transformation of x·y (apply x, then y)."""
        return self.elements[y][self.elements[x]]

    def multiply(self, x: int, y: int) -> int:
        """Element id of the product x·y (apply x, then y): for a small monoid by walking the right
        Cayley graph from x along the word of y (:attr:`_small_tables`), else by looking up the
        composed transformation."""
        small = self._small_tables
        if small is not None:
            right = small[0]
            r = int(x)
            for a in self.word_indices(y):
                r = right[r][a]
            return r
        r = self.id_of(self.compose(x, y))
        assert r is not None, "M is closed under products"
        return r

    def product(self, *xs: int) -> int:
        """Element id of x₁·x₂·…; the identity for no argument."""
        r = 0
        for x in xs:
            r = self.multiply(r, x)
        return r

    def power(self, x: int, p: int) -> int:
        """Element id of x^p (p ≥ 0; x^0 = 1)."""
        r = 0
        base = int(x)
        while p:
            if p & 1:
                r = self.multiply(r, base)
            p >>= 1
            if p:
                base = self.multiply(base, base)
        return r

    def omega_exponent(self, x: int) -> int:
        """The least p ≥ 1 with x^p idempotent (so x^ω = x^p), read off the transformation f of x:
        with its index i (the most steps a state takes to reach a cycle of f) and period c (the lcm
        of its cycle lengths), f^{2p} = f^p iff p ≥ i and c | p, so p = c·⌈max(i, 1)/c⌉. O(n·i)."""
        f = self.elements[int(x)].astype(np.int64)
        n = f.size
        on_cycle = np.zeros(n, dtype=bool)
        g, k = f, 1
        while k < n:  # f^k for k ≥ n: its image is the set of states on cycles
            g = g[g]
            k *= 2
        on_cycle[g] = True
        cur, index = np.arange(n), 0
        while not on_cycle[cur].all():
            cur = f[cur]
            index += 1
        period = cycle_lcm(f, np.flatnonzero(on_cycle).tolist())
        return period * -(-max(index, 1) // period)

    # ------------------------------------------------------------- tables
    @cached_property
    def left(self) -> np.ndarray:
        """``int64 [m, |Σ|]`` left Cayley graph, ``left[x, a]`` = id of a·x.

        Computed layer by layer from a·(p·b) = (a·p)·b (Froidure–Pin), no lookups.
        """
        m, k = self.right.shape
        left = np.empty((m, k), dtype=np.int64)
        left[0] = self.right[0]
        order = np.argsort(self.lengths, kind="stable")
        bounds = np.searchsorted(self.lengths[order], np.arange(int(self.lengths.max()) + 2))
        for ell in range(1, len(bounds) - 1):
            xs = order[bounds[ell]:bounds[ell + 1]]
            if xs.size == 0:
                continue
            left[xs] = self.right[left[self.parent[xs]], self.last_letter[xs][:, None]]
        left.setflags(write=False)
        return left

    @cached_property
    def _layers(self) -> list[np.ndarray]:
        """Element ids grouped by the length of their shortlex-least word (BFS layers, lengths ≥ 1)."""
        order = np.argsort(self.lengths, kind="stable")  # ids are already in BFS order; kept general
        bounds = np.searchsorted(self.lengths[order], np.arange(int(self.lengths.max()) + 2))
        return [order[bounds[ell]:bounds[ell + 1]] for ell in range(1, len(bounds) - 1) if bounds[ell + 1] > bounds[ell]]

    @cached_property
    def suffix_decomposition(self) -> tuple[np.ndarray, np.ndarray]:
        """``(first, rest)``, both ``int64 [m]``: x = η(a)·rest[x] for the letter a = first[x], where
        rest[x] = η(a₂…a_ℓ) for the shortlex-least word a₁…a_ℓ of x (so rest[x] lies in an earlier
        BFS layer than x). ``-1`` and ``0`` for the identity.

        Computed layer by layer from rest[p·b] = rest[p]·b (right Cayley graph), no lookups.
        """
        m = self.size
        first = np.full(m, -1, dtype=np.int64)
        rest = np.zeros(m, dtype=np.int64)
        for xs in self._layers:
            par = self.parent[xs]
            one = par == 0
            first[xs] = np.where(one, self.last_letter[xs], first[par])
            rest[xs] = np.where(one, 0, self.right[rest[par], self.last_letter[xs]])
        for a in (first, rest):
            a.setflags(write=False)
        return first, rest

    def left_multiples(self, xs, deadline: Deadline | None = None) -> np.ndarray:
        """``int64 [len(xs), m]``: entry ``[i, y]`` is the id of xs[i]·y.

        Row by row of the multiplication table without any lookup: x·(p·b) = (x·p)·b, filled in the
        BFS order of y on the right Cayley graph (Froidure & Pin 1997). O(len(xs)·m).
        """
        xs = np.asarray(xs, dtype=np.int64).reshape(-1)
        out = np.empty((xs.size, self.size), dtype=np.int64)
        out[:, 0] = xs
        for ys in self._layers:
            if deadline is not None:
                deadline.check("multiplication table")
            out[:, ys] = self.right[out[:, self.parent[ys]], self.last_letter[ys][None, :]]
        return out

    def right_multiples(self, ys, deadline: Deadline | None = None) -> np.ndarray:
        """``int64 [m, len(ys)]``: entry ``[x, j]`` is the id of x·ys[j].

        Column by column of the multiplication table without any lookup: (a·r)·y = a·(r·y), filled
        in the BFS order of x on the left Cayley graph with x = η(first[x])·rest[x]
        (:attr:`suffix_decomposition`). O(m·len(ys)).
        """
        ys = np.asarray(ys, dtype=np.int64).reshape(-1)
        first, rest = self.suffix_decomposition
        left = self.left
        out = np.empty((self.size, ys.size), dtype=np.int64)
        out[0] = ys
        for xs in self._layers:
            if deadline is not None:
                deadline.check("multiplication table")
            out[xs] = left[out[rest[xs]], first[xs][:, None]]
        return out

    def multiplication_table(self, deadline: Deadline | None = None, max_entries: int = 16_000_000) -> np.ndarray:
        """``int32 [m, m]`` (read-only): entry ``[x, y]`` is the id of x·y; see :meth:`left_multiples`.

        Not cached on the monoid (which outlives an analysis): callers keep it as long as they need it
        (:attr:`langclass.core.algebra.classes.Context.mult_table`).

        Raises:
            LimitExceeded: ``multiplication_table_entries`` when m² > ``max_entries``.
            TimeLimitExceeded: the deadline passed.
        """
        m = self.size
        if m * m > max_entries:
            raise LimitExceeded("multiplication_table_entries", max_entries,
                                f"the multiplication table of a monoid of {m} elements has {m * m} entries")
        dt = np.int32 if m < 2 ** 31 else np.int64
        right = self.right.astype(dt)
        tr = np.empty((m, m), dtype=dt)  # tr[y, x] = x·y: whole rows gathered per layer of y
        tr[0] = np.arange(m)
        for ys in self._layers:
            if deadline is not None:
                deadline.check("multiplication table")
            tr[ys] = right[tr[self.parent[ys]], self.last_letter[ys][:, None]]
        out = np.ascontiguousarray(tr.T)
        del tr
        out.setflags(write=False)
        return out

    @cached_property
    def idempotent(self) -> np.ndarray:
        """Boolean ``[m]``: x·x = x, i.e. x(x(q)) = x(q) for every state q, checked one state at a
        time on the elements that passed the states before (O(m·n) at worst; most non-idempotents
        fail at the first state or two, so about O(m + n·#idempotents) in practice: a cycle of
        length n has one idempotent, T7 6,322 of 823,543)."""
        e = self.elements
        m, n = e.shape
        flat = e.reshape(-1)
        dt = np.int32 if m * n < 2 ** 31 else np.int64
        cand = np.arange(m, dtype=dt)
        for q in range(n):
            if cand.size == 0:
                break
            base = cand * dt(n)
            col = flat[base + q]
            cand = cand[flat[base + col] == col]
        out = np.zeros(m, dtype=bool)
        out[cand] = True
        out.setflags(write=False)
        return out

    def multiply_many(self, xs, ys) -> np.ndarray:
        """``int64 [r]``: ids of xs[i]·ys[i], by reading the shortlex-least word of ys[i] from xs[i]
        on the right Cayley graph (all pairs at once, one letter position at a time): O(r·ℓ) for ℓ
        the longest such word, without touching the transformations.

        Raises:
            ValueError: xs and ys differ in length.
        """
        xs = np.asarray(xs, dtype=np.int64).reshape(-1)
        ys = np.asarray(ys, dtype=np.int64).reshape(-1)
        if xs.shape != ys.shape:
            raise ValueError("xs and ys must have the same length")
        W = self._word_letters
        lens = self.lengths[ys]
        cur = xs.copy()
        for i in range(W.shape[1]):
            sel = np.flatnonzero(lens > i)
            if sel.size == 0:
                break
            cur[sel] = self.right[cur[sel], W[ys[sel], i]]
        return cur

    @cached_property
    def _word_letters(self) -> np.ndarray:
        """``[m, ℓ]`` letter indices of every element's shortlex-least word (padded with 0 beyond its length)."""
        L = int(self.lengths.max())
        dt = np.int16 if self.right.shape[1] < 1 << 15 else np.int64
        W = np.zeros((self.size, L), dtype=dt)
        for xs in self._layers:
            ell = int(self.lengths[xs[0]])
            W[xs, :ell - 1] = W[self.parent[xs], :ell - 1]
            W[xs, ell - 1] = self.last_letter[xs]
        W.setflags(write=False)
        return W

    @cached_property
    def omega(self) -> np.ndarray:
        """``int64 [m]``: id of the idempotent power x^ω of every element.

        y = x^n lies in the group H_{x^ω} (the index of a transformation of n points is ≤ n), and y
        permutes im y; hence x^ω = π⁻¹∘y where π is y restricted to im y. Vectorized over all
        elements: O(m·n·log n).
        """
        n = self.num_states
        X = self.elements.astype(np.intp)
        Y = np.broadcast_to(np.arange(n, dtype=np.intp), X.shape).copy()
        base, p = X, n
        while p:
            if p & 1:
                Y = np.take_along_axis(base, Y, axis=1)
            p >>= 1
            if p:
                base = np.take_along_axis(base, base, axis=1)
        m = X.shape[0]
        rows = np.repeat(np.arange(m), n)
        inv = np.zeros_like(Y)
        # every point of im y is y(p) for exactly one p ∈ im y: inv[y(p)] = p for p ∈ im y
        img = np.zeros(Y.shape, dtype=bool)
        img[rows, Y.ravel()] = True
        rr, pp = np.nonzero(img)
        inv[rr, Y[rr, pp]] = pp
        E = np.take_along_axis(inv, Y, axis=1)
        ids = self.ids_of(E)
        assert (ids >= 0).all() and self.idempotent[ids].all()
        ids.setflags(write=False)
        return ids

    def idempotent_of_group(self, x: int) -> int:
        """The idempotent x^ω, computed for one element by repeated multiplication."""
        return self.power(int(x), self.omega_exponent(int(x)))

    @cached_property
    def aperiodic_violators(self) -> np.ndarray:
        """Boolean ``[m]``: x^{ω+1} ≠ x^ω (x generates a non-trivial cyclic group)."""
        X = self.elements.astype(np.intp)
        W = self.elements[self.omega]
        xw = np.take_along_axis(W, X, axis=1)
        out = ~(xw == W).all(axis=1)
        out.setflags(write=False)
        return out
