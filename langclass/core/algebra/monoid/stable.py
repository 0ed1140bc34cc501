"""The stable semigroup T = η(Σ^s) and the stability index s (least s ≥ 1 with η(Σ^s) = η(Σ^{2s})).

The sets η(Σ^j) are computed one after the other on the right Cayley graph; every element of T
gets a word of length exactly s (J.-E. Pin, *Mathematical Foundations of Automata Theory*, ch. XI;
the stability index appears in D. A. M. Barrington, K. Compton, H. Straubing & D. Thérien,
"Regular languages in NC¹", 1992).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

__all__ = ["StableMixin", "PREIMAGE_CANDIDATES", "INCLUSION_LAG", "REVERSED_GRAPH_EDGES", "SMALL_STABLE_EDGES"]

SMALL_STABLE_EDGES = 1024
"""A right Cayley graph of at most this many edges (m·|Σ|) gets its levels η(Σ^j) and stable words
in plain Python (sets of element ids; :attr:`StableMixin._small_levels`): the same levels, index and
words as the numpy path, without numpy's per-call overhead."""

INCLUSION_LAG = 8
"""The stable-semigroup levels switch to multiplying only new elements once η(Σ^{j-d}) ⊆ η(Σ^j) for some d ≤ this."""

PREIMAGE_CANDIDATES = 4096
"""A stable word is traced back through candidate predecessors while a letter has at most this many
(transformations y with y·a = x); beyond, the reversed right Cayley graph is built (a sort of m·|Σ| ids)."""

REVERSED_GRAPH_EDGES = 1 << 18
"""A right Cayley graph of at most this many edges (m·|Σ|) is reversed at once for tracing stable words
(a sort of at most 2^18 ids, well under a millisecond): on small monoids the per-letter candidate
enumeration of :data:`PREIMAGE_CANDIDATES` costs more than the whole reversal. Both give the same word."""


class StableMixin:
    """The stable semigroup of a :class:`~langclass.core.algebra.monoid.TransitionMonoid`."""

    @cached_property
    def _small_levels(self) -> tuple[int, int, int, list[frozenset[int]]] | None:
        """``(s, preperiod, period, levels)`` in plain Python for a right Cayley graph of at most
        :data:`SMALL_STABLE_EDGES` edges (else ``None``): ``levels[j-1]`` = η(Σ^j) as a set of ids
        (1 ≤ j < i + p, every distinct level; s ≤ i + p − 1). The same sequence as :attr:`_stable`
        (each level the previous one times every letter, until a level repeats)."""
        m, k = self.right.shape
        if m * k > SMALL_STABLE_EDGES:
            return None
        right = self.right.tolist()
        cur = frozenset(right[0])
        seen = {cur: 1}
        levels = [cur]
        j = 1
        while True:
            cur = frozenset([y for x in cur for y in right[x]])
            j += 1
            if cur in seen:
                pre, per = seen[cur], j - seen[cur]
                break
            seen[cur] = j
            levels.append(cur)
        s = per * max(1, -(-pre // per))
        return s, pre, per, levels

    @cached_property
    def _small_predecessors(self) -> list[list[int]]:
        """``predecessors[x]``: the positions p = y·|Σ| + a with y·a = x, increasing (for
        :meth:`stable_word` on a small monoid)."""
        preds: list[list[int]] = [[] for _ in range(self.size)]
        for p, x in enumerate(self.right.ravel().tolist()):
            preds[x].append(p)
        return preds

    @cached_property
    def _stable(self) -> tuple[int, int, int, list[np.ndarray]]:
        """(s, preperiod, period, levels): levels[j-1] = packed boolean mask of η(Σ^j), 1 ≤ j < i + p
        (every distinct level; s ≤ i + p − 1).

        The sets η(Σ^j) = η(Σ^{j-1})·Σ form an eventually periodic sequence with preperiod i and
        period p; η(Σ^s) = η(Σ^{2s}) iff s ≥ i and p | s, so s = p·⌈i/p⌉.

        Each level is the previous one times every letter (a scatter over the right Cayley graph)
        until some η(Σ^{j-d}) ⊆ η(Σ^j) with d ≤ :data:`INCLUSION_LAG`; from then on
        η(Σ^{j+1}) = η(Σ^{j+1-d}) ∪ Δ_j·Σ with Δ_j = η(Σ^j) ∖ η(Σ^{j-d}) (multiply the inclusion by
        Σ), so only the new elements are multiplied: each element enters each residue class mod d
        once, O(d·m·|Σ|) in all instead of O(s·m·|Σ|).
        """
        m = self.size
        small = self._small_levels
        if small is not None:
            packed_levels = []
            for level in small[3]:
                mask = np.zeros(m, dtype=bool)
                mask[list(level)] = True
                packed_levels.append(np.packbits(mask))
            return small[0], small[1], small[2], packed_levels
        right = self.right
        if m * right.shape[1] < 2 ** 31:
            right = right.astype(np.int32)  # halves the bytes every gather below moves
        mask = np.zeros(m, dtype=bool)
        mask[right[0]] = True
        packed = np.packbits(mask)
        seen: dict[bytes, int] = {packed.tobytes(): 1}
        levels = [packed]
        j = 1
        lag = 0  # d once η(Σ^{j-d}) ⊆ η(Σ^j) was seen
        ring: list[np.ndarray] = []  # lag mode: unpacked η(Σ^{j-d+1}), …, η(Σ^j), the oldest first
        delta = np.zeros(0, dtype=np.int64)
        slot = np.zeros(0, dtype=np.int64)
        while True:
            if lag:
                mask = ring.pop(0)  # η(Σ^{j+1-d}), updated in place to η(Σ^{j+1})
                cand = right[delta].ravel()
                if 8 * cand.size >= m:  # many candidates: scatter them all, read the new ones off the mask
                    before = mask.copy()
                    mask[cand] = True
                    delta = np.flatnonzero(mask > before).astype(slot.dtype, copy=False)
                else:
                    fresh = cand[~mask[cand]]
                    mask[fresh] = True
                    pos = np.arange(fresh.size, dtype=slot.dtype)
                    slot[fresh] = pos  # keep one copy of each: the last writer of its slot
                    delta = fresh[slot[fresh] == pos]
                ring.append(mask)
            else:
                cur = np.flatnonzero(mask)
                mask = np.zeros(m, dtype=bool)
                mask[right[cur].ravel()] = True
            j += 1
            packed = np.packbits(mask)
            key = packed.tobytes()
            if key in seen:
                pre, per = seen[key], j - seen[key]
                break
            seen[key] = j
            levels.append(packed)
            if not lag:
                for d in range(1, min(INCLUSION_LAG, j - 1) + 1):
                    if not (levels[j - 1 - d] & ~packed).any():  # η(Σ^{j-d}) ⊆ η(Σ^j)
                        lag = d
                        ring = [np.unpackbits(levels[i], count=m).astype(bool) for i in range(j - d, j - 1)] + [mask]
                        delta = np.flatnonzero(mask & ~np.unpackbits(levels[j - 1 - d], count=m).astype(bool))
                        slot = np.zeros(m, dtype=right.dtype)
                        break
        s = per * max(1, -(-pre // per))
        return s, pre, per, levels

    def _level_mask(self, j: int) -> np.ndarray:
        return np.unpackbits(self._stable[3][j - 1], count=self.size).astype(bool)

    def level(self, j: int) -> frozenset[int]:
        """η(Σ^j) as a set of element ids, for 1 ≤ j ≤ :attr:`stability_index` (the levels the
        stability index was computed from)."""
        small = self._small_levels
        if small is not None:
            return small[3][j - 1]
        return frozenset(np.flatnonzero(self._level_mask(j)).tolist())

    @property
    def stability_index(self) -> int:
        """s = least s ≥ 1 with η(Σ^s) = η(Σ^{2s})."""
        return self._stable[0]

    @property
    def level_period(self) -> int:
        """p = the period of the sequence η(Σ^j): η(Σ^{j+p}) = η(Σ^j) for every j ≥ the preperiod i,
        p least. p divides the stability index s = p·⌈i/p⌉."""
        return self._stable[2]

    @cached_property
    def level_members(self) -> tuple[np.ndarray, np.ndarray]:
        """``(J, X)``, ``int64 [Λ]`` each, Λ = Σ_{j < i+p} |η(Σ^j)| (i the preperiod, p the period):
        element X[t] lies in η(Σ^{J[t]}) (every pair with 1 ≤ j < i + p once, by increasing j). Every
        later level repeats one of these: η(Σ^j) = η(Σ^{j-p}) for j ≥ i + p."""
        small = self._small_levels
        levels = small[3] if small is not None else self._stable[3]
        parts = [np.fromiter(sorted(level), dtype=np.int64) if small is not None
                 else np.flatnonzero(np.unpackbits(level, count=self.size)).astype(np.int64) for level in levels]
        J = np.repeat(np.arange(1, len(parts) + 1, dtype=np.int64), [p.size for p in parts])
        X = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        J.setflags(write=False)
        X.setflags(write=False)
        return J, X

    @cached_property
    def level_total(self) -> int:
        """Λ = Σ_{j < i+p} |η(Σ^j)| (the length of :attr:`level_members`), counted without building it."""
        small = self._small_levels
        if small is not None:
            return sum(len(level) for level in small[3])
        return int(sum(int(np.unpackbits(packed, count=self.size).sum()) for packed in self._stable[3]))

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
        k = self.right.shape[1]
        small = self._small_levels
        if small is not None:
            sets, preds = small[3], self._small_predecessors
            letters = []
            for j in range(s, 1, -1):
                level = sets[j - 2]  # η(Σ^{j-1})
                p = next(p for p in preds[x] if p // k in level)  # the least (y, a)
                letters.append(p % k)
                x = p // k
            letters.append(self.right[0].tolist().index(x))
            letters.reverse()
            return tuple(self.dfa.alphabet[a] for a in letters)
        levels = self._stable[3]
        letters = []
        for j in range(s, 1, -1):
            packed = levels[j - 2]  # η(Σ^{j-1})
            y, a = self._first_predecessor(x, packed)
            letters.append(a)
            x = y
        letters.append(int(np.flatnonzero(self.right[0] == x)[0]))
        letters.reverse()
        return tuple(self.dfa.alphabet[a] for a in letters)

    def _first_predecessor(self, x: int, packed: np.ndarray) -> tuple[int, int]:
        """The least (y, a) (y first, then the letter) with y·a = x and y in the packed mask.

        The candidates y with y·a = x are the transformations with y(q) ∈ δ_a⁻¹(x(q)) for every
        state q; while their number is at most :data:`PREIMAGE_CANDIDATES` for every letter they are
        enumerated and looked up, otherwise (and for every graph of at most :data:`REVERSED_GRAPH_EDGES`
        edges) the reversed right Cayley graph is built once."""
        k = self.right.shape[1]
        if "_right_predecessors" not in self.__dict__ and self.size * k > REVERSED_GRAPH_EDGES:
            found = self._predecessor_by_candidates(int(x), packed)
            if found is not None:
                return found
        order, starts = self._right_predecessors
        for pos in order[starts[x]:starts[x + 1]].tolist():
            y = pos // k
            if (packed[y >> 3] >> (7 - (y & 7))) & 1:
                return y, pos % k
        raise AssertionError("broken stable-semigroup levels")  # pragma: no cover

    def _predecessor_by_candidates(self, x: int, packed: np.ndarray) -> tuple[int, int] | None:
        """:meth:`_first_predecessor` by enumerating the candidate transformations; ``None`` when a
        letter has more than :data:`PREIMAGE_CANDIDATES` of them."""
        n, k = self.num_states, self.right.shape[1]
        gens = self.elements[self.letter_ids].astype(np.int64)  # [k, n]: δ(q, a)
        xt = self.elements[x].astype(np.int64)
        best: tuple[int, int] | None = None
        for a in range(k):
            order = np.argsort(gens[a], kind="stable")
            starts = np.searchsorted(gens[a][order], np.arange(n + 1))
            cnt = (starts[1:] - starts[:-1])[xt]  # |δ_a⁻¹(x(q))| for every q
            if (cnt == 0).any():
                continue
            if float(np.log2(cnt).sum()) > np.log2(PREIMAGE_CANDIDATES) + 1e-9:
                return None
            total = int(np.prod(cnt))
            cand = np.broadcast_to(order[starts[xt]], (total, n)).copy()  # first preimage of every x(q)
            rest = np.arange(total)
            for q in np.flatnonzero(cnt > 1).tolist():  # mixed-radix enumeration of the other choices
                c = int(cnt[q])
                cand[:, q] = order[starts[xt[q]] + rest % c]
                rest //= c
            ids = self.ids_of(cand)
            ids = ids[ids >= 0]
            ids = ids[((packed[ids >> 3] >> (7 - (ids & 7))) & 1).astype(bool)]
            if ids.size and (best is None or int(ids.min()) < best[0]):
                best = (int(ids.min()), a)
        assert best is not None, "broken stable-semigroup levels"
        return best

    @cached_property
    def _right_predecessors(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR of the reversed right Cayley graph: positions p = y·k + a with y·a = x are
        ``order[starts[x]:starts[x+1]]``."""
        flat = self.right.ravel()
        order = np.argsort(flat, kind="stable")
        starts = np.searchsorted(flat[order], np.arange(self.size + 1))
        return order, starts
