"""The shared, lazily computed facts about one minimal DFA and its monoid that the deciders read.

Graph facts (strong components, BFS trees, access and separating words) come from scipy's C graph
routines on the transition graph; monoid facts (idempotents of η(Σ⁺), the multiplication table
when it fits, the maximal idempotents one per D-class, the masks of eM and Me) from
:class:`~langclass.core.algebra.monoid.TransitionMonoid`.
"""

from __future__ import annotations

from collections import deque
from functools import cached_property

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components

from langclass.core.automata.automaton import DFA
from langclass.core.base.limits import DEFAULT_LIMITS, Deadline, Limits
from ..monoid import TransitionMonoid
from langclass.core.automata.smallgraph import SMALL_GRAPH_EDGES, bfs_tree, strong_labels
from .evidence import Separation, separation

__all__ = ["Context", "MULT_TABLE_MAX_ENTRIES", "TABLE_AT_ONCE_ELEMENTS", "TABLE_ROWS_DIVISOR"]

MULT_TABLE_MAX_ENTRIES = 16_000_000
"""The algebraic tests use the full multiplication table (int32, 64 MB at the cap) when m² is at most this."""

SMALL_IDEMPOTENTS = 64
"""At most this many idempotents: :attr:`Context.maximal_idempotents` on lists (numpy's per-call overhead
dominates a handful of comparisons); the same answer (a test compares both)."""

TABLE_AT_ONCE_ELEMENTS = 512
"""The multiplication table of a monoid of at most this many elements is built at the first product
asked for (m² ≤ 2^18 entries: as cheap as one row). For larger monoids rows and columns are computed
on demand from the Cayley graphs (O(m) each) until those asked for reach m / :data:`TABLE_ROWS_DIVISOR`;
then the table is built once. Either way the products are the same; only the time differs."""

TABLE_ROWS_DIVISOR = 8
"""See :data:`TABLE_AT_ONCE_ELEMENTS`."""

TRANSFORMATION_MASK_ENTRIES = 1 << 16
""":meth:`Context.fixed_masks` composes transformations (r idempotents × m elements × n states
compared) instead of reading the multiplication table when that table is not built yet and
r·m·n is at most this: a small language's local tests then build no table at all."""


class Context:
    """Shared, lazily computed facts about one minimal DFA (and its monoid, when available).

    Args:
        dfa: a DFA (minimized here).
        monoid: its transition monoid, or ``None`` when over the cap.
        limits: limits for auxiliary constructions.
        deadline: optional deadline checked by long loops.
    """

    def __init__(self, dfa: DFA, monoid: TransitionMonoid | None = None, limits: Limits = DEFAULT_LIMITS,
                 deadline: Deadline | None = None) -> None:
        self.dfa = dfa.canonical()
        self.monoid = monoid
        self.limits = limits
        self.deadline = deadline
        self.t = self.dfa.transitions.astype(np.int64)
        self.n, self.k = self.t.shape
        self._rows_asked = 0

    def check_time(self, step: str) -> None:
        if self.deadline is not None:
            self.deadline.check(step)

    # --------------------------------------------------------------- graph
    @cached_property
    def _succ_lists(self) -> list[list[int]]:
        """Sorted distinct successors of every state (the small-graph routines' input)."""
        return [sorted(set(row)) for row in self.t.tolist()]

    @cached_property
    def scc(self) -> np.ndarray:
        """Component id of every state (strong components, arbitrary but fixed ids: the deciders use
        the partition only). Plain Python on graphs of at most :data:`SMALL_GRAPH_EDGES` edges, scipy above."""
        n, k = self.n, self.k
        if n * k <= SMALL_GRAPH_EDGES:
            return np.asarray(strong_labels(self._succ_lists), dtype=np.int64)
        g = csr_matrix((np.ones(n * k, dtype=np.int8), (np.repeat(np.arange(n), k), self.t.ravel())), shape=(n, n))
        _, lab = connected_components(g, directed=True, connection="strong")
        return lab.astype(np.int64)

    @cached_property
    def scc_sizes(self) -> np.ndarray:
        return np.bincount(self.scc)

    def bfs(self, src: int, allowed: np.ndarray | None = None, *, reverse: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Breadth-first tree from ``src`` in the transition graph restricted to the states of ``allowed``.

        Returns:
            ``(pred, letter, order)``: ``order`` the states reached in BFS order; for a reached
            state v ≠ src, ``pred[v]`` is its tree parent and ``letter[v]`` the letter of the tree
            edge pred[v] → v (with ``reverse=True`` the edges are reversed: v → pred[v] on that
            letter, so following ``pred`` from v is a shortest path *to* src). Unreached: pred < 0.
            scipy's C BFS: O(n·|Σ|); on graphs of at most :data:`SMALL_GRAPH_EDGES` edges the same
            search in plain Python (:func:`~langclass.core.automata.smallgraph.bfs_tree`, same order and tree).
        """
        n, k = self.n, self.k
        if n * k <= SMALL_GRAPH_EDGES:
            return self._bfs_small(src, allowed, reverse)
        rows = np.repeat(np.arange(n), k)
        cols = self.t.ravel()
        if allowed is not None:
            keep = allowed[rows] & allowed[cols]
            rows, cols = rows[keep], cols[keep]
        if reverse:
            rows, cols = cols, rows
        g = csr_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(n, n))
        order, pred = breadth_first_order(g, int(src), directed=True, return_predecessors=True)
        pred = pred.astype(np.int64)
        pred[pred < 0] = -1
        letter = np.full(n, -1, dtype=np.int64)
        reached = order[1:]
        if reached.size:
            u = pred[reached]
            frm, to = (reached, u) if reverse else (u, reached)
            letter[reached] = np.argmax(self.t[frm] == to[:, None], axis=1)
        return pred, letter, order

    def _bfs_small(self, src: int, allowed: np.ndarray | None, reverse: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`bfs` in plain Python: the out-neighbours sorted and merged as in scipy's CSR matrix."""
        n = self.n
        tl = self.t.tolist()
        ok = None if allowed is None else allowed.tolist()
        if reverse:
            back: list[set[int]] = [set() for _ in range(n)]
            for q, row in enumerate(tl):
                if ok is None or ok[q]:
                    for r in row:
                        if ok is None or ok[r]:
                            back[r].add(q)
            succ = [sorted(b) for b in back]
        elif ok is None:
            succ = self._succ_lists
        else:
            succ = [sorted({r for r in row if ok[r]}) if ok[q] else [] for q, row in enumerate(tl)]
        order, pred = bfs_tree(succ, int(src))
        letter = [-1] * n
        for v in order[1:]:
            u = pred[v]
            frm, to = (v, u) if reverse else (u, v)
            letter[v] = tl[frm].index(to)
        return np.asarray(pred, dtype=np.int64), np.asarray(letter, dtype=np.int64), np.asarray(order, dtype=np.int32)

    def tree_word(self, pred: np.ndarray, letter: np.ndarray, v: int, root: int, *, reverse: bool = False) -> tuple[str, ...]:
        """The word along a BFS tree between ``root`` and ``v`` (see :meth:`bfs`)."""
        out = []
        v = int(v)
        while v != root:
            out.append(self.dfa.alphabet[int(letter[v])])
            v = int(pred[v])
            assert v >= 0, "state not reached by the BFS"
        return tuple(out) if reverse else tuple(reversed(out))

    @cached_property
    def _access(self) -> tuple[np.ndarray, np.ndarray]:
        pred, letter, _ = self.bfs(self.dfa.initial)
        return pred, letter

    def access_word(self, q: int) -> tuple[str, ...]:
        """A shortest word leading q0 to q (BFS)."""
        pred, letter = self._access
        return self.tree_word(pred, letter, q, self.dfa.initial)

    def path(self, src: int, dst: int, allowed: np.ndarray | None = None) -> tuple[str, ...] | None:
        """A shortest word leading ``src`` to ``dst`` through states of ``allowed`` (mask), or None."""
        src, dst = int(src), int(dst)
        if src == dst:
            return ()
        pred, letter, _ = self.bfs(src, allowed)
        if pred[dst] < 0:
            return None
        return self.tree_word(pred, letter, dst, src)

    def separating_word(self, p: int, q: int) -> tuple[str, ...]:
        """A shortest word v with exactly one of p·v, q·v accepting (p ≠ q in a minimal DFA)."""
        p, q = int(p), int(q)
        acc = self.dfa.accepting
        if acc[p] != acc[q]:
            return ()
        prev = {(p, q): None}
        dq = deque([(p, q)])
        tl = self.t.tolist()
        while dq:
            u = dq.popleft()
            for a in range(self.k):
                v = (tl[u[0]][a], tl[u[1]][a])
                if v in prev:
                    continue
                prev[v] = (u, a)
                if acc[v[0]] != acc[v[1]]:
                    out = []
                    while prev[v] is not None:
                        u2, a2 = prev[v]
                        out.append(self.dfa.alphabet[a2])
                        v = u2
                    return tuple(reversed(out))
                dq.append(v)
        raise AssertionError(f"states {p} and {q} are equivalent: the DFA is not minimal")

    def context_for(self, t1: np.ndarray, t2: np.ndarray) -> Separation:
        """Words u, v and a state q showing that two transformations are different elements:
        exactly one of u·w₁·v and u·w₂·v is accepted (w₁, w₂ any words of t1, t2)."""
        return separation(self, t1, t2)

    def element_context(self, x: int, y: int) -> Separation:
        """:meth:`context_for` two monoid elements (ids)."""
        M = self.monoid
        return self.context_for(M.elements[x].astype(np.int64), M.elements[y].astype(np.int64))

    # --------------------------------------------------------------- monoid helpers
    @cached_property
    def semigroup_idempotents(self) -> np.ndarray:
        M = self.monoid
        return np.flatnonzero(M.idempotent & M.in_semigroup)

    @property
    def table_fits(self) -> bool:
        """m² ≤ :data:`MULT_TABLE_MAX_ENTRIES`: the algebraic tests count one comparison per product
        (the table's, built or not), else n (composing transformations)."""
        return self.monoid.size ** 2 <= MULT_TABLE_MAX_ENTRIES

    @cached_property
    def mult_table(self) -> np.ndarray | None:
        """The multiplication table ``[m, m]`` of the monoid (x·y at ``[x, y]``) when m² ≤
        :data:`MULT_TABLE_MAX_ENTRIES`, else ``None`` (rows and columns are then computed on demand).
        Reading it builds it (O(m²)); :meth:`left_rows`, :meth:`right_cols` and :meth:`table_if_built`
        build it only when that pays (see :data:`TABLE_AT_ONCE_ELEMENTS`)."""
        if not self.table_fits:
            return None
        return self.monoid.multiplication_table(self.deadline, MULT_TABLE_MAX_ENTRIES)

    @property
    def table_built(self) -> bool:
        """The multiplication table has been built (reading :attr:`mult_table` now costs nothing)."""
        return "mult_table" in self.__dict__

    def table_if_built(self, rows: int = 0) -> np.ndarray | None:
        """The multiplication table if it is built or worth building now for ``rows`` more rows or
        columns (a small monoid, or the rows asked for so far reach m / :data:`TABLE_ROWS_DIVISOR`);
        else ``None`` (the caller computes its products from the Cayley graphs)."""
        if self.table_built:
            return self.mult_table
        if not self.table_fits:
            return None
        m = self.monoid.size
        self._rows_asked += rows
        if m <= TABLE_AT_ONCE_ELEMENTS or self._rows_asked * TABLE_ROWS_DIVISOR >= m:
            return self.mult_table
        return None

    def left_rows(self, xs) -> np.ndarray:
        """``[len(xs), m]`` integer ids of xs[i]·y for every element y (table rows, or the right Cayley graph)."""
        xs = np.asarray(xs, dtype=np.int64).reshape(-1)
        T = self.table_if_built(xs.size)
        return T[xs] if T is not None else self.monoid.left_multiples(xs, self.deadline)

    def right_cols(self, ys) -> np.ndarray:
        """``[m, len(ys)]`` integer ids of x·ys[j] for every element x (table columns, or the left Cayley graph)."""
        ys = np.asarray(ys, dtype=np.int64).reshape(-1)
        T = self.table_if_built(ys.size)
        return T[:, ys] if T is not None else self.monoid.right_multiples(ys, self.deadline)

    @cached_property
    def maximal_idempotents(self) -> np.ndarray:
        """Idempotents of η(Σ⁺) maximal for e ≤ f ⇔ e = ef = fe (e ≤ f ⇒ |im e| ≤ |im f|, equality only if e = f)."""
        M = self.monoid
        E = self.semigroup_idempotents
        if M.identity_in_semigroup:
            return np.array([0], dtype=np.int64)
        if E.size == 0:
            return np.zeros(0, dtype=np.int64)
        if E.size <= SMALL_IDEMPOTENTS:
            return self._maximal_idempotents_small(E)
        X = M.elements[E].astype(np.intp)  # [|E|, n]
        srt = np.sort(X, axis=1)
        rank = 1 + (srt[:, 1:] != srt[:, :-1]).sum(axis=1)  # |im e|
        # e < f ⇒ |im e| < |im f|: idempotents of one rank are incomparable, so a rank level is compared
        # at once with the maximal idempotents of the higher ranks, on the transformations:
        # e·f = e ⇔ f(e(q)) = e(q) and f·e = e ⇔ e(f(q)) = e(q) for every state q (O(|E|·|F|·n) in all,
        # no product looked up).
        n = M.num_states
        found: list[np.ndarray] = []
        found_rows: list[np.ndarray] = []
        for rk in sorted(set(rank.tolist()), reverse=True):
            self.check_time("maximal idempotents")
            at = np.flatnonzero(rank == rk)
            lev, Xl = E[at], X[at]
            if found:
                FX = np.concatenate(found_rows)  # [p, n]
                p = FX.shape[0]
                keep = np.ones(lev.size, dtype=bool)
                chunk = max(1, 4_000_000 // max(1, p * n))
                for c0 in range(0, lev.size, chunk):
                    self.check_time("maximal idempotents")
                    sub = Xl[c0:c0 + chunk]  # [c, n]
                    c = sub.shape[0]
                    ef = FX[np.arange(p)[None, :, None], sub[:, None, :]]  # [c, p, n]: f(e(q))
                    fe = sub[np.arange(c)[:, None, None], FX[None, :, :]]  # [c, p, n]: e(f(q))
                    below = ((ef == sub[:, None, :]) & (fe == sub[:, None, :])).all(axis=2)
                    keep[c0:c0 + c] = ~below.any(axis=1)  # e = e·f = f·e for no maximal f
                lev, Xl = lev[keep], Xl[keep]
            found.append(lev)
            found_rows.append(Xl)
        return np.concatenate(found).astype(np.int64)

    def _maximal_idempotents_small(self, E: np.ndarray) -> np.ndarray:
        """:attr:`maximal_idempotents` for at most :data:`SMALL_IDEMPOTENTS` idempotents, on lists: the
        same rank levels (highest first, idempotents in id order), each compared with the maximal
        idempotents kept so far (e is below f iff f(e(q)) = e(q) and e(f(q)) = e(q) for every q)."""
        ids = E.tolist()
        rows = self.monoid.elements[E].tolist()
        rank = [len(set(r)) for r in rows]
        kept: list[int] = []
        kept_rows: list[list[int]] = []
        for rk in sorted(set(rank), reverse=True):
            self.check_time("maximal idempotents")
            level = [(e, r) for e, r, k in zip(ids, rows, rank) if k == rk]
            new = [(e, r) for e, r in level
                   if not any(all(f[v] == v and r[f[q]] == v for q, v in enumerate(r)) for f in kept_rows)]
            kept += [e for e, _ in new]
            kept_rows += [r for _, r in new]
        return np.asarray(kept, dtype=np.int64)

    @cached_property
    def maximal_idempotent_reps(self) -> np.ndarray:
        """One maximal idempotent of η(Σ⁺) per D-class (the first in :attr:`maximal_idempotents`).

        Why one per D-class suffices: idempotents e D e' are conjugate, e = a·ā and e' = ā·a with
        e·a = a = a·e', ā·e = ā = e'·ā (Miller–Clifford; see J.-E. Pin, *Mathematical Foundations of
        Automata Theory*, ch. V; J. M. Howie, *Fundamentals of Semigroup Theory*, ch. 2: take a ∈ R_e ∩ L_e'
        and its inverse ā ∈ R_e' ∩ L_e). Then

        * s ↦ ā·s·a is an isomorphism eSe → e'Se' with inverse s' ↦ a·s'·ā (ā s a · ā t a =
          ā s e t a = ā (s t) a and a ā s a ā = e s e = s), so every property of the local monoid
          eSe invariant under isomorphism — R-/L-triviality, being idempotent and commutative —
          holds for e iff it holds for e' (R in eSe is R of M restricted: x = y·m ⇒ x = y·(e m e));
        * for the Beauquier–Pin identity at (e, f): φ(s) = ā·s is a bijection eSf → e'Sf (inverse
          s' ↦ a·s'), ψ(t) = t·a a bijection fSe → fSe' (inverse t' ↦ t'·ā), and
          φ(s₁)ψ(t)φ(s₂) = ā s₁ t e s₂ = ā·(s₁ t s₂), left-cancellable by a (a·ā·u = e·u = u for
          u ∈ eS); so s₁ t s₂ = s₂ t s₁ on (e, f) iff on (e', f). Dually for f (s ↦ s·b, t ↦ b̄·t).

        All of these are also inherited downwards (e' ≤ e ⇒ e'Se' ⊆ eSe, e'Sf' ⊆ eSf), so checking
        them on these representatives decides them for every idempotent.
        """
        maxi = self.maximal_idempotents
        J = self.monoid.green["J"]  # J = D (finite monoid); D of η(Σ⁺) is the restriction (S¹ = M)
        _, first = np.unique(J[maxi], return_index=True)
        return maxi[np.sort(first)]

    @cached_property
    def rep_masks(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`fixed_masks` of :attr:`maximal_idempotent_reps`, shared by the local tests (read-only)."""
        lm, rm = self.fixed_masks(self.maximal_idempotent_reps)
        lm.setflags(write=False)
        rm.setflags(write=False)
        return lm, rm

    def fixed_masks(self, es) -> tuple[np.ndarray, np.ndarray]:
        """Boolean ``([r, m], [r, m])`` for idempotents es: ``[i, x]`` is e·x = x (x ∈ eM), resp.
        x·e = x (x ∈ Me). Row i of the first times row j of the second is e_iMe_j."""
        es = np.asarray(es, dtype=np.int64).reshape(-1)
        M = self.monoid
        m = M.size
        ar = np.arange(m)
        lm = np.ones((es.size, m), dtype=bool)  # the identity (element 0): 1·M = M·1 = M
        rm = np.ones((es.size, m), dtype=bool)
        todo = np.flatnonzero(es != 0)
        if todo.size == 0:
            return lm, rm
        if not self.table_built and todo.size * m * M.num_states <= TRANSFORMATION_MASK_ENTRIES:
            # few states, no table built: compose the transformations (O(r·m·n)) instead of building
            # the table; e·x = x ⇔ x(e(q)) = x(q) and x·e = x ⇔ e(x(q)) = x(q) for every state q
            X = M.elements.astype(np.intp)  # [m, n]
            Es = X[es[todo]]  # [r, n]
            lm[todo] = (X[:, Es] == X[:, None, :]).all(axis=2).T  # X[:, Es]: [m, r, n], x(e(q))
            rm[todo] = (Es[:, X] == X[None, :, :]).all(axis=2)  # Es[:, X]: [r, m, n], e(x(q))
            return lm, rm
        chunk = max(1, 4_000_000 // max(1, m))
        for c0 in range(0, todo.size, chunk):
            self.check_time("local submonoids")
            rows = todo[c0:c0 + chunk]
            sub = es[rows]
            lm[rows] = self.left_rows(sub) == ar[None, :]
            rm[rows] = (self.right_cols(sub) == ar[:, None]).T
        return lm, rm

    def local_mask(self, e: int, f: int | None = None) -> np.ndarray:
        """Boolean ``[m]``: x ∈ eMf, i.e. e·x = x and x·f = x (f defaults to e)."""
        M = self.monoid
        f = e if f is None else f
        if e == 0 and f == 0:  # the identity: 1·M·1 = M
            return np.ones(M.size, dtype=bool)
        lm, _ = self.fixed_masks([e])
        _, rm = self.fixed_masks([f])
        return lm[0] & rm[0]

    def local_mask_reference(self, e: int, f: int | None = None) -> np.ndarray:
        """:meth:`local_mask` by composing transformations (O(m·n)); the definition, kept for cross-checks."""
        M = self.monoid
        f = e if f is None else f
        X = M.elements.astype(np.intp)
        ea, fa = X[e], X[f]
        return (X[:, ea] == X).all(axis=1) & (fa[X] == X).all(axis=1)
