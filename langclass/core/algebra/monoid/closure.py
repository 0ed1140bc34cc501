"""The breadth-first closure that enumerates the transition monoid of a minimal DFA (Froidure–Pin).

Layers are processed in order (element order, then letter order), so the first word found for an
element is its *shortlex-least* word; the identity (word ε) is element ``0``. The syntactic
*semigroup* η(Σ⁺) is the monoid minus the identity unless some nonempty word acts as the identity.
Source: V. Froidure & J.-E. Pin, "Algorithms for computing finite semigroups" (1997).
"""

from __future__ import annotations

from operator import itemgetter

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import LimitExceeded
from langclass.core.base.limits import DEFAULT_LIMITS, Deadline, Limits
from .lookup import BytesLookup, DenseLookup, PackedLookup
from .transition import TransitionMonoid

__all__ = ["transition_monoid", "MAX_MONOID_ENTRIES", "SMALL_MONOID"]

MAX_MONOID_ENTRIES = 100_000_000
"""Default cap on |M|·n (stored transformation entries) when ``Limits`` has no ``max_monoid_entries``."""

_CHUNK_ENTRIES = 1 << 23  # candidate entries materialized at once during the closure


def _monoid_entry_cap(limits: Limits) -> int:
    return int(getattr(limits, "max_monoid_entries", MAX_MONOID_ENTRIES) or MAX_MONOID_ENTRIES)


SMALL_MONOID = 256
"""Monoids of DFAs with n^n ≤ 2^24 (n ≤ 8) are enumerated in plain Python up to this many elements
(:func:`_small_closure`; a larger one is enumerated again with numpy): numpy's per-call overhead
dominates a closure of a few dozen elements (measured: the plain-Python closure is about 2× faster up to
50 elements and even at 200–500). A test checks both give the same monoid."""


def _small_closure(dfa: DFA, bound: int, deadline: Deadline | None) -> TransitionMonoid | None:
    """The closure of :func:`transition_monoid` in plain Python (rows as tuples, a dict index), the
    same element order, words, Cayley graph and lookup; ``None`` as soon as the monoid would have
    more than ``bound`` elements (the caller then runs the numpy closure, which also raises the
    limit errors)."""
    n, k = dfa.num_states, dfa.num_letters
    letters = [tuple(col) for col in dfa.transitions.T.tolist()]  # letters[a][q] = δ(q, a)
    ident = tuple(range(n))
    index = {ident: 0}
    rows, parent, last, lens, right = [ident], [-1], [-1], [0], []
    id_plus: tuple[int, int] | None = None
    start, depth = 0, 0
    while start < len(rows):
        depth += 1
        if deadline is not None:
            deadline.check("transition monoid")
        end = len(rows)
        for x in range(start, end):
            row = rows[x]
            image = itemgetter(*row) if n > 1 else (lambda g, q=row[0]: (g[q],))  # g ↦ (g[row[0]], …)
            out = []
            for a, g in enumerate(letters):
                y = image(g)
                v = index.get(y)
                if v is None:
                    v = len(rows)
                    if v >= bound:
                        return None
                    index[y] = v
                    rows.append(y)
                    parent.append(x)
                    last.append(a)
                    lens.append(depth)
                elif v == 0 and id_plus is None:
                    id_plus = (x, a)
                out.append(v)
            right.append(out)
        start = end
    dtype = np.uint8 if n <= 1 << 8 else np.uint16
    elements = np.asarray(rows, dtype=dtype).reshape(len(rows), n)
    table = DenseLookup(n)
    table.store(table.code(elements), np.arange(len(rows), dtype=np.int64))
    arrays = [elements] + [np.asarray(v, dtype=np.int64) for v in (parent, last, lens)]
    arrays.append(np.asarray(right, dtype=np.int64).reshape(len(rows), k))
    for arr in arrays:
        arr.setflags(write=False)
    M = TransitionMonoid(dfa, arrays[0], arrays[1], arrays[2], arrays[3], arrays[4], id_plus is not None, None, table)
    if id_plus is not None:
        object.__setattr__(M, "identity_word_plus", M.word(id_plus[0]) + (dfa.alphabet[id_plus[1]],))
    return M


def transition_monoid(dfa: DFA, limits: Limits = DEFAULT_LIMITS, *, deadline: Deadline | None = None,
                      small_path: bool = True) -> TransitionMonoid:
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
        small_path: enumerate small monoids in plain Python first (:data:`SMALL_MONOID`; ``False``
            for the numpy closure only, as the test comparing both does).

    Returns:
        :class:`TransitionMonoid`.

    Raises:
        LimitExceeded: ``max_monoid_size`` (|M| would exceed it; a minimal DFA with n states has
            |M| ≥ n) or ``max_monoid_entries``.
        TimeLimitExceeded: the deadline passed.

    Example:
        >>> from langclass.core.automata.automaton import DFA
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
    dense = n ** n <= 1 << 24
    if dense and small_path:
        M = _small_closure(dfa, min(SMALL_MONOID, cap, entry_cap // n), deadline)
        if M is not None:
            return M
    gens = np.ascontiguousarray(dfa.transitions.T.astype(dtype))  # [k, n]: gens[a, q] = δ(q, a)
    ident = np.arange(n, dtype=dtype)
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
        table = DenseLookup(n)
        table.store(table.code(ident[None, :]), np.zeros(1, dtype=np.int64))
    elif packed:
        skeys = PackedLookup.pack(ident[None, :])  # sorted keys of known elements
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
                arr = table.ids(ck)
                miss = np.flatnonzero(arr < 0)
                new_here = np.zeros(0, dtype=np.int64)
                if miss.size:
                    first = table.insert_new(ck[miss], size)  # first occurrence = shortlex order
                    arr[miss] = table.ids(ck[miss])
                    new_here = miss[first]
                    size += first.size
                    over(size, depth)
            elif packed:
                ck = PackedLookup.pack(cand)
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
    lookup = table if dense else PackedLookup(skeys, sids, n) if packed else BytesLookup(index, dtype)
    M = TransitionMonoid(dfa, elements, parent, last_letter, lengths, right, id_plus is not None, None, lookup)
    if id_plus is not None:
        w = M.word(id_plus[0]) + (dfa.alphabet[id_plus[1]],)
        object.__setattr__(M, "identity_word_plus", w)
    return M
