"""The transition monoid of a minimal complete DFA (= the syntactic monoid of its language).

Every element is a transformation of the states ``Q = {0..n-1}`` written as an integer array of
length ``n`` (``x[q] = q·x``, right action), produced by a breadth-first Froidure–Pin style closure
of the letters under composition. Because layers are processed in order (element order, then letter
order), the first word found for an element is its *shortlex-least* word; the identity (word ε) is
element ``0``. The syntactic *semigroup* η(Σ⁺) is the monoid minus the identity unless some nonempty
word acts as the identity (``identity_in_semigroup``).

On top of the closure: the right and left Cayley graphs, idempotents, idempotent powers x^ω,
Green's relations R, L, H, J (= D, finite monoid) as strongly connected components of the right,
left and two-sided Cayley graphs, regular D-classes, maximal subgroups (as permutation groups on the
image of their idempotent), the stability index s (least s ≥ 1 with η(Σ^s) = η(Σ^{2s})) and the
stable semigroup T = η(Σ^s), with a word of length exactly s for each of its elements.

Sources: V. Froidure & J.-E. Pin, "Algorithms for computing finite semigroups" (1997) for the closure
and Cayley graphs; J. A. Green, "On the structure of semigroups" (1951); J.-E. Pin, *Mathematical
Foundations of Automata Theory*, ch. V (Green's relations) and XI (stable semigroup; the stability
index appears in D. A. M. Barrington, K. Compton, H. Straubing & D. Thérien, "Regular languages in
NC¹", 1992).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from .automaton import DFA
from .errors import LimitExceeded
from .limits import DEFAULT_LIMITS, Deadline, Limits

__all__ = [
    "TransitionMonoid",
    "transition_monoid",
    "GroupInfo",
    "MAX_MONOID_ENTRIES",
    "strong_components",
    "canonical_labels",
]

MAX_MONOID_ENTRIES = 100_000_000
"""Default cap on |M|·n (stored transformation entries) when ``Limits`` has no ``max_monoid_entries``."""

_CHUNK_ENTRIES = 1 << 23  # candidate entries materialized at once during the closure


def canonical_labels(labels: np.ndarray) -> np.ndarray:
    """Relabel class ids ``0..c-1`` in order of first occurrence (so ids are deterministic).

    Args:
        labels: ``int`` array ``[m]`` of arbitrary class labels.

    Returns:
        ``int64`` array ``[m]``: equal labels stay equal; the class of element 0 is 0, the next new
        class met in element order is 1, and so on.
    """
    labels = np.asarray(labels)
    if labels.size == 0:
        return labels.astype(np.int64)
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inv.ravel()]


def strong_components(num_nodes: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Strongly connected components of a directed graph given by edge arrays (scipy, Tarjan/Pearce).

    Returns:
        ``int64`` array ``[num_nodes]`` of canonical component ids (see :func:`canonical_labels`).
    """
    if num_nodes == 0:
        return np.zeros(0, dtype=np.int64)
    g = csr_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(num_nodes, num_nodes))
    _, labels = connected_components(g, directed=True, connection="strong")
    return canonical_labels(labels)


class _BytesLookup:
    """Transformation → element id through a dict keyed by the row bytes (any number of states)."""

    def __init__(self, index: dict[bytes, int], dtype) -> None:
        self.index = index
        self.dtype = dtype

    def get_many(self, rows: np.ndarray) -> np.ndarray:
        rows = np.ascontiguousarray(np.asarray(rows).astype(self.dtype))
        if rows.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        void = np.dtype((np.void, rows.shape[1] * rows.dtype.itemsize))
        get = self.index.get
        return np.fromiter((get(b, -1) for b in rows.view(void).ravel().tolist()), dtype=np.int64, count=rows.shape[0])


class _PackedLookup:
    """Transformation → element id for n ≤ 15 states: rows packed into int64 keys (4 bits per state),
    looked up by binary search in the sorted keys."""

    def __init__(self, keys: np.ndarray, ids: np.ndarray, n: int) -> None:
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.ids = ids[order]
        self.n = n

    @staticmethod
    def pack(rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        shifts = (4 * np.arange(rows.shape[1], dtype=np.int64))
        return (rows << shifts).sum(axis=1) if rows.shape[1] else np.zeros(rows.shape[0], dtype=np.int64)

    def get_many(self, rows: np.ndarray) -> np.ndarray:
        k = self.pack(rows)
        pos = np.searchsorted(self.keys, k)
        pos_c = np.minimum(pos, self.keys.size - 1)
        hit = self.keys[pos_c] == k
        return np.where(hit, self.ids[pos_c], -1).astype(np.int64)


class _DenseLookup:
    """Transformation → element id for n^n ≤ 2^24: a direct-address table indexed by Σ x[q]·n^q."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.weights = np.asarray([n ** q for q in range(n)], dtype=np.int64)
        self.table = np.full(max(1, n ** n), -1, dtype=np.int64)

    def code(self, rows: np.ndarray) -> np.ndarray:
        return np.asarray(rows, dtype=np.int64) @ self.weights

    def get_many(self, rows: np.ndarray) -> np.ndarray:
        return self.table[self.code(rows)]


@dataclass(frozen=True)
class GroupInfo:
    """A finite group found in the monoid (a maximal subgroup H_e, or a subgroup of the stable semigroup).

    Attributes:
        idempotent: element id of its identity e.
        order: |G|.
        degree: |im e|, the number of points it permutes.
        name: a structural name when it is certain (``"Z2"``, ``"S5"``, ``"A5"``, ``"trivial"``),
            otherwise ``"group of order N"``.
        abelian, cyclic, solvable: properties computed by sympy's permutation groups.
        generators: element ids of a generating set (shortlex-least elements, added greedily).
        generator_words: the shortlex-least words of the generators.
        permutations: each generator as a permutation of ``points`` (image indices, 0-based).
        points: the states of im e, in increasing order.
    """

    idempotent: int
    order: int
    degree: int
    name: str
    abelian: bool
    cyclic: bool
    solvable: bool
    generators: tuple[int, ...]
    generator_words: tuple[tuple[str, ...], ...]
    permutations: tuple[tuple[int, ...], ...]
    points: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "idempotent": self.idempotent,
            "order": self.order,
            "degree": self.degree,
            "name": self.name,
            "abelian": self.abelian,
            "cyclic": self.cyclic,
            "solvable": self.solvable,
            "generators": list(self.generators),
            "generator_words": [list(w) for w in self.generator_words],
            "permutations": [list(p) for p in self.permutations],
            "points": list(self.points),
        }


@dataclass(frozen=True, eq=False)
class TransitionMonoid:
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

    def word_indices(self, x: int) -> list[int]:
        """Letter indices of the shortlex-least word of element ``x``."""
        out = []
        x = int(x)
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
        """Element id of the product x·y (apply x, then y)."""
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
        """The least p ≥ 1 with x^p idempotent (so x^ω = x^p)."""
        p, y = 1, int(x)
        while not self.idempotent[y]:
            y = self.multiply(y, x)
            p += 1
        return p

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
        (:attr:`langclass.core.classes.Context.mult_table`).

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
        """Boolean ``[m]``: x·x = x (on the transformations, O(m·n), or by :meth:`multiply_many`,
        O(m·ℓ) for ℓ the longest shortlex word, whichever is smaller)."""
        if int(self.lengths.max()) < self.num_states:
            ids = np.arange(self.size)
            out = self.multiply_many(ids, ids) == ids
        else:
            e = self.elements
            out = (np.take_along_axis(e, e.astype(np.intp), axis=1) == e).all(axis=1)
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

    @cached_property
    def group_element(self) -> np.ndarray:
        """Boolean ``[m]``: x lies in a subgroup of M (its H-class contains an idempotent; ⇔ x·x^ω = x)."""
        H = self.green["H"]
        has = np.zeros(int(H.max()) + 1, dtype=bool)
        has[H[self.idempotent]] = True
        out = has[H]
        out.setflags(write=False)
        return out

    @cached_property
    def nontrivial_group_elements(self) -> np.ndarray:
        """Boolean ``[m]``: x is a non-idempotent element of a subgroup. A subsemigroup U contains a
        non-trivial group iff it contains such an element (if x ∈ U has x^{ω+1} ≠ x^ω, then x^{ω+1}
        ∈ U is one), so M is aperiodic iff there is none (Schützenberger)."""
        out = self.group_element & ~self.idempotent
        out.setflags(write=False)
        return out

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

    # ------------------------------------------------------------- Green
    @cached_property
    def green(self) -> dict[str, np.ndarray]:
        """Green's relations as canonical class ids: ``{"R", "L", "H", "J"}`` each ``int64 [m]``.

        R-classes are the strongly connected components of the right Cayley graph, L-classes those
        of the left one; D = R∘L (= J, M finite) is computed as the connected components of the
        bipartite graph joining the R- and L-class of every element; H = R ∩ L. The relations on
        the semigroup η(Σ⁺) are the restrictions of those of M (S¹ = M).
        """
        m, k = self.right.shape
        src = np.repeat(np.arange(m, dtype=np.int64), k)
        R = strong_components(m, src, self.right.ravel())
        L = strong_components(m, src, self.left.ravel())
        # D = R ∘ L (= J, M finite): connected components of the bipartite graph R-classes — L-classes
        nr = int(R.max()) + 1
        nl = int(L.max()) + 1
        g = csr_matrix((np.ones(m, dtype=np.int8), (R, nr + L)), shape=(nr + nl, nr + nl))
        _, comp = connected_components(g, directed=False)
        J = canonical_labels(comp[R])
        H = canonical_labels(R * nl + L)
        for arr in (R, L, J, H):
            arr.setflags(write=False)
        return {"R": R, "L": L, "H": H, "J": J}

    @cached_property
    def regular(self) -> np.ndarray:
        """Boolean ``[m]``: x is regular (x ∈ xMx ⇔ its D-class contains an idempotent)."""
        J = self.green["J"]
        has = np.zeros(int(J.max()) + 1, dtype=bool)
        has[J[self.idempotent]] = True
        out = has[J]
        out.setflags(write=False)
        return out

    def class_members(self, relation: str, x: int) -> np.ndarray:
        """Ids of the elements in the ``relation``-class (``"R"``, ``"L"``, ``"H"``, ``"J"``) of x."""
        lab = self.green[relation]
        return np.flatnonzero(lab == lab[int(x)])

    # ------------------------------------------------------------- paths
    def right_path(self, x: int, y: int) -> tuple[str, ...] | None:
        """A shortest word u with x·u = y (BFS in the right Cayley graph), or ``None``."""
        return self._path(self.right, int(x), int(y), left=False)

    def left_path(self, x: int, y: int) -> tuple[str, ...] | None:
        """A shortest word u with u·x = y (BFS in the left Cayley graph), or ``None``."""
        return self._path(self.left, int(x), int(y), left=True)

    def _path(self, table: np.ndarray, x: int, y: int, *, left: bool) -> tuple[str, ...] | None:
        if x == y:
            return ()
        prev: dict[int, tuple[int, int]] = {x: (-1, -1)}
        dq = deque([x])
        tl = table
        while dq:
            u = dq.popleft()
            for a, v in enumerate(tl[u].tolist()):
                if v not in prev:
                    prev[v] = (u, a)
                    if v == y:
                        letters = []
                        while v != x:
                            u2, a2 = prev[v]
                            letters.append(a2)
                            v = u2
                        # right: x·a1·a2… ; we collected from y backwards → reverse.
                        # left: y = a_t…a_1·x, collected a_t first (outermost) → already in order.
                        if not left:
                            letters.reverse()
                        return tuple(self.dfa.alphabet[i] for i in letters)
                    dq.append(v)
        return None

    # ------------------------------------------------------------- stable semigroup
    @cached_property
    def _stable(self) -> tuple[int, int, int, list[np.ndarray]]:
        """(s, preperiod, period, levels): levels[j-1] = packed boolean mask of η(Σ^j), 1 ≤ j ≤ s.

        The sets η(Σ^j) = η(Σ^{j-1})·Σ form an eventually periodic sequence with preperiod i and
        period p; η(Σ^s) = η(Σ^{2s}) iff s ≥ i and p | s, so s = p·⌈i/p⌉.
        """
        m = self.size
        mask = np.zeros(m, dtype=bool)
        mask[self.right[0]] = True
        key = np.packbits(mask).tobytes()
        seen: dict[bytes, int] = {key: 1}
        levels = [np.packbits(mask)]
        j = 1
        while True:
            cur = np.flatnonzero(mask)
            mask = np.zeros(m, dtype=bool)
            mask[self.right[cur].ravel()] = True
            j += 1
            packed = np.packbits(mask)
            key = packed.tobytes()
            if key in seen:
                pre, per = seen[key], j - seen[key]
                break
            seen[key] = j
            levels.append(packed)
        s = per * max(1, -(-pre // per))
        return s, pre, per, levels[:s]

    def _level_mask(self, j: int) -> np.ndarray:
        return np.unpackbits(self._stable[3][j - 1], count=self.size).astype(bool)

    @property
    def stability_index(self) -> int:
        """s = least s ≥ 1 with η(Σ^s) = η(Σ^{2s})."""
        return self._stable[0]

    @cached_property
    def stable(self) -> np.ndarray:
        """Boolean ``[m]``: membership in the stable semigroup T = η(Σ^s)."""
        mask = self._level_mask(self.stability_index)
        mask.setflags(write=False)
        return mask

    @property
    def stable_size(self) -> int:
        """|T| = |η(Σ^s)|."""
        return int(self.stable.sum())

    def stable_word(self, x: int) -> tuple[str, ...]:
        """A word of length exactly s for an element x of T = η(Σ^s) (traced back through η(Σ^j)).

        Raises:
            ValueError: x is not in T.
        """
        s = self.stability_index
        x = int(x)
        if not self.stable[x]:
            raise ValueError(f"element {x} is not in the stable semigroup")
        order, starts = self._right_predecessors
        k = self.right.shape[1]
        levels = self._stable[3]
        letters = []
        for j in range(s, 1, -1):
            packed = levels[j - 2]  # η(Σ^{j-1})
            for pos in order[starts[x]:starts[x + 1]].tolist():
                y = pos // k
                if (packed[y >> 3] >> (7 - (y & 7))) & 1:
                    letters.append(pos % k)
                    x = y
                    break
            else:  # pragma: no cover - x ∈ η(Σ^j) always has a predecessor in η(Σ^{j-1})
                raise AssertionError("broken stable-semigroup levels")
        letters.append(int(np.flatnonzero(self.right[0] == x)[0]))
        letters.reverse()
        return tuple(self.dfa.alphabet[a] for a in letters)

    @cached_property
    def _right_predecessors(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR of the reversed right Cayley graph: positions p = y·k + a with y·a = x are
        ``order[starts[x]:starts[x+1]]``."""
        flat = self.right.ravel()
        order = np.argsort(flat, kind="stable")
        starts = np.searchsorted(flat[order], np.arange(self.size + 1))
        return order, starts

    # ------------------------------------------------------------- groups
    def maximal_subgroup(self, e: int, *, within: np.ndarray | None = None) -> GroupInfo:
        """The maximal subgroup H_e at an idempotent e, acting faithfully on im e.

        Args:
            e: an idempotent.
            within: optional boolean mask ``[m]`` to intersect with (e.g. :attr:`stable` for the
                maximal subgroup H_e ∩ T of the stable semigroup).

        Raises:
            ValueError: e is not idempotent.
        """
        e = int(e)
        if not self.idempotent[e]:
            raise ValueError(f"element {e} is not idempotent")
        if within is not None:
            H = self.green["H"]
            if np.asarray(within, dtype=bool)[H == H[e]].all():
                within = None  # H_e ⊆ within: the same group
        key = (e, None if within is None else np.packbits(np.asarray(within, dtype=bool)).tobytes())
        cache = self.__dict__.setdefault("_group_cache", {})
        if key not in cache:
            cache[key] = self._maximal_subgroup(e, within)
        return cache[key]

    def _maximal_subgroup(self, e: int, within: np.ndarray | None) -> GroupInfo:
        from sympy.combinatorics import Permutation, PermutationGroup

        H = self.green["H"]
        members = np.flatnonzero(H == H[e])
        if within is not None:
            members = members[within[members]]
        points = np.unique(self.elements[e]).astype(np.int64)
        pos = np.full(self.num_states, -1, dtype=np.int64)
        pos[points] = np.arange(points.size)
        order_target = int(members.size)
        gens: list[int] = []
        perms: list[tuple[int, ...]] = []
        group = None
        degree = int(points.size)
        for h in members[np.argsort(self.lengths[members], kind="stable")].tolist():
            if h == e:
                continue
            img = tuple(int(v) for v in pos[self.elements[h][points]])
            perm = Permutation(list(img), size=degree)
            if group is not None and group.contains(perm):
                continue
            gens.append(h)
            perms.append(img)
            group = PermutationGroup([Permutation(list(p), size=degree) for p in perms])
            if group.order() == order_target:
                break
        if group is None:
            return GroupInfo(e, 1, degree, "trivial", True, True, True, (), (), (), tuple(int(p) for p in points))
        order = int(group.order())
        assert order == order_target, "H-class of an idempotent is a group acting faithfully on im e"
        abelian = bool(group.is_abelian)
        cyclic = bool(group.is_cyclic)
        solvable = bool(group.is_solvable)
        support = sorted({i for p in perms for i, v in enumerate(p) if i != v})
        d = len(support)
        if cyclic:
            name = f"Z{order}"
        elif order == math.factorial(d):
            name = f"S{d}"
        elif d >= 3 and order == math.factorial(d) // 2 and all(Permutation(list(p)).is_even for p in perms):
            name = f"A{d}"
        elif abelian:
            name = f"abelian group of order {order}"
        else:
            name = f"group of order {order}"
        return GroupInfo(e, order, degree, name, abelian, cyclic, solvable, tuple(gens),
                         tuple(self.word(g) for g in gens), tuple(perms), tuple(int(p) for p in points))

    @cached_property
    def regular_d_classes(self) -> list[int]:
        """J-class ids that contain an idempotent, in id order."""
        J = self.green["J"]
        return sorted(set(J[self.idempotent].tolist()))

    @cached_property
    def maximal_subgroups(self) -> list[GroupInfo]:
        """One maximal subgroup per regular D-class (all of a D-class's are isomorphic), first idempotent."""
        J = self.green["J"]
        out = []
        for j in self.regular_d_classes:
            e = int(np.flatnonzero((J == j) & self.idempotent)[0])
            out.append(self.maximal_subgroup(e))
        return out

    # ------------------------------------------------------------- description
    def d_class_summary(self) -> list[dict[str, Any]]:
        """The D-class structure: for each J(=D)-class its size, numbers of R-, L-classes,
        H-class size, idempotent count, regularity, representative and the classes just below it
        in the Cayley graphs (generating the J-order)."""
        cached = self.__dict__.get("_d_class_summary")
        if cached is not None:
            return cached
        g = self.green
        J, R, L, H = g["J"], g["R"], g["L"], g["H"]
        nj = int(J.max()) + 1
        src = np.repeat(J, self.right.shape[1])
        below: list[set[int]] = [set() for _ in range(nj)]
        for tab in (self.right, self.left):
            dst = J[tab.ravel()]
            msk = src != dst
            for a, b in np.unique(np.stack([src[msk], dst[msk]], axis=1), axis=0).tolist() if msk.any() else []:
                below[a].add(b)
        out = []
        order = np.argsort(J, kind="stable")
        bounds = np.searchsorted(J[order], np.arange(nj + 1))
        for j in range(nj):
            mem = order[bounds[j]:bounds[j + 1]]
            rep = int(mem.min())
            idem = int(self.idempotent[mem].sum())
            hsize = int(np.sum(H[mem] == H[rep]))
            out.append({
                "id": j,
                "size": int(mem.size),
                "r_classes": int(np.unique(R[mem]).size),
                "l_classes": int(np.unique(L[mem]).size),
                "h_class_size": hsize,
                "idempotents": idem,
                "regular": idem > 0,
                "representative": rep,
                "representative_word": list(self.word(rep)),
                "in_semigroup": bool(self.in_semigroup[mem].any()),
                "below": sorted(below[j]),
            })
        self.__dict__["_d_class_summary"] = out
        return out

    def describe(self, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        """A JSON-ready description of M, with a page of its elements.

        Args:
            offset: first element id of the page (elements are in shortlex order of their words).
            limit: page size (at most 1000 is sensible).

        Returns:
            ``{"size", "semigroup_size", "identity_in_semigroup", "idempotents", "stability_index",
            "stable_semigroup_size", "counts": {"R","L","H","J"}, "d_classes": [...],
            "maximal_subgroups": [...], "offset", "limit", "elements": [{"id", "word", "length",
            "idempotent", "in_semigroup", "in_stable_semigroup", "regular", "R", "L", "H", "J",
            "transformation"}]}``.

        Raises:
            ValueError: negative offset or limit.
        """
        if offset < 0 or limit < 0:
            raise ValueError("offset and limit must be non-negative")
        g = self.green
        page = range(offset, min(self.size, offset + limit))
        elems = []
        for x in page:
            elems.append({
                "id": x,
                "word": list(self.word(x)),
                "length": int(self.lengths[x]),
                "idempotent": bool(self.idempotent[x]),
                "in_semigroup": bool(self.in_semigroup[x]),
                "in_stable_semigroup": bool(self.stable[x]),
                "regular": bool(self.regular[x]),
                "R": int(g["R"][x]), "L": int(g["L"][x]), "H": int(g["H"][x]), "J": int(g["J"][x]),
                "transformation": self.elements[x].astype(int).tolist(),
            })
        return {
            "size": self.size,
            "semigroup_size": self.semigroup_size,
            "identity_in_semigroup": self.identity_in_semigroup,
            "idempotents": int(self.idempotent.sum()),
            "stability_index": self.stability_index,
            "stable_semigroup_size": self.stable_size,
            "counts": {r: int(g[r].max()) + 1 for r in ("R", "L", "H", "J")},
            "d_classes": self.d_class_summary(),
            "maximal_subgroups": [gi.to_dict() for gi in self.maximal_subgroups],
            "offset": offset,
            "limit": limit,
            "elements": elems,
        }


def _monoid_entry_cap(limits: Limits) -> int:
    return int(getattr(limits, "max_monoid_entries", MAX_MONOID_ENTRIES) or MAX_MONOID_ENTRIES)


def transition_monoid(dfa: DFA, limits: Limits = DEFAULT_LIMITS, *, deadline: Deadline | None = None) -> TransitionMonoid:
    """Enumerate the transition monoid of the minimal complete DFA of ``dfa`` (its syntactic monoid).

    Breadth-first closure of the letter transformations under composition (Froidure–Pin without
    rewriting): each layer multiplies the previous layer's new elements by every letter, looks the
    products up and appends the new ones in (element, letter) order, so every element's first word
    is its shortlex-least word; element 0 is the identity and the right Cayley graph comes for free.
    For n ≤ 15 states a layer is processed entirely in numpy (rows packed into int64 keys, binary
    search, sorted merge); larger DFAs use a hash table keyed by the row bytes.

    Args:
        dfa: any complete DFA; it is minimized first (:meth:`DFA.canonical`).
        limits: ``max_monoid_size`` bounds |M|; |M|·n is bounded by ``max_monoid_entries``
            (default :data:`MAX_MONOID_ENTRIES`) to bound memory.
        deadline: optional wall-clock deadline checked between layers.

    Returns:
        :class:`TransitionMonoid`.

    Raises:
        LimitExceeded: ``max_monoid_size`` (|M| would exceed it; a minimal DFA with n states has
            |M| ≥ n) or ``max_monoid_entries``.
        TimeLimitExceeded: the deadline passed.

    Example:
        >>> from langclass.core.automaton import DFA
        >>> parity = DFA.from_table(["0", "1"], [[0, 1], [1, 0]], 0, [0])
        >>> M = transition_monoid(parity)
        >>> M.size, M.identity_in_semigroup, M.word(1)
        (2, True, ('1',))
    """
    dfa = dfa.canonical()
    n, k = dfa.num_states, dfa.num_letters
    cap = int(limits.max_monoid_size)
    entry_cap = _monoid_entry_cap(limits)
    if n > cap:
        raise LimitExceeded("max_monoid_size", cap,
                            f"max_monoid_size={cap} exceeded: the minimal DFA has {n} states, so its monoid has at least {n} elements")
    dtype = np.uint8 if n <= 1 << 8 else np.uint16 if n <= 1 << 16 else np.uint32
    gens = np.ascontiguousarray(dfa.transitions.T.astype(dtype))  # [k, n]: gens[a, q] = δ(q, a)
    ident = np.arange(n, dtype=dtype)
    dense = n ** n <= 1 << 24
    packed = not dense and n <= 15

    def over(size: int, depth: int) -> None:
        if size > cap:
            raise LimitExceeded("max_monoid_size", cap,
                                f"max_monoid_size={cap} exceeded while enumerating the transition monoid "
                                f"of a {n}-state DFA (word length {depth})")
        if size * n > entry_cap:
            raise LimitExceeded("max_monoid_entries", entry_cap,
                                f"the transition monoid needs more than {entry_cap} stored entries ({size} elements × {n} states)")

    blocks: list[np.ndarray] = [ident[None, :]]
    parents: list[np.ndarray] = [np.array([-1], dtype=np.int64)]
    lastl: list[np.ndarray] = [np.array([-1], dtype=np.int64)]
    lens: list[np.ndarray] = [np.array([0], dtype=np.int64)]
    right_rows: list[tuple[np.ndarray, np.ndarray]] = []
    frontier_ids = np.array([0], dtype=np.int64)
    frontier = ident[None, :]
    size = 1
    depth = 0
    id_plus: tuple[int, int] | None = None  # (parent id, letter) of the first nonempty word for 1
    chunk = max(1, _CHUNK_ENTRIES // max(1, k * n))
    if dense:
        table = _DenseLookup(n)
        table.table[table.code(ident[None, :])] = 0
    elif packed:
        skeys = _PackedLookup.pack(ident[None, :])  # sorted keys of known elements
        sids = np.array([0], dtype=np.int64)
    else:
        index: dict[bytes, int] = {ident.tobytes(): 0}
        void = np.dtype((np.void, n * np.dtype(dtype).itemsize))
    while frontier.shape[0]:
        depth += 1
        if deadline is not None:
            deadline.check("transition monoid")
        new_blocks, new_par, new_let = [], [], []
        for c0 in range(0, frontier.shape[0], chunk):
            F = frontier[c0:c0 + chunk]
            fids = frontier_ids[c0:c0 + chunk]
            cand = np.ascontiguousarray(gens[:, F].transpose(1, 0, 2)).reshape(-1, n)  # [f*k, n], x-major
            if dense:
                ck = table.code(cand)
                arr = table.table[ck]
                miss = np.flatnonzero(arr < 0)
                new_here = np.zeros(0, dtype=np.int64)
                if miss.size:
                    u, first = np.unique(ck[miss], return_index=True)
                    order = np.argsort(first, kind="stable")
                    u_ord = u[order]
                    table.table[u_ord] = np.arange(size, size + u.size)
                    arr[miss] = table.table[ck[miss]]
                    new_here = miss[first[order]]
                    size += u.size
                    over(size, depth)
            elif packed:
                ck = _PackedLookup.pack(cand)
                pos = np.minimum(np.searchsorted(skeys, ck), skeys.size - 1)
                found = skeys[pos] == ck
                arr = np.where(found, sids[pos], -1)
                miss = np.flatnonzero(~found)
                new_here = np.zeros(0, dtype=np.int64)
                if miss.size:
                    u, first = np.unique(ck[miss], return_index=True)
                    order = np.argsort(first, kind="stable")  # first occurrence = shortlex order
                    new_ids_sorted = np.empty(u.size, dtype=np.int64)
                    new_ids_sorted[order] = np.arange(size, size + u.size)
                    arr[miss] = new_ids_sorted[np.searchsorted(u, ck[miss])]
                    new_here = miss[first[order]]
                    size += u.size
                    over(size, depth)
                    ins = np.searchsorted(skeys, u)
                    skeys = np.insert(skeys, ins, u)
                    sids = np.insert(sids, ins, new_ids_sorted)
            else:
                keys = cand.view(void).ravel().tolist()
                get = index.get
                arr = np.asarray([get(b, -1) for b in keys], dtype=np.int64)
                fresh = []
                for p in np.flatnonzero(arr < 0).tolist():
                    b = keys[p]
                    v = index.get(b)
                    if v is None:
                        v = index[b] = size
                        size += 1
                        fresh.append(p)
                        over(size, depth)
                    arr[p] = v
                new_here = np.asarray(fresh, dtype=np.int64)
            if id_plus is None:
                zero = np.flatnonzero(arr == 0)
                if zero.size:
                    p0 = int(zero[0])
                    id_plus = (int(fids[p0 // k]), p0 % k)
            right_rows.append((fids, arr.reshape(-1, k)))
            if new_here.size:
                new_blocks.append(cand[new_here])
                new_par.append(fids[new_here // k])
                new_let.append(new_here % k)
        if new_blocks:
            frontier = np.concatenate(new_blocks)
            frontier_ids = np.arange(size - frontier.shape[0], size, dtype=np.int64)
            blocks.append(frontier)
            parents.append(np.concatenate(new_par))
            lastl.append(np.concatenate(new_let))
            lens.append(np.full(frontier.shape[0], depth, dtype=np.int64))
        else:
            frontier = frontier[:0]
    elements = np.concatenate(blocks)
    elements.setflags(write=False)
    right = np.empty((size, k), dtype=np.int64)
    for fids, rows in right_rows:
        right[fids] = rows
    right.setflags(write=False)
    parent = np.concatenate(parents)
    last_letter = np.concatenate(lastl)
    lengths = np.concatenate(lens)
    for a in (parent, last_letter, lengths):
        a.setflags(write=False)
    lookup = table if dense else _PackedLookup(skeys, sids, n) if packed else _BytesLookup(index, dtype)
    M = TransitionMonoid(dfa, elements, parent, last_letter, lengths, right, id_plus is not None, None, lookup)
    if id_plus is not None:
        w = M.word(id_plus[0]) + (dfa.alphabet[id_plus[1]],)
        object.__setattr__(M, "identity_word_plus", w)
    return M
