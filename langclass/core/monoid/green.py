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

from .lookup import canonical_labels, table_components

__all__ = ["GreenMixin"]


class GreenMixin:
    """Green's relations of a :class:`~langclass.core.monoid.TransitionMonoid` (reads its Cayley graphs)."""

    @cached_property
    def green(self) -> dict[str, np.ndarray]:
        """Green's relations as canonical class ids: ``{"R", "L", "H", "J"}`` each ``int64 [m]``.

        R-classes are the strongly connected components of the right Cayley graph, L-classes those
        of the left one; D = R∘L (= J, M finite) is computed as the connected components of the
        bipartite graph joining the R- and L-class of every element; H = R ∩ L. The relations on
        the semigroup η(Σ⁺) are the restrictions of those of M (S¹ = M).
        """
        m = self.right.shape[0]
        R = table_components(self.right)
        L = table_components(self.left)
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
