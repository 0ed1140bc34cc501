"""Green's relations R, L, H, J (= D) of the monoid, regular elements, group elements, and paths.

R-classes are the strongly connected components of the right Cayley graph, L-classes those of the
left one, D = R∘L the connected components of the bipartite graph joining each element's R- and
L-class, H = R ∩ L (J. A. Green, "On the structure of semigroups", 1951; V. Froidure & J.-E. Pin,
"Algorithms for computing finite semigroups", 1997).
"""

from __future__ import annotations

from collections import deque
from functools import cached_property

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from langclass.core.automata.smallgraph import SMALL_GRAPH_EDGES, canonical, connected_labels, strong_labels
from .lookup import canonical_labels, strong_components, table_components

__all__ = ["GreenMixin", "REGULARITY_WORK"]

REGULARITY_WORK = 50_000_000
"""Green's relations read regular elements off kernels and images while the regularity check
(images of a component × kernels × states) stays under this; beyond, strong components throughout."""


def _unique_inverse(codes: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` for non-negative codes below ``span``: a presence
    table when span ≤ 4·len(codes) (no sort), else the sort."""
    if span <= 4 * codes.size + 1024:
        present = np.zeros(span, dtype=bool)
        present[codes] = True
        uniq = np.flatnonzero(present)
        rank = np.cumsum(present, dtype=np.int64) - 1
        return uniq, rank[codes]
    uniq, inv = np.unique(codes, return_inverse=True)
    return uniq, inv.reshape(-1)


def _induced_components(table: np.ndarray, nodes: np.ndarray, m: int) -> np.ndarray:
    """Strong components (ids 0..c-1) of the Cayley graph ``table`` restricted to ``nodes``."""
    pos = np.full(m, -1, dtype=np.int64)
    pos[nodes] = np.arange(nodes.size)
    dst = pos[table[nodes]]  # [r, k]
    src = np.broadcast_to(np.arange(nodes.size)[:, None], dst.shape)
    keep = dst >= 0
    return strong_components(nodes.size, src[keep], dst[keep])


class GreenMixin:
    """Green's relations of a :class:`~langclass.core.algebra.monoid.TransitionMonoid` (reads its Cayley graphs)."""

    @cached_property
    def green(self) -> dict[str, np.ndarray]:
        """Green's relations as canonical class ids: ``{"R", "L", "H", "J"}`` each ``int64 [m]``.

        R-classes are the strongly connected components of the right Cayley graph, L-classes those
        of the left one; D = R∘L (= J, M finite) is computed as the connected components of the
        bipartite graph joining the R- and L-class of every element; H = R ∩ L. The relations on
        the semigroup η(Σ⁺) are the restrictions of those of M (S¹ = M).

        For n ≤ 15 states (and Cayley graphs of more than
        :data:`~langclass.core.automata.smallgraph.SMALL_GRAPH_EDGES` edges) the regular elements are found first (:meth:`_regular_by_images`) and
        their classes read off the transformations: two regular elements of a transformation
        monoid are R-equivalent iff they have the same kernel and L-equivalent iff they have the
        same image (each is R- resp. L-equivalent to an idempotent of M, and idempotents e, f with
        ker e = ker f satisfy e·f = f, f·e = e; dually for images). Only the non-regular elements,
        which form whole D-classes, go through the strong components.
        """
        m, k = self.right.shape
        if m * k <= SMALL_GRAPH_EDGES:
            return self._green_small()
        fast = self._regular_by_images()
        if fast is None:
            R = table_components(self.right)
            L = table_components(self.left)
        else:
            reg, ker_id, img_id = fast
            R, L = ker_id, img_id
            if not reg.all():
                R = R.copy()
                L = L.copy()
                sub = np.flatnonzero(~reg)
                R[sub] = int(ker_id.max()) + 1 + _induced_components(self.right, sub, m)
                L[sub] = int(img_id.max()) + 1 + _induced_components(self.left, sub, m)
            R = canonical_labels(R)
            L = canonical_labels(L)
        # D = R ∘ L (= J, M finite): connected components of the bipartite graph R-classes — L-classes
        nr = int(R.max()) + 1
        nl = int(L.max()) + 1
        H = canonical_labels(R * nl + L)
        # one edge per H-class (its first element) is enough for the components
        first = np.zeros(int(H.max()) + 1, dtype=np.int64)
        new_h = np.ones(m, dtype=bool)
        new_h[1:] = H[1:] > np.maximum.accumulate(H)[:-1]  # canonical ids: a class's first element raises the max
        first[H[new_h]] = np.flatnonzero(new_h)
        er, el = R[first], L[first]
        if er.size <= SMALL_GRAPH_EDGES:
            comp = np.asarray(connected_labels(nr + nl, list(zip(er.tolist(), (nr + el).tolist()))), dtype=np.int64)
        else:
            g = csr_matrix((np.ones(er.size, dtype=np.int8), (er, nr + el)), shape=(nr + nl, nr + nl))
            _, comp = connected_components(g, directed=False)
        # R is canonical, so D-classes first occur in the order of their least R-class: rank them on
        # the R-class ids (nr of them) instead of on all m elements
        J = canonical_labels(comp[:nr])[R]
        for arr in (R, L, J, H):
            arr.setflags(write=False)
        return {"R": R, "L": L, "H": H, "J": J}

    def _green_small(self) -> dict[str, np.ndarray]:
        """:attr:`green` of a monoid whose Cayley graphs have at most
        :data:`~langclass.core.automata.smallgraph.SMALL_GRAPH_EDGES` edges, entirely in plain Python (the
        same steps as the general path — strong components of both Cayley graphs, H = R ∩ L, D the
        components of the R–L bipartite graph — on lists; numpy's per-call overhead dominates here)."""
        R = canonical(strong_labels(self.right.tolist()))
        L = canonical(strong_labels(self.left.tolist()))
        nr, nl = max(R) + 1, max(L) + 1
        H = canonical([r * nl + l for r, l in zip(R, L)])
        edges, seen = [], set()
        for x, h in enumerate(H):  # one edge per H-class (its first element) is enough
            if h not in seen:
                seen.add(h)
                edges.append((R[x], nr + L[x]))
        comp = connected_labels(nr + nl, edges)
        J = canonical([comp[r] for r in R])
        out = {}
        for name, labels in (("R", R), ("L", L), ("H", H), ("J", J)):
            arr = np.asarray(labels, dtype=np.int64)
            arr.setflags(write=False)
            out[name] = arr
        return out

    def _regular_by_images(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``(regular, kernel ids, image ids)``, each ``[m]``, or ``None`` when n > 15 or the check
        would exceed :data:`REGULARITY_WORK`.

        x is regular (x·v·x = x for some v ∈ M) iff some image B in the strongly connected
        component of im x in the action of M on images (B·a = δ_a(B)) is a transversal of ker x:
        then u ∈ M with im(x)·u = B makes x·u·x act on im x as a permutation π, and
        v = u·(x·u)^{ord π − 1} gives x·v·x = x; conversely B = im(x)·v is such a transversal, and
        B·x = im x (the action of images in transformation semigroups: S. A. Linton, G. Pfeiffer,
        E. F. Robertson & N. Ruškuc, "Groups and actions in transformation semigroups", 1998).
        """
        n, m = self.num_states, self.size
        if n > 15:
            return None
        XT = np.ascontiguousarray(self.elements.T)  # [n, m]: one contiguous row per state
        pow2 = np.left_shift(np.int64(1), np.arange(n, dtype=np.int64))
        b16 = np.zeros(m, dtype=np.uint16)  # the image as a bit set (n ≤ 15)
        for q in range(n):
            b16 |= np.left_shift(np.uint16(1), XT[q], dtype=np.uint16)
        bits = b16.astype(np.int64)
        del b16
        weights = np.asarray([n ** q for q in range(n)], dtype=np.int64)
        kcode = np.zeros(m, dtype=np.int64)  # the kernel: per state q, the least p with x(p) = x(q)
        least = np.empty(m, dtype=np.int8)
        for q in range(n):
            least.fill(q)
            for p in range(q - 1, -1, -1):
                np.copyto(least, np.int8(p), where=XT[p] == XT[q])
            kcode += least * weights[q]
        del XT, least
        imgs, img_id = _unique_inverse(bits, 1 << n)
        kers, ker_id = _unique_inverse(kcode, n ** n)
        # the action of the letters on the images, and its strong components
        gens = self.elements[self.letter_ids].astype(np.int64)  # [k, n]
        src, dst = [], []
        for a in range(gens.shape[0]):
            out = np.zeros(imgs.size, dtype=np.int64)
            for q in range(n):
                out |= np.where((imgs >> q) & 1 == 1, pow2[gens[a, q]], 0)
            src.append(np.arange(imgs.size))
            dst.append(np.searchsorted(imgs, out))
        comp = strong_components(imgs.size, np.concatenate(src), np.concatenate(dst))
        # pairs (component of the image, kernel) present, and their regularity
        pcode = comp[img_id] * kers.size + ker_id
        pairs, pair_id = _unique_inverse(pcode, (int(comp.max()) + 1) * kers.size)
        p_comp, p_ker = pairs // kers.size, pairs % kers.size
        corder = np.argsort(comp, kind="stable")  # images grouped by component
        cstart = np.searchsorted(comp[corder], np.arange(int(comp.max()) + 2))
        csize = cstart[1:] - cstart[:-1]
        work = int(csize[p_comp].sum()) * n
        if work > REGULARITY_WORK:
            return None
        # expand: one row per (pair, image B of the pair's component)
        reps = csize[p_comp]
        row_pair = np.repeat(np.arange(pairs.size), reps)
        offs = np.arange(row_pair.size) - np.repeat(np.cumsum(reps) - reps, reps)
        B = imgs[corder[cstart[p_comp][row_pair] + offs]]
        K = (kers[p_ker][row_pair][:, None] // weights[None, :]) % n  # [rows, n] least equal state
        ok = np.ones(row_pair.size, dtype=bool)
        for c in range(n):  # the kernel class with least state c must meet B exactly once
            cls = ((K == c) * pow2[None, :]).sum(axis=1)
            is_cls = (K[:, c] == c)
            ok &= ~is_cls | (np.bitwise_count(B & cls) == 1)
        reg_pair = np.zeros(pairs.size, dtype=bool)
        reg_pair[row_pair[ok]] = True
        return reg_pair[pair_id], ker_id, img_id

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

    @cached_property
    def regular_d_classes(self) -> list[int]:
        """J-class ids that contain an idempotent, in id order."""
        J = self.green["J"]
        return sorted(set(J[self.idempotent].tolist()))
