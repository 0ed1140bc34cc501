"""Explicit permutation groups (every element listed), for the maximal subgroups of a monoid.

A maximal subgroup H_e of a transition monoid is known element by element (its members are monoid
elements), so its structure is computed on that list with numpy instead of a Schreier–Sims chain:
products and inverses are row gathers looked up back in the list, subgroups are closures under
right multiplication, and solvability is the derived series G ⊇ G' ⊇ G'' ⊇ … with each G^(i+1) the
normal closure in G^(i) of the commutators of its generators. Sufficient conditions on the order
decide solvability first: |G| < 60 (A5 is the smallest non-solvable group), |G| odd (W. Feit &
J. G. Thompson, "Solvability of groups of odd order", 1963) and |G| = p^a·q^b (W. Burnside, "On
groups of order p^α q^β", 1904).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["PermGroup", "solvable_by_order", "is_even", "prime_factors"]


def cycle_lcm(f: np.ndarray, starts) -> int:
    """The lcm of the lengths of the cycles of the map ``f`` (an int array, i ↦ f[i]) through the
    points ``starts`` (each must lie on a cycle of f); 1 for none. O(points on those cycles)."""
    seen = np.zeros(f.size, dtype=bool)
    period = 1
    for q in starts:
        if seen[q]:
            continue
        length, r = 0, int(q)
        while not seen[r]:
            seen[r] = True
            r = int(f[r])
            length += 1
        period = period * length // math.gcd(period, length)
    return period

def prime_factors(n: int) -> list[int]:
    """The distinct prime factors of n ≥ 1, increasing (trial division)."""
    out, p = [], 2
    while p * p <= n:
        if n % p == 0:
            out.append(p)
            while n % p == 0:
                n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def solvable_by_order(order: int) -> bool:
    """True when every group of this order is solvable by a classical theorem: order < 60, odd
    (Feit–Thompson 1963) or divisible by at most two primes (Burnside 1904). False means "not
    decided by the order" (the group may still be solvable)."""
    return order < 60 or order % 2 == 1 or len(prime_factors(order)) <= 2


def is_even(perm) -> bool:
    """A permutation (sequence of images of 0..d-1) is even: d minus its number of cycles is even."""
    perm = list(perm)
    seen = [False] * len(perm)
    cycles = 0
    for i in range(len(perm)):
        if not seen[i]:
            cycles += 1
            j = i
            while not seen[j]:
                seen[j] = True
                j = perm[j]
    return (len(perm) - cycles) % 2 == 0


class PermGroup:
    """A finite permutation group given by the list of all its elements.

    Args:
        perms: ``int [N, d]``, row i is element i as the images of the points 0..d-1; the rows must
            be distinct and closed under composition (a group).

    Products: ``mul(a, b)`` is "a, then b" (row b gathered at row a), as for monoid elements.
    """

    def __init__(self, perms: np.ndarray) -> None:
        self.perms = np.ascontiguousarray(np.asarray(perms, dtype=np.int64))
        self.N, self.d = self.perms.shape
        if self.d <= 15:
            codes = self._pack(self.perms)
            self._order = np.argsort(codes, kind="stable")
            self._codes = codes[self._order]
            self._dict = None
        else:
            self._dict = {r.tobytes(): i for i, r in enumerate(self.perms)}
        ident = self.index(np.arange(self.d, dtype=np.int64)[None, :])
        self.identity = int(ident[0])
        self._rmaps: dict[int, np.ndarray] = {}

    @staticmethod
    def _pack(rows: np.ndarray) -> np.ndarray:
        return (rows << (4 * np.arange(rows.shape[1], dtype=np.int64))).sum(axis=1)

    def index(self, rows: np.ndarray) -> np.ndarray:
        """Element indices of permutations ``[r, d]``.

        Raises:
            AssertionError: a row is not an element (the list is not closed under products)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self._dict is None:
            k = self._pack(rows)
            pos = np.minimum(np.searchsorted(self._codes, k), self.N - 1)
            assert (self._codes[pos] == k).all(), "the listed permutations are not closed under products"
            return self._order[pos]
        get = self._dict.get
        out = np.fromiter((get(r.tobytes(), -1) for r in rows), dtype=np.int64, count=rows.shape[0])
        assert (out >= 0).all(), "the listed permutations are not closed under products"
        return out

    def mul(self, a, b) -> np.ndarray:
        """Indices of a[i]·b[i] (apply a[i], then b[i]); a, b index arrays (broadcast)."""
        a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
        return self.index(np.take_along_axis(self.perms[b.ravel()], self.perms[a.ravel()], axis=1)).reshape(a.shape)

    def inv(self, a) -> np.ndarray:
        """Indices of the inverses."""
        a = np.asarray(a, dtype=np.int64).reshape(-1)
        return self.index(np.argsort(self.perms[a], axis=1))

    def rmap(self, g: int) -> np.ndarray:
        """``int64 [N]``: index of x·g for every element x (cached per g)."""
        g = int(g)
        out = self._rmaps.get(g)
        if out is None:
            out = self._rmaps[g] = self.mul(np.arange(self.N, dtype=np.int64), g)
        return out

    def closure(self, gens, start: np.ndarray | None = None) -> np.ndarray:
        """Boolean ``[N]``: the subgroup generated by ``gens`` (indices) and the subgroup ``start``."""
        mask = np.zeros(self.N, dtype=bool) if start is None else start.copy()
        mask[self.identity] = True
        frontier = np.flatnonzero(mask)
        maps = [self.rmap(g) for g in gens]
        while frontier.size and maps:
            new = []
            for mp in maps:
                nxt = mp[frontier]
                nxt = np.unique(nxt[~mask[nxt]])
                mask[nxt] = True
                new.append(nxt)
            frontier = np.concatenate(new)
        return mask

    def greedy_generators(self, candidates) -> list[int]:
        """Generators picked greedily from ``candidates`` (indices, in order): each one not already
        in the subgroup generated by the previous ones, until the whole group is generated."""
        mask = self.closure([])
        gens: list[int] = []
        for i in candidates:
            if mask.all():
                break
            i = int(i)
            if mask[i]:
                continue
            gens.append(i)
            mask = self.closure(gens, mask)
        assert mask.all(), "the candidates do not generate the group"
        return gens

    def commute(self, gens) -> bool:
        """Do the given elements commute pairwise (so the group they generate is abelian)?"""
        g = np.asarray(gens, dtype=np.int64)
        if g.size < 2:
            return True
        a, b = np.meshgrid(g, g, indexing="ij")
        return bool((self.mul(a, b) == self.mul(b, a)).all())

    def power_all(self, k: int) -> np.ndarray:
        """Indices of x^k for every element x (square and multiply, all elements at once)."""
        res = np.full(self.N, self.identity, dtype=np.int64)
        base = np.arange(self.N, dtype=np.int64)
        while k:
            if k & 1:
                res = self.mul(res, base)
            k >>= 1
            if k:
                base = self.mul(base, base)
        return res

    def is_cyclic_abelian(self) -> bool:
        """For an abelian group: cyclic iff its exponent is its order, i.e. for every prime p dividing
        N some x has x^(N/p) ≠ 1."""
        return all(bool((self.power_all(self.N // p) != self.identity).any()) for p in prime_factors(self.N))

    def normal_closure(self, gens, within) -> tuple[list[int], np.ndarray]:
        """Generators and mask of the normal closure of ⟨gens⟩ in the group generated by ``within``
        (conjugates g⁻¹·s·g by the generators of the big group are added until none is new)."""
        hg = [int(s) for s in gens if int(s) != self.identity]
        mask = self.closure(hg)
        g = np.asarray([int(x) for x in within], dtype=np.int64)
        if g.size == 0:
            return hg, mask
        gi = self.inv(g)
        frontier = list(hg)
        while frontier:
            s_, w = np.meshgrid(np.asarray(frontier, dtype=np.int64), np.arange(g.size), indexing="ij")
            conj = self.mul(self.mul(gi[w.ravel()], s_.ravel()), g[w.ravel()])  # g⁻¹·s·g
            frontier = []
            for t in conj.tolist():
                if not mask[t]:
                    hg.append(t)
                    mask = self.closure(hg, mask)
                    frontier.append(t)
        return hg, mask

    def is_solvable(self, gens) -> bool:
        """The derived series of the group generated by ``gens`` reaches the trivial group."""
        cur = [int(g) for g in gens]
        size = int(self.closure(cur).sum())
        while size > 1:
            g = np.asarray(cur, dtype=np.int64)
            gi = self.inv(g)
            a, b = np.meshgrid(np.arange(g.size), np.arange(g.size), indexing="ij")
            keep = a < b
            a, b = a[keep], b[keep]
            comm = self.mul(self.mul(gi[a], gi[b]), self.mul(g[a], g[b])) if a.size else np.zeros(0, dtype=np.int64)
            nxt, mask = self.normal_closure(np.unique(comm).tolist(), cur)
            new_size = int(mask.sum())
            if new_size == size:
                return False
            cur, size = nxt, new_size
        return True
