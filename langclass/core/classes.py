"""Decision procedures: one per class, each with a certificate (member) or a witness (non-member).

Every procedure works on the canonical minimal complete DFA ``A`` and, for the algebraic classes,
on its transition monoid ``M`` (= syntactic monoid; :mod:`langclass.core.monoid`). Certificates and
witnesses are JSON-ready dicts whose words (lists of symbols) can be replayed on the DFA;
:func:`replay` does exactly that and is what the tests run on every answer.

Polynomial tests on the DFA (answered even when the monoid is over its size cap):

* LTL[P]: A is partially ordered (every strongly connected component is one state).
* LTL[P,MOD]: every SCC is a single state or a simple cycle; the least k is the lcm of the cycle
  lengths ("Disentangling the Expressivity of RoPE", Thm 3.3 with Def. A.7/A.8: A_k partially ordered
  over *all* states).
* stutter-invariance: δ(δ(q,a),a) = δ(q,a).
* group: every letter permutes the states.

Algebraic tests on M (Green's relations, idempotents, stable semigroup T = η(Σ^s)):

* star-free: M aperiodic (Schützenberger 1965).
* LTL[P,Y]: η(Σ⁺) locally R-trivial; checked on the maximal idempotents e of η(Σ⁺) (e' ≤ e ⇒
  e'Se' ⊆ eSe), one per D-class (eSe ≅ e'Se' for e D e'), using that R on eSe is the restriction of R on M.
* FO²[<] (DA): every regular element is idempotent (Schützenberger 1976; Tesson–Thérien 2002).
* FO²[<,MOD] (QDA): every element of T that is regular in M is idempotent (an element of T is
  regular in T iff it is regular in M: x = x m x ⇒ x = x·(mx)^{s-1}m·x with (mx)^{s-1}m ∈ T).
* FO[<,MOD]: T contains no non-trivial group (Barrington–Compton–Straubing–Thérien 1992).
* piecewise testable: M J-trivial (Simon 1975).
* locally testable: eSe idempotent and commutative for every idempotent e of η(Σ⁺) (Brzozowski–Simon
  1973, McNaughton 1974).
* locally threshold testable: η(Σ⁺) aperiodic and e x f y e z f = e z f y e x f for idempotents e, f
  (Beauquier–Pin 1989, Thérien–Weiss 1985); checked on maximal idempotents, one per D-class, as
  a·b·c = c·b·a for a, c ∈ eSf, b ∈ fSe.

The local tests read e·M and M·f off the multiplication table (built lookup-free from the Cayley
graphs, :meth:`TransitionMonoid.multiplication_table`) when m² ≤ MULT_TABLE_MAX_ENTRIES, else row by
row from the Cayley graphs; :meth:`Context.maximal_idempotent_reps` proves the D-class reduction.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components

from .automaton import DFA
from .errors import LimitExceeded
from .lattice import CLASS_INFO
from .limits import DEFAULT_LIMITS, Deadline, Limits
from .monoid import TransitionMonoid

__all__ = [
    "ClassResult",
    "Context",
    "DECIDERS",
    "decide_ltl_p",
    "decide_ltl_p_mod",
    "decide_ltl_p_y",
    "decide_star_free",
    "decide_stutter_invariant",
    "decide_fo2",
    "decide_fo2_mod",
    "decide_fo_mod",
    "decide_piecewise_testable",
    "decide_locally_testable",
    "decide_locally_threshold_testable",
    "decide_group",
    "qr_witness_words",
    "replay",
    "ltl_p_y_delay",
    "monoid_extras",
    "LTT_WORK_BUDGET",
    "HASSE_MAX_STATES",
]

LTT_WORK_BUDGET = 400_000_000
"""Entries compared when checking the Beauquier–Pin identity (or commutativity of eSe) exhaustively
(one per product with the multiplication table, n per product on transformations without it);
beyond it the answer is unknown (``LimitExceeded``)."""

HASSE_MAX_STATES = 64
"""The Hasse diagram of A_k is included in LTL[P,MOD] certificates up to this many states (and k·n ≤ 4096)."""

MULT_TABLE_MAX_ENTRIES = 16_000_000
"""The algebraic tests use the full multiplication table (int32, 64 MB at the cap) when m² is at most this."""

CERT_LIST_MAX = 1000
"""Lists in certificates (state orders, components) are cut at this length (``"truncated": true``)."""


def _wl(word) -> list[str]:
    return [str(s) for s in word]


@dataclass(frozen=True)
class ClassResult:
    """The decision for one class.

    Attributes:
        key: class key (see :data:`langclass.core.lattice.CLASS_INFO`).
        member: ``True``/``False``, or ``None`` when a limit prevented the decision.
        reason: one human-readable line.
        certificate: JSON-ready evidence for the answer (for members: what was checked; for
            non-members the witness is repeated in ``witness``).
        witness: JSON-ready counterexample when ``member`` is ``False``, else ``None``.
        source: paper/theorem of the characterization used.
        method: ``"automaton"``, ``"monoid"`` or ``"lattice"`` (implied by another answer).
        period: least k for ``ltl_p_mod`` members, else ``None``.
        error: the limit error (``LangclassError.to_dict()``) when ``member`` is ``None``.
    """

    key: str
    member: bool | None
    reason: str
    certificate: dict[str, Any] | None
    witness: dict[str, Any] | None
    source: str
    method: str
    period: int | None = None
    error: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        info = CLASS_INFO[self.key]
        out: dict[str, Any] = {
            "key": self.key,
            "name": info.name,
            "logic": info.logic,
            "algebra": info.algebra,
            "member": self.member,
            "reason": self.reason,
            "certificate": self.certificate,
            "witness": self.witness,
            "source": self.source,
            "method": self.method,
        }
        if self.key == "ltl_p_mod":
            out["period"] = self.period
        if self.error is not None:
            out["error"] = self.error
        return out


# ============================================================================ context


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

    def check_time(self, step: str) -> None:
        if self.deadline is not None:
            self.deadline.check(step)

    # --------------------------------------------------------------- graph
    @cached_property
    def scc(self) -> np.ndarray:
        """Component id of every state (scipy strong components, arbitrary but fixed ids)."""
        n, k = self.n, self.k
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
            scipy's C BFS: O(n·|Σ|).
        """
        n, k = self.n, self.k
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

    def context_for(self, t1: np.ndarray, t2: np.ndarray) -> dict[str, Any]:
        """Words u, v and a state q showing that two transformations are different elements:
        exactly one of u·w₁·v and u·w₂·v is accepted (w₁, w₂ any words of t1, t2)."""
        diff = np.flatnonzero(np.asarray(t1) != np.asarray(t2))
        assert diff.size, "the transformations are equal"
        q = int(diff[0])
        u = self.access_word(q)
        v = self.separating_word(int(t1[q]), int(t2[q]))
        return {"state": q, "prefix": _wl(u), "suffix": _wl(v),
                "first_accepted": bool(self.dfa.accepting[int(self.dfa.run(v, int(t1[q])))])}

    def element_context(self, x: int, y: int) -> dict[str, Any]:
        M = self.monoid
        return self.context_for(M.elements[x].astype(np.int64), M.elements[y].astype(np.int64))

    # --------------------------------------------------------------- monoid helpers
    @cached_property
    def semigroup_idempotents(self) -> np.ndarray:
        M = self.monoid
        return np.flatnonzero(M.idempotent & M.in_semigroup)

    @cached_property
    def mult_table(self) -> np.ndarray | None:
        """The multiplication table ``[m, m]`` of the monoid (x·y at ``[x, y]``) when m² ≤
        :data:`MULT_TABLE_MAX_ENTRIES`, else ``None`` (rows and columns are then computed on demand)."""
        M = self.monoid
        if M.size * M.size > MULT_TABLE_MAX_ENTRIES:
            return None
        return M.multiplication_table(self.deadline, MULT_TABLE_MAX_ENTRIES)

    def left_rows(self, xs) -> np.ndarray:
        """``[len(xs), m]`` integer ids of xs[i]·y for every element y (table rows, or the right Cayley graph)."""
        T = self.mult_table
        xs = np.asarray(xs, dtype=np.int64).reshape(-1)
        return T[xs] if T is not None else self.monoid.left_multiples(xs, self.deadline)

    def right_cols(self, ys) -> np.ndarray:
        """``[m, len(ys)]`` integer ids of x·ys[j] for every element x (table columns, or the left Cayley graph)."""
        T = self.mult_table
        ys = np.asarray(ys, dtype=np.int64).reshape(-1)
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
        srt = np.sort(M.elements[E], axis=1)
        rank = 1 + (srt[:, 1:] != srt[:, :-1]).sum(axis=1)  # |im e|
        # e < f ⇒ |im e| < |im f|: idempotents of one rank are incomparable, so a rank level is compared
        # at once with the maximal idempotents of the higher ranks (rows e·M and columns M·e of the
        # multiplication table, or from the Cayley graphs: O(|E|·m) in all).
        found: list[np.ndarray] = []
        chunk = max(1, 4_000_000 // max(1, M.size))
        for rk in sorted(set(rank.tolist()), reverse=True):
            self.check_time("maximal idempotents")
            lev = E[rank == rk]
            if found:
                F = np.concatenate(found)
                keep = np.ones(lev.size, dtype=bool)
                for c0 in range(0, lev.size, chunk):
                    self.check_time("maximal idempotents")
                    sub = lev[c0:c0 + chunk]
                    ef = self.left_rows(sub)[:, F]  # [c, |F|]: e·f
                    fe = self.right_cols(sub)[F, :].T  # [c, |F|]: f·e
                    below = (ef == sub[:, None]) & (fe == sub[:, None])
                    keep[c0:c0 + sub.size] = ~below.any(axis=1)  # e = e·f = f·e for no maximal f
                lev = lev[keep]
            found.append(lev)
        return np.concatenate(found).astype(np.int64)

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
        m = self.monoid.size
        ar = np.arange(m)
        lm = np.ones((es.size, m), dtype=bool)  # the identity (element 0): 1·M = M·1 = M
        rm = np.ones((es.size, m), dtype=bool)
        todo = np.flatnonzero(es != 0)
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


def _sword(M: TransitionMonoid, x: int) -> tuple[str, ...]:
    """A nonempty word for an element of the semigroup η(Σ⁺) (the identity's is ``identity_word_plus``)."""
    return M.identity_word_plus if int(x) == 0 else M.word(x)


def _result(key: str, member: bool | None, reason: str, certificate=None, witness=None, method="monoid", **kw) -> ClassResult:
    return ClassResult(key, member, reason, certificate, witness, CLASS_INFO[key].source, method, **kw)


def _states(xs) -> list[int]:
    return [int(x) for x in xs]


def _truncate(lst: list, limit: int = CERT_LIST_MAX) -> tuple[list, bool]:
    return (lst[:limit], True) if len(lst) > limit else (lst, False)


# ============================================================================ automaton tests


def decide_ltl_p(ctx: Context) -> ClassResult:
    """LTL[P] ⇔ the minimal DFA is partially ordered (Brzozowski & Fich 1980; RoPE paper Table 3)."""
    comp, sizes = ctx.scc, ctx.scc_sizes
    big = sizes[comp] > 1
    if not big.any():
        order = _topological_order(ctx)
        lst, cut = _truncate(order)
        cert = {"topological_order": lst, "truncated": cut,
                "check": "every transition p→q with p ≠ q goes forward in topological_order"}
        return _result("ltl_p", True,
                       "every strongly connected component of the minimal DFA is a single state (only self-loops), "
                       "so it is partially ordered", cert, None, "automaton")
    p = int(np.flatnonzero(big)[0])
    same = comp[ctx.t[p]] == comp[p]
    cand = [(a, int(r)) for a, r in enumerate(ctx.t[p].tolist()) if same[a] and r != p]
    a, q = cand[0]
    u = (ctx.dfa.alphabet[a],)
    v = ctx.path(q, p, comp == comp[p])
    wit = {"p": p, "q": q, "u": _wl(u), "v": _wl(v)}
    return _result("ltl_p", False,
                   f"states {p} and {q} of the minimal DFA are mutually reachable (u = {_show(u)}: {p}→{q}, "
                   f"v = {_show(v)}: {q}→{p}), so it is not partially ordered", wit, wit, "automaton")


def _topological_order(ctx: Context) -> list[int]:
    n = ctx.n
    tl = ctx.t.tolist()
    succ = [sorted({r for r in row if r != q}) for q, row in enumerate(tl)]
    indeg = [0] * n
    for s in succ:
        for r in s:
            indeg[r] += 1
    ready = deque(q for q in range(n) if indeg[q] == 0)
    out = []
    while ready:
        q = ready.popleft()
        out.append(q)
        for r in succ[q]:
            indeg[r] -= 1
            if indeg[r] == 0:
                ready.append(r)
    assert len(out) == n, "a partially ordered DFA has an acyclic transition graph (self-loops aside)"
    return out


def _in_component_distinct_successors(ctx: Context) -> np.ndarray:
    comp, t = ctx.scc, ctx.t
    same = comp[t] == comp[:, None]
    S = np.where(same, t, -1)
    S.sort(axis=1)
    distinct = (S[:, 0] >= 0).astype(np.int64)
    if S.shape[1] > 1:
        distinct += ((S[:, 1:] != S[:, :-1]) & (S[:, 1:] >= 0)).sum(axis=1)
    return distinct


def decide_ltl_p_mod(ctx: Context) -> ClassResult:
    """LTL[P,MOD] ⇔ QR ⇔ ∃k: A_k partially ordered over all states ("Disentangling the Expressivity of RoPE",
    Thm 3.3, Def. A.7/A.8), decided in linear time: every SCC of the minimal DFA is a single state or a
    simple cycle; the least k is the lcm of the cycle lengths (k works iff it is a multiple of each).

    Why: a word of length k stays in an SCC only by moving k steps along it; on a simple cycle of
    length L that is the identity iff L | k. If a state r of an SCC has two distinct successors
    s₁ ≠ s₂ in it, both lie at the same level modulo the SCC's period d, and words of every large
    length ≡ 0 (mod lcm(d, k)) lead s₁ to s₂ and back, so no A_k is partially ordered.
    """
    comp, sizes = ctx.scc, ctx.scc_sizes
    distinct = _in_component_distinct_successors(ctx)
    bad = (sizes[comp] >= 2) & (distinct >= 2)
    if not bad.any():
        cycles = []
        k = 1
        seen: set[int] = set()
        for q in range(ctx.n):
            c = int(comp[q])
            if sizes[c] < 2 or c in seen:
                continue
            seen.add(c)
            cyc = [q]
            r = q
            while True:
                nxt = [int(x) for x in ctx.t[r] if comp[x] == c]
                r = nxt[0]
                if r == q:
                    break
                cyc.append(r)
            assert len(cyc) == sizes[c]
            cycles.append({"states": cyc, "length": len(cyc)})
            k = k * len(cyc) // math.gcd(k, len(cyc))
        cycles_cut, cut = _truncate(cycles)
        cert: dict[str, Any] = {"k": k, "cycles": cycles_cut, "truncated": cut,
                                "check": "every strongly connected component is one state or the listed simple cycle"}
        if ctx.n <= HASSE_MAX_STATES and k * ctx.n <= 4096:
            cert["hasse"] = _k_automaton_hasse(ctx, k)
        if cycles:
            lens = sorted({c["length"] for c in cycles})
            comps = ", ".join("{" + ", ".join(map(str, c["states"])) + "}" for c in cycles[:3])
            more = "" if len(cycles) <= 3 else f" (and {len(cycles) - 3} more)"
            reason = (f"every strongly connected component of the minimal DFA is a single state or a simple cycle "
                      f"({comps}{more} of lengths {lens}), so A_{k} is partially ordered (k = lcm = {k})")
        else:
            reason = "the minimal DFA is partially ordered, so A_1 = A is (k = 1)"
        return _result("ltl_p_mod", True, reason, cert, None, "automaton", period=k)
    r = int(np.flatnonzero(bad)[0])
    c = int(comp[r])
    succ = [(a, int(x)) for a, x in enumerate(ctx.t[r].tolist()) if comp[x] == c]
    (a1, s1) = succ[0]
    (a2, s2) = next((a, x) for a, x in succ if x != s1)
    wit = _qr_witness(ctx, c, s1, s2)
    wit["branch"] = {"state": r, "letters": [ctx.dfa.alphabet[a1], ctx.dfa.alphabet[a2]], "successors": [s1, s2]}
    members = np.flatnonzero(comp == c)
    reason = (f"state {r} has two successors {s1} ≠ {s2} inside its strongly connected component "
              f"(of {members.size} states, period {wit['period']}), so {s1} and {s2} are mutually reachable by "
              f"words of length ≡ 0 mod every k: no A_k is partially ordered")
    return _result("ltl_p_mod", False, reason, wit, wit, "automaton")


def _qr_witness(ctx: Context, c: int, p: int, q: int) -> dict[str, Any]:
    allowed = ctx.scc == c
    alpha = ctx.dfa.alphabet
    n, k = ctx.n, ctx.k
    pf, lf, of = ctx.bfs(p, allowed)
    pb, lb, ob = ctx.bfs(p, allowed, reverse=True)

    def levels(pred: np.ndarray, order: np.ndarray) -> np.ndarray:
        dist = np.full(n, -1, dtype=np.int64)
        dist[order[0]] = 0
        dl, pl = dist.tolist(), pred.tolist()
        for v in order[1:].tolist():
            dl[v] = dl[pl[v]] + 1
        return np.asarray(dl, dtype=np.int64)

    dist, bdist = levels(pf, of), levels(pb, ob)
    rows = np.repeat(np.arange(n), k)
    lets = np.tile(np.arange(k), n)
    cols = ctx.t.ravel()
    keep = allowed[rows] & allowed[cols]
    ex, ea, ey = rows[keep], lets[keep], cols[keep]
    d = int(np.gcd.reduce(np.abs(dist[ex] + 1 - dist[ey])))
    u = ctx.tree_word(pf, lf, q, p)  # shortest p → q
    v = ctx.tree_word(pb, lb, q, p, reverse=True)  # shortest q → p
    assert len(u) % d == 0 and len(v) % d == 0
    loops = [u + v]
    g = len(u) + len(v)
    if g != d:
        for x, a, y, length in zip(ex.tolist(), ea.tolist(), ey.tolist(), (dist[ex] + 1 + bdist[ey]).tolist()):
            if math.gcd(g, length) < g:
                g = math.gcd(g, length)
                loops.append(ctx.tree_word(pf, lf, x, p) + (alpha[a],) + ctx.tree_word(pb, lb, y, p, reverse=True))
                if g == d:
                    break
    assert g == d, "the edge loops through p have gcd equal to the component's period"
    return {"p": p, "q": q, "period": d, "u": _wl(u), "v": _wl(v), "loops": [_wl(w) for w in loops],
            "check": "u: p→q and v: q→p with |u|, |v| ≡ 0 (mod period); the loops at p have lengths of gcd = period, "
                     "so for every k some u·(loops) and v·(loops) have lengths ≡ 0 (mod k): p, q are mutually "
                     "reachable in A_k (see qr_witness_words)"}


def qr_witness_words(witness: dict[str, Any], k: int) -> tuple[list[str], list[str]]:
    """Words u_k: p→q and v_k: q→p of lengths divisible by k from an LTL[P,MOD] witness.

    u_k = (loops at p)·u and v_k = v·(loops at p), the loop multiplicities solving
    |u| + Σ cᵢ|ℓᵢ| ≡ 0 (mod k) (solvable because gcd(|ℓᵢ|) = period divides |u| and |v|).

    Raises:
        ValueError: k < 1.
    """
    if k < 1:
        raise ValueError("k must be ≥ 1")
    loops = [list(w) for w in witness["loops"]]

    def pad(length: int) -> list[str]:
        target = (-length) % k
        prev: dict[int, tuple[int, int] | None] = {0: None}
        dq = deque([0])
        while dq and target not in prev:
            r = dq.popleft()
            for i, lp in enumerate(loops):
                s = (r + len(lp)) % k
                if s not in prev:
                    prev[s] = (r, i)
                    dq.append(s)
        assert target in prev
        out: list[str] = []
        r = target
        while prev[r] is not None:
            r0, i = prev[r]
            out = loops[i] + out
            r = r0
        return out

    u, v = list(witness["u"]), list(witness["v"])
    return pad(len(u)) + u, v + pad(len(v))


def _k_automaton_hasse(ctx: Context, k: int) -> list[list[int]]:
    """Covering pairs [p, q] (p < q) of the partial order of A_k: q reachable from p by words of length ≡ 0 mod k."""
    from .graph import k_step_successors

    n = ctx.n
    R = k_step_successors(ctx.t, k) | np.eye(n, dtype=bool)
    reach = R.copy()
    for _ in range(max(1, int(math.ceil(math.log2(max(n, 2)))) + 1)):
        reach = (reach.astype(np.float64) @ reach.astype(np.float64)) > 0
    strict = reach & ~np.eye(n, dtype=bool)
    assert not (strict & strict.T).any(), "A_k is partially ordered"
    cover = strict & ~((strict.astype(np.float64) @ strict.astype(np.float64)) > 0)
    return [[int(p), int(q)] for p, q in np.argwhere(cover).tolist()]


def decide_stutter_invariant(ctx: Context) -> ClassResult:
    """Stutter-invariant ⇔ η(a) = η(aa) ⇔ δ(δ(q,a),a) = δ(q,a) for all q, a (minimal DFA; Peled & Wilke 1997)."""
    t = ctx.t
    once = t
    twice = np.take_along_axis(t[t], np.arange(ctx.k)[None, :, None], axis=2)[:, :, 0]  # δ(δ(q,a),a)
    bad = once != twice
    if not bad.any():
        return _result("stutter_invariant", True,
                       "δ(δ(q,a),a) = δ(q,a) for every state q and letter a, so doubling a letter never changes membership",
                       {"pairs_checked": int(ctx.n * ctx.k)}, None, "automaton")
    q, a = (int(x) for x in np.argwhere(bad)[0])
    sym = ctx.dfa.alphabet[a]
    u = ctx.access_word(q)
    v = ctx.separating_word(int(once[q, a]), int(twice[q, a]))
    in1 = ctx.dfa.accepts(u + (sym,) + v)
    wit = {"u": _wl(u), "a": sym, "v": _wl(v), "state": q, "uav_accepted": bool(in1), "uaav_accepted": not in1}
    return _result("stutter_invariant", False,
                   f"u·a·v and u·a·a·v differ (u = {_show(u)}, a = {sym}, v = {_show(v)}): "
                   f"{'only the first' if in1 else 'only the second'} is accepted",
                   wit, wit, "automaton")


def decide_group(ctx: Context) -> ClassResult:
    """Group language ⇔ every letter permutes the states of the minimal DFA."""
    t = ctx.t
    for a in range(ctx.k):
        col = t[:, a]
        if np.unique(col).size != ctx.n:
            vals, counts = np.unique(col, return_counts=True)
            r = int(vals[counts > 1][0])
            p, q = (int(x) for x in np.flatnonzero(col == r)[:2])
            wit = {"letter": ctx.dfa.alphabet[a], "states": [p, q], "image": r}
            return _result("group", False,
                           f"letter {ctx.dfa.alphabet[a]} maps states {p} and {q} both to {r}, so it is not a permutation",
                           wit, wit, "automaton")
    return _result("group", True, "every letter permutes the states of the minimal DFA, so the syntactic monoid is a group",
                   {"letters": list(ctx.dfa.alphabet)}, None, "automaton")


# ============================================================================ monoid tests


def _need_monoid(ctx: Context) -> TransitionMonoid:
    if ctx.monoid is None:
        raise ValueError("this decision needs the transition monoid")
    return ctx.monoid


def _counter_from_element(ctx: Context, x: int) -> dict[str, Any]:
    """A counter: state q and m ≥ 2 with q·w^m = q ≠ q·w, w the word of x (x^{ω+1} ≠ x^ω)."""
    M = ctx.monoid
    ex = M.elements[x].astype(np.int64)
    w = M.elements[M.idempotent_of_group(x)].astype(np.int64)
    img = np.unique(w)
    moved = img[ex[img] != img]
    q = int(moved[0])
    cyc = [q]
    r = int(ex[q])
    while r != q:
        cyc.append(r)
        r = int(ex[r])
    return {"word": _wl(M.word(x)), "state": q, "m": len(cyc), "cycle": cyc, "prefix": _wl(ctx.access_word(q)),
            "check": "q·w ≠ q and q·w^m = q"}


def decide_star_free(ctx: Context) -> ClassResult:
    """Star-free = FO[<] = LTL[S] ⇔ the syntactic monoid is aperiodic (Schützenberger 1965)."""
    M = _need_monoid(ctx)
    viol = M.nontrivial_group_elements
    if not viol.any():
        # the least N with x^N = x^{N+1} for all x; an element stays stable once it is, so only the
        # elements not yet stable are carried to the next power
        T = ctx.mult_table
        N = 1
        active = np.arange(M.size)
        if T is not None:  # on element ids: P[i] = active[i]^N
            P = active.copy()
            while True:
                ctx.check_time("star-free")
                PX = T[P, active]
                moving = PX != P
                if not moving.any():
                    break
                active, P = active[moving], PX[moving]
                N += 1
        else:  # x^{N+1} = x^N·x by reading x's word on the right Cayley graph (no transformations)
            P = active.copy()
            while True:
                ctx.check_time("star-free")
                PX = M.multiply_many(P, active)
                moving = PX != P
                if not moving.any():
                    break
                active, P = active[moving], PX[moving]
                N += 1
        return _result("star_free", True,
                       f"the syntactic monoid ({M.size} elements) is aperiodic: x^{N} = x^{N + 1} for every element x",
                       {"monoid_size": M.size, "aperiodicity_index": N}, None)
    x = int(np.flatnonzero(viol)[0])
    wit = _counter_from_element(ctx, x)
    return _result("star_free", False,
                   f"the word {_show(M.word(x))} is a counter: from state {wit['state']} it cycles with period {wit['m']} "
                   f"({' → '.join(map(str, wit['cycle']))}), so the monoid contains the group Z{wit['m']}",
                   wit, wit)


def _idempotent_in_R(M: TransitionMonoid, z: int) -> int:
    """An idempotent R-equivalent to z, preferring one in z's H-class (z regular)."""
    if M.group_element[z]:
        H = M.green["H"]
        return int(np.flatnonzero((H == H[z]) & M.idempotent)[0])
    R = M.green["R"]
    return int(np.flatnonzero((R == R[z]) & M.idempotent)[0])


def _da_witness(ctx: Context, z: int, stable: bool) -> dict[str, Any]:
    """x, y with (xy)^ω x (xy)^ω ≠ (xy)^ω from a regular non-idempotent z (x = z, xy = e idempotent in R_z)."""
    M = ctx.monoid
    e = _idempotent_in_R(M, z)
    zp_word = M.right_path(z, e)
    zp = M.element_of_word(zp_word)
    if stable:
        s = M.stability_index
        y = zp
        # y = (z'z)^{s-1} z' ∈ T and z·y = e
        y = M.product(*([zp, z] * (s - 1) + [zp]))
    else:
        y = zp
    xy = M.multiply(z, y)
    assert xy == e and M.idempotent[e]
    lhs = M.product(e, z, e)
    assert lhs != e
    xw = M.stable_word(z) if stable else M.word(z)
    yw = M.stable_word(y) if stable else M.word(y)
    return {"x": _wl(xw), "y": _wl(yw), "omega": 1, "xy_omega": _wl(M.word(e)), "lhs": _wl(M.word(lhs)),
            "context": ctx.element_context(lhs, e),
            "check": "(xy)^ω·x·(xy)^ω ≠ (xy)^ω: prefix·lhs·suffix and prefix·xy_omega·suffix differ in membership"
                     + (" (x and y have length s: they lie in the stable semigroup)" if stable else "")}


def decide_fo2(ctx: Context) -> ClassResult:
    """FO²[<] = LTL[P,F] ⇔ M ∈ DA ⇔ every regular element of M is idempotent (Thérien & Wilke 1998)."""
    M = _need_monoid(ctx)
    viol = M.regular & ~M.idempotent
    if not viol.any():
        return _result("fo2", True,
                       f"every regular element of the syntactic monoid is idempotent ({len(M.regular_d_classes)} regular "
                       "D-classes, each an aperiodic semigroup), so it is in DA",
                       {"regular_d_classes": len(M.regular_d_classes), "regular_elements": int(M.regular.sum())}, None)
    z = int(np.flatnonzero(viol)[0])
    wit = _da_witness(ctx, z, stable=False)
    return _result("fo2", False,
                   f"x = {_show(wit['x'])}, y = {_show(wit['y'])} violate (xy)^ω x (xy)^ω = (xy)^ω "
                   f"(x is regular but not idempotent), so the monoid is not in DA", wit, wit)


def decide_fo2_mod(ctx: Context) -> ClassResult:
    """FO²[<,MOD] ⇔ QDA: the stable semigroup T = η(Σ^s) is in DA (Dartois & Paperman 2013)."""
    M = _need_monoid(ctx)
    viol = M.stable & M.regular & ~M.idempotent
    s = M.stability_index
    if not viol.any():
        return _result("fo2_mod", True,
                       f"every regular element of the stable semigroup η(Σ^{s}) ({M.stable_size} elements) is idempotent, "
                       "so it is in DA", {"stability_index": s, "stable_semigroup_size": M.stable_size}, None)
    z = int(np.flatnonzero(viol)[0])
    wit = _da_witness(ctx, z, stable=True)
    wit["stability_index"] = s
    return _result("fo2_mod", False,
                   f"x = {_show(wit['x'])}, y = {_show(wit['y'])} in the stable semigroup η(Σ^{s}) violate "
                   "(xy)^ω x (xy)^ω = (xy)^ω, so it is not in DA", wit, wit)


def decide_fo_mod(ctx: Context) -> ClassResult:
    """FO[<,MOD] (regular ∩ AC⁰) ⇔ quasi-aperiodic: T = η(Σ^s) has only trivial groups
    (Barrington, Compton, Straubing & Thérien 1992)."""
    M = _need_monoid(ctx)
    s = M.stability_index
    viol = M.nontrivial_group_elements & M.stable
    if not viol.any():
        return _result("fo_mod", True,
                       f"the stable semigroup η(Σ^{s}) ({M.stable_size} elements, s = {s}) contains no non-trivial group",
                       {"stability_index": s, "stable_semigroup_size": M.stable_size}, None)
    x = int(np.flatnonzero(viol)[0])
    wit = _counter_from_element(ctx, x)
    wit["word"] = _wl(M.stable_word(x))
    wit["stability_index"] = s
    e = M.idempotent_of_group(x)
    g = M.maximal_subgroup(e, within=M.stable)
    wit["group"] = g.to_dict()
    wit["group"]["generator_words"] = [_wl(M.stable_word(h)) for h in g.generators]
    return _result("fo_mod", False,
                   f"the stable semigroup η(Σ^{s}) contains η({_show(wit['word'])}), which generates a cyclic group of "
                   f"order {wit['m']} (inside {g.name}), so the language is not in AC⁰", wit, wit)


def decide_piecewise_testable(ctx: Context) -> ClassResult:
    """Piecewise testable ⇔ M is J-trivial (Simon 1975)."""
    M = _need_monoid(ctx)
    g = M.green
    for rel, pathfn in (("R", M.right_path), ("L", M.left_path)):
        lab = g[rel]
        counts = np.bincount(lab)
        if (counts > 1).any():
            c = int(np.flatnonzero(counts > 1)[0])
            x, y = (int(v) for v in np.flatnonzero(lab == c)[:2])
            u, v = pathfn(x, y), pathfn(y, x)
            side = "x·u = y and y·v = x" if rel == "R" else "u·x = y and v·y = x"
            wit = {"relation": rel, "x": _wl(M.word(x)), "y": _wl(M.word(y)), "u": _wl(u), "v": _wl(v),
                   "context": ctx.element_context(x, y), "check": side + ", yet x ≠ y"}
            return _result("piecewise_testable", False,
                           f"η({_show(M.word(x))}) ≠ η({_show(M.word(y))}) are {rel}-equivalent ({side}), "
                           "so the monoid is not J-trivial", wit, wit)
    return _result("piecewise_testable", True,
                   f"all {M.size} J-classes of the syntactic monoid are singletons (J-trivial)",
                   {"j_classes": M.size}, None)


def decide_ltl_p_y(ctx: Context) -> ClassResult:
    """LTL[P,Y] ⇔ η(Σ⁺) is locally R-trivial: for every idempotent e, eSe is R-trivial.

    Checked on one maximal idempotent per D-class (e' ≤ e ⇒ e'Se' ⊆ eSe; eSe ≅ e'Se' when e D e',
    see :attr:`Context.maximal_idempotent_reps`); R on eSe is R on M restricted (x = y·m ⇒ x = y·(e m e)).
    """
    M = _need_monoid(ctx)
    R = M.green["R"]
    nontriv = np.bincount(R)[R] > 1
    checked = []
    reps = ctx.maximal_idempotent_reps
    lm, rm = ctx.rep_masks
    for i, e in enumerate(reps.tolist()):
        ctx.check_time("LTL[P,Y]")
        mask = lm[i] & rm[i]
        ids = np.flatnonzero(mask & nontriv)
        checked.append({"e": _wl(_sword(M, e)), "eSe_size": int(mask.sum())})
        if ids.size:
            labs = R[ids]
            uniq, inv, counts = np.unique(labs, return_inverse=True, return_counts=True)
            if (counts > 1).any():
                c = int(np.flatnonzero(counts > 1)[0])
                x, y = (int(v) for v in ids[inv == c][:2])
                u, v = M.right_path(x, y), M.right_path(y, x)
                ew = _sword(M, e)
                wit = {"e": _wl(ew), "x": _wl(_sword(M, x)), "y": _wl(_sword(M, y)), "u": _wl(u), "v": _wl(v),
                       "context": ctx.element_context(x, y),
                       "check": "e is idempotent (from a nonempty word), e·x = x·e = x, e·y = y·e = y, x·u = y, y·v = x, x ≠ y"}
                return _result("ltl_p_y", False,
                               f"for the idempotent e = η({_show(ew)}), x = η({_show(_sword(M, x))}) and y = η({_show(_sword(M, y))}) "
                               "are distinct R-equivalent elements of eSe, so the syntactic semigroup is not locally R-trivial",
                               wit, wit)
    return _result("ltl_p_y", True,
                   f"eSe is R-trivial for a maximal idempotent e of each of the {len(checked)} D-classes of maximal "
                   "idempotents of the syntactic semigroup (hence for every idempotent), so it is locally R-trivial",
                   {"maximal_idempotents": checked[:CERT_LIST_MAX], "truncated": len(checked) > CERT_LIST_MAX}, None)


def decide_locally_testable(ctx: Context) -> ClassResult:
    """Locally testable ⇔ eSe is idempotent and commutative for every idempotent e of η(Σ⁺)
    (Brzozowski & Simon 1973; McNaughton 1974). Checked on one maximal idempotent per D-class
    (see :attr:`Context.maximal_idempotent_reps`).

    Raises:
        LimitExceeded: ``lt_commutativity_work`` when the pairs of some eSe exceed :data:`LTT_WORK_BUDGET`.
    """
    M = _need_monoid(ctx)
    T = ctx.mult_table
    X = M.elements.astype(np.intp)
    cost = 1 if T is not None else M.num_states  # entries compared per product
    checked = []
    reps = ctx.maximal_idempotent_reps
    lm, rm = ctx.rep_masks
    for i, e in enumerate(reps.tolist()):
        ctx.check_time("locally testable")
        ids = np.flatnonzero(lm[i] & rm[i])
        checked.append({"e": _wl(_sword(M, e)), "eSe_size": int(ids.size)})
        ew = _sword(M, e)
        if T is not None:
            sq = T[ids, ids]
            idem = sq == ids
        else:
            A = X[ids]
            idem = (np.take_along_axis(A, A, axis=1) == A).all(axis=1)
        if not idem.all():
            x = int(ids[np.flatnonzero(~idem)[0]])
            xx = M.multiply(x, x)
            wit = {"e": _wl(ew), "x": _wl(_sword(M, x)), "y": None, "kind": "not idempotent",
                   "context": ctx.element_context(xx, x), "check": "x ∈ eSe (e·x = x·e = x) but x·x ≠ x"}
            return _result("locally_testable", False,
                           f"x = η({_show(M.word(x))}) lies in eSe for e = η({_show(ew)}) but x·x ≠ x", wit, wit)
        r = ids.size
        if r * r * cost > LTT_WORK_BUDGET:
            raise LimitExceeded("lt_commutativity_work", LTT_WORK_BUDGET,
                                f"checking commutativity of eSe ({r} elements) needs {r * r * cost} comparisons")
        bad_pair = None
        if T is not None:
            chunk = max(1, 4_000_000 // max(1, r))
            for c0 in range(0, r, chunk):
                ctx.check_time("locally testable")
                sub = ids[c0:c0 + chunk]
                bad = T[np.ix_(sub, ids)] != T[np.ix_(ids, sub)].T  # x_i·x_j ≠ x_j·x_i
                if bad.any():
                    i0, j0 = (int(v) for v in np.argwhere(bad)[0])
                    bad_pair = (int(sub[i0]), int(ids[j0]))
                    break
        else:
            A = X[ids]
            chunk = max(1, 4_000_000 // max(1, r * M.num_states))
            for c0 in range(0, r, chunk):
                ctx.check_time("locally testable")
                sub = A[c0:c0 + chunk]  # [c, n]
                XY = A[np.arange(r)[None, :, None], sub[:, None, :]]  # [c, r, n]: x_i then x_j
                YX = sub[np.arange(sub.shape[0])[:, None, None], A[None, :, :]]  # x_j then x_i
                bad = ~(XY == YX).all(axis=2)
                if bad.any():
                    i0, j0 = (int(v) for v in np.argwhere(bad)[0])
                    bad_pair = (int(ids[c0 + i0]), int(ids[j0]))
                    break
        if bad_pair is not None:
            x, y = bad_pair
            xy, yx = M.multiply(x, y), M.multiply(y, x)
            wit = {"e": _wl(ew), "x": _wl(_sword(M, x)), "y": _wl(_sword(M, y)), "kind": "not commutative",
                   "context": ctx.element_context(xy, yx), "check": "x, y ∈ eSe but x·y ≠ y·x"}
            return _result("locally_testable", False,
                           f"x = η({_show(M.word(x))}) and y = η({_show(M.word(y))}) lie in eSe for e = η({_show(ew)}) "
                           "but do not commute", wit, wit)
    return _result("locally_testable", True,
                   f"eSe is an idempotent commutative monoid for a maximal idempotent e of each of the {len(checked)} "
                   "D-classes of maximal idempotents (hence for every idempotent)",
                   {"maximal_idempotents": checked[:CERT_LIST_MAX], "truncated": len(checked) > CERT_LIST_MAX}, None)


def decide_locally_threshold_testable(ctx: Context) -> ClassResult:
    """Locally threshold testable = FO[+1] ⇔ η(Σ⁺) aperiodic and e x f y e z f = e z f y e x f for all
    idempotents e, f (Beauquier & Pin 1989; Thérien & Weiss 1985), checked as a·b·c = c·b·a for
    a, c ∈ eSf and b ∈ fSe on maximal idempotents e, f (smaller ones give subsets of these), one per
    D-class (the identity holds at (e, f) iff at (e', f') for e D e', f D f'; see
    :attr:`Context.maximal_idempotent_reps`).

    Raises:
        LimitExceeded: ``ltt_identity_work`` when the exhaustive check exceeds :data:`LTT_WORK_BUDGET`.
    """
    M = _need_monoid(ctx)
    viol = M.nontrivial_group_elements
    if viol.any():
        x = int(np.flatnonzero(viol)[0])
        wit = _counter_from_element(ctx, x)
        wit["kind"] = "not aperiodic"
        return _result("locally_threshold_testable", False,
                       f"the syntactic semigroup is not aperiodic (the word {_show(M.word(x))} is a counter)", wit, wit)
    X = M.elements.astype(np.intp)
    n = M.num_states
    if M.identity_in_semigroup:
        # e = f = 1: the identity reads x y z = z y x on S = M, i.e. M commutative (y = 1), and a commutative
        # monoid satisfies it; commutativity is checked on the generators.
        gens = M.letter_ids.tolist()
        for i, a in enumerate(gens):
            for b in gens[i + 1:]:
                if M.multiply(a, b) != M.multiply(b, a):
                    ab, ba = M.multiply(a, b), M.multiply(b, a)
                    one = M.identity_word_plus
                    wit = {"e": _wl(one), "f": _wl(one), "x": _wl(M.word(a)), "y": _wl(one), "z": _wl(M.word(b)),
                           "kind": "identity", "context": ctx.element_context(ab, ba),
                           "check": "e x f y e z f ≠ e z f y e x f"}
                    return _result("locally_threshold_testable", False,
                                   f"with e = f = y = 1 (= η({_show(one)})), x = {_show(M.word(a))} and z = {_show(M.word(b))} "
                                   "do not commute", wit, wit)
        return _result("locally_threshold_testable", True,
                       "the syntactic semigroup contains 1 and is aperiodic and commutative", {"commutative": True}, None)
    T = ctx.mult_table
    cost = 1 if T is not None else n
    reps = ctx.maximal_idempotent_reps
    lm, rm = ctx.rep_masks
    lm = lm & M.in_semigroup[None, :]
    work = 0
    plan = []
    for i, e in enumerate(reps.tolist()):
        for j, f in enumerate(reps.tolist()):
            ctx.check_time("locally threshold testable")
            A = np.flatnonzero(lm[i] & rm[j])  # eSf
            B = np.flatnonzero(lm[j] & rm[i])  # fSe
            work += B.size * A.size * A.size * cost
            plan.append((e, f, A, B))
    if work > LTT_WORK_BUDGET:
        raise LimitExceeded("ltt_identity_work", LTT_WORK_BUDGET,
                            f"checking the Beauquier–Pin identity needs {work} comparisons (> {LTT_WORK_BUDGET})")
    for e, f, A, B in plan:
        ctx.check_time("locally threshold testable")
        if A.size == 0 or B.size == 0:
            continue
        found = None
        if T is not None:
            TA = T[:, A]  # [m, p]: y·c
            chunk = max(1, 4_000_000 // max(1, A.size * A.size))
            for c0 in range(0, B.size, chunk):
                ctx.check_time("locally threshold testable")
                Bc = B[c0:c0 + chunk]
                AB = T[np.ix_(A, Bc)]  # [p, q]: a·b
                L = TA[AB]  # [p, q, p]: (a·b)·c
                bad = L != L.transpose(2, 1, 0)
                if bad.any():
                    i0, q0, j0 = (int(v) for v in np.argwhere(bad)[0])
                    found = (int(A[i0]), int(Bc[q0]), int(A[j0]))
                    break
        else:
            XA = X[A]  # [p, n]
            for b in B.tolist():
                ctx.check_time("locally threshold testable")
                P = X[b][XA]  # a·b : [p, n]
                L = XA[np.arange(A.size)[None, :, None], P[:, None, :]]  # [a, c, n]: (a·b)·c
                bad = ~(L == L.transpose(1, 0, 2)).all(axis=2)
                if bad.any():
                    i0, j0 = (int(v) for v in np.argwhere(bad)[0])
                    found = (int(A[i0]), b, int(A[j0]))
                    break
        if found is not None:
            a, b, c = found
            lhs, rhs = M.product(a, b, c), M.product(c, b, a)
            wit = {"e": _wl(M.word(e)), "f": _wl(M.word(f)), "x": _wl(M.word(a)), "y": _wl(M.word(b)),
                   "z": _wl(M.word(c)), "kind": "identity", "context": ctx.element_context(lhs, rhs),
                   "check": "e x f y e z f ≠ e z f y e x f"}
            return _result("locally_threshold_testable", False,
                           f"e = η({_show(M.word(e))}), f = η({_show(M.word(f))}), x = {_show(M.word(a))}, "
                           f"y = {_show(M.word(b))}, z = {_show(M.word(c))} violate e x f y e z f = e z f y e x f",
                           wit, wit)
    return _result("locally_threshold_testable", True,
                   f"the syntactic semigroup is aperiodic and e x f y e z f = e z f y e x f holds for all "
                   f"{len(reps)}² pairs of maximal idempotents e, f taken one per D-class (hence for all idempotents)",
                   {"maximal_idempotents": len(ctx.maximal_idempotents), "d_class_representatives": len(reps),
                    "pairs_checked": len(plan)}, None)


# ============================================================================ extras and cross-checks


def monoid_extras(ctx: Context) -> dict[str, Any]:
    """Further algebraic facts (the ``extra`` block of the ground truth): L-triviality, definiteness,
    local L-triviality, the stable semigroup's R-triviality (QR, algebraic test) and local R-triviality."""
    M = _need_monoid(ctx)
    g = M.green
    R, L = g["R"], g["L"]
    E = ctx.semigroup_idempotents
    if ctx.mult_table is not None or E.size * M.num_states > 4 * M.size:  # letters' rows/columns: O(|Σ|·m)
        definite = bool((ctx.left_rows(M.letter_ids)[:, E] == E[None, :]).all())  # a·e = e
        reverse_definite = bool((ctx.right_cols(M.letter_ids)[E, :] == E[:, None]).all())  # e·a = e
    else:  # few idempotents: compose their transformations, O(|E|·n·|Σ|)
        X = M.elements.astype(np.intp)
        gens, EE = X[M.letter_ids], X[E]
        definite = all((EE[:, gens[a]] == EE).all() for a in range(gens.shape[0]))  # a·e = e
        reverse_definite = all((gens[a][EE] == EE).all() for a in range(gens.shape[0]))  # e·a = e
    nontriv_L = np.bincount(L)[L] > 1
    locally_l = True
    reps = ctx.maximal_idempotent_reps  # eSe ≅ e'Se' for e D e' (see Context.maximal_idempotent_reps)
    lm, rm = ctx.rep_masks
    for i in range(reps.size):
        ctx.check_time("extra facts")
        ids = np.flatnonzero(lm[i] & rm[i] & nontriv_L)
        if ids.size and np.unique(L[ids]).size < ids.size:
            locally_l = False
            break
    # QR by the stable semigroup: T is R-trivial iff no x ∈ T, x ≠ e, is R-equivalent to an idempotent e ∈ T
    T = M.stable
    idem_T = M.idempotent & T
    qr_alg = True
    Rcnt = np.bincount(R[T], minlength=int(R.max()) + 1)
    if (Rcnt[R[idem_T]] > 1).any():
        qr_alg = False
    # eTe R-trivial for idempotents e ∈ T: no two distinct M-regular elements of eTe are R-equivalent
    stable_lr = True
    # e' ≤ e ⇒ e'Te' ⊆ eTe, and E(T) = E(η(Σ⁺)) (e = η(w) ⇒ e = η(w^s)): maximal idempotents suffice
    # (all maximal idempotents here: the conjugating elements of a D-class need not lie in T)
    maxi = ctx.maximal_idempotents
    TR = T & M.regular
    chunk = max(1, 4_000_000 // max(1, M.size))
    for c0 in range(0, maxi.size, chunk):
        ctx.check_time("extra facts")
        lm, rm = ctx.fixed_masks(maxi[c0:c0 + chunk])
        rows, xs = np.nonzero(lm & rm & TR[None, :])  # x ∈ eMe ∩ T regular, for each e of the chunk
        keys = rows * (int(R.max()) + 1) + R[xs]
        if np.unique(keys).size < keys.size:  # two of them R-equivalent for the same e
            stable_lr = False
            break
    return {
        "l_trivial": bool(np.bincount(L).max() == 1),
        "r_trivial": bool(np.bincount(R).max() == 1),
        "definite": bool(definite),
        "reverse_definite": bool(reverse_definite),
        "locally_l_trivial": locally_l,
        "stable_semigroup_r_trivial": qr_alg,
        "stable_semigroup_locally_r_trivial": stable_lr,
        "identity_in_syntactic_semigroup": M.identity_in_semigroup,
    }


def ltl_p_y_delay(dfa: DFA, max_k: int | None = None, max_states: int = 200_000, *, min_k: int = 0,
                  deadline: Deadline | None = None) -> int | None:
    """The least k such that L is an LTL[P] property of the k-letter windows: L ∈ R ∗ D_k.

    Criterion: in the product B_k of the minimal DFA with the "last k letters" automaton (reachable
    part), no strongly connected component contains two pairs (p, x), (q, x) with the same window x
    and p ≠ q. (Sufficient: SCCs of B_k, read on window letters, form a partially ordered automaton
    from which the state of A and the window determine acceptance. Necessary: a partially ordered
    automaton over windows is constant on long loops, and equal states plus equal windows give equal
    futures, so p = q in the minimal DFA.) k = 0 is LTL[P] itself; such a k exists iff the syntactic
    semigroup is locally R-trivial (LR = R ∗ D), and this k is the largest Y-offset the
    conventional-RoPE construction needs ("Disentangling the Expressivity of RoPE", Cor 4.1).

    B_k is built breadth-first a whole frontier at a time in numpy: a window of at most k letters is
    the integer of its letters in base |Σ|+1 (digits 1..|Σ|, so shorter windows have leading zeros),
    reading a advances it to (x·(|Σ|+1) + a + 1) mod (|Σ|+1)^k, and a pair (q, x) is the key
    q·(|Σ|+1)^k + x; SCCs by scipy. Where the keys would not fit in 62 bits a dictionary BFS is used.

    Args:
        dfa: any DFA (minimized first).
        max_k: largest k tried (default: the number of states).
        max_states: cap on the states of B_k.
        min_k: smallest k tried (a caller that already ruled out k < min_k continues from there).
        deadline: optional deadline, checked per k and per BFS layer.

    Returns:
        the least k with min_k ≤ k ≤ max_k, or ``None`` if there is none (or the product grew past
        ``max_states``).

    Raises:
        TimeLimitExceeded: the deadline passed.
    """
    A = dfa.canonical()
    n, s = A.num_states, A.num_letters
    t = A.transitions.astype(np.int64)
    max_k = n if max_k is None else max_k
    for k in range(max(0, min_k), max_k + 1):
        if deadline is not None:
            deadline.check("LTL[P,Y] delay")
        W = (s + 1) ** k
        ok = _delay_ok_numpy(t, A.initial, k, W, max_states, deadline) if n * W < 1 << 62 else \
            _delay_ok_dict(t.tolist(), A.initial, k, max_states, deadline)
        if ok is None:
            return None
        if ok:
            return k
    return None


def _delay_ok_numpy(t: np.ndarray, initial: int, k: int, W: int, max_states: int,
                    deadline: Deadline | None) -> bool | None:
    """The B_k criterion of :func:`ltl_p_y_delay` with integer keys q·W + window; None past max_states."""
    n, s = t.shape
    base = s + 1
    letters = np.arange(s, dtype=np.int64)

    def succ(keys: np.ndarray) -> np.ndarray:  # [len(keys), s]
        q, x = np.divmod(keys, W)
        nx = (x[:, None] * base + letters[None, :] + 1) % W if k else np.zeros((keys.size, s), dtype=np.int64)
        return t[q] * W + nx

    seen = np.array([initial * W], dtype=np.int64)  # sorted
    frontier = seen
    while frontier.size:
        if deadline is not None:
            deadline.check("LTL[P,Y] delay")
        cand = np.unique(succ(frontier))
        pos = np.minimum(np.searchsorted(seen, cand), seen.size - 1)
        new = cand[seen[pos] != cand]  # sorted, unique, unseen
        if new.size + seen.size > max_states:
            return None
        seen = np.concatenate([seen, new])
        seen.sort(kind="stable")  # two sorted runs: a linear merge
        frontier = new
    N = seen.size
    dst = np.searchsorted(seen, succ(seen)).ravel()
    src = np.repeat(np.arange(N), s)
    g = csr_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(N, N))
    _, comp = connected_components(g, directed=True, connection="strong")
    q, x = np.divmod(seen, W)
    order = np.lexsort((q, x, comp))  # by SCC, then window, then state
    c, x, q = comp[order], x[order], q[order]
    same = (c[1:] == c[:-1]) & (x[1:] == x[:-1])
    return not (same & (q[1:] != q[:-1])).any()  # no SCC holds (p, x), (q, x) with p ≠ q


def _delay_ok_dict(t: list[list[int]], initial: int, k: int, max_states: int,
                   deadline: Deadline | None) -> bool | None:
    """The B_k criterion of :func:`ltl_p_y_delay` with tuple windows in a dictionary (any k)."""
    m = len(t[0])
    index: dict[tuple[int, tuple[int, ...]], int] = {(initial, ()): 0}
    states = [(initial, ())]
    src: list[int] = []
    dst: list[int] = []
    i = 0
    while i < len(states):
        if deadline is not None and i % 4096 == 0:
            deadline.check("LTL[P,Y] delay")
        q, x = states[i]
        for a in range(m):
            y = (x + (a,))[-k:] if k else ()
            key = (t[q][a], y)
            j = index.get(key)
            if j is None:
                j = index[key] = len(states)
                states.append(key)
                if len(states) > max_states:
                    return None
            src.append(i)
            dst.append(j)
        i += 1
    N = len(states)
    g = csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(N, N))
    _, comp = connected_components(g, directed=True, connection="strong")
    seen: dict[tuple[int, tuple[int, ...]], int] = {}
    for (q, x), c in zip(states, comp.tolist()):
        if seen.setdefault((c, x), q) != q:
            return False
    return True


# ============================================================================ replay


def replay(dfa: DFA, result: ClassResult | dict, monoid: TransitionMonoid | None = None) -> None:
    """Re-check a result's witness (and the checkable parts of its certificate) on the DFA.

    Every word is run on the minimal DFA; element identities are checked by comparing the
    transformations of words. Raises ``AssertionError`` on any mismatch.
    """
    A = dfa.canonical()
    d = result.to_dict() if isinstance(result, ClassResult) else result
    key, member = d["key"], d["member"]
    wit, cert = d.get("witness"), d.get("certificate")
    n = A.num_states

    def tr(word) -> np.ndarray:
        out = np.arange(n)
        for a in A.encode(word):
            out = A.transitions[out, a].astype(np.int64)
        return out

    def same(w1, w2) -> bool:
        return bool(np.array_equal(tr(w1), tr(w2)))

    def check_context(ctxd, w1, w2) -> None:
        u, v = ctxd["prefix"], ctxd["suffix"]
        a1 = A.accepts(list(u) + list(w1) + list(v))
        a2 = A.accepts(list(u) + list(w2) + list(v))
        assert a1 != a2 and a1 == ctxd["first_accepted"], "the separating context does not separate"

    def cat(*ws):
        out: list[str] = []
        for w in ws:
            out += list(w)
        return out

    def omega(w) -> list[str]:
        # the idempotent power of η(w): w^p for p = n!-free search on transformations
        x = tr(w)
        p, y = 1, x
        while not np.array_equal(y[y], y):
            y = x[y]
            p += 1
        return list(w) * p

    if member is None:
        return
    if d.get("method") == "lattice":
        # implied by another class's answer, whose own witness/certificate is replayed separately
        assert cert and cert.get("implied_by") in CLASS_INFO
        return
    if member is False:
        assert wit is not None, f"{key}: a non-member needs a witness"
    if key == "ltl_p" and member is False:
        p, q = wit["p"], wit["q"]
        assert p != q and A.run(wit["u"], p) == q and A.run(wit["v"], q) == p
    elif key == "ltl_p" and member:
        order = cert["topological_order"]
        if not cert["truncated"]:
            pos = {q: i for i, q in enumerate(order)}
            for q in range(n):
                for r in A.transitions[q].tolist():
                    assert r == q or pos[r] > pos[q]
    elif key == "ltl_p_mod" and member is False:
        p, q, d_ = wit["p"], wit["q"], wit["period"]
        assert p != q and A.run(wit["u"], p) == q and A.run(wit["v"], q) == p
        assert len(wit["u"]) % d_ == 0 and len(wit["v"]) % d_ == 0
        g = 0
        for lp in wit["loops"]:
            assert A.run(lp, p) == p
            g = math.gcd(g, len(lp))
        assert g == d_
        for k in range(1, 13):
            uk, vk = qr_witness_words(wit, k)
            assert len(uk) % k == 0 and len(vk) % k == 0 and A.run(uk, p) == q and A.run(vk, q) == p
    elif key == "ltl_p_mod" and member:
        k = d["period"]
        assert k == cert["k"]
        for c in cert["cycles"]:
            st = c["states"]
            for i, q in enumerate(st):
                nxt = st[(i + 1) % len(st)]
                assert nxt in A.transitions[q].tolist()
            assert k % c["length"] == 0
    elif key == "stutter_invariant" and member is False:
        u, a, v = wit["u"], wit["a"], wit["v"]
        assert A.accepts(cat(u, [a], v)) == wit["uav_accepted"]
        assert A.accepts(cat(u, [a, a], v)) == wit["uaav_accepted"] != wit["uav_accepted"]
    elif key == "group" and member is False:
        a = A.letter_index(wit["letter"])
        p, q = wit["states"]
        assert p != q and A.transitions[p, a] == A.transitions[q, a] == wit["image"]
    elif key in ("star_free", "fo_mod") or (key == "locally_threshold_testable" and wit and wit.get("kind") == "not aperiodic"):
        if member is False:
            w, q, m = wit["word"], wit["state"], wit["m"]
            assert m >= 2 and A.run(w, q) != q and A.run(list(w) * m, q) == q
            assert A.run(wit["prefix"]) == q
            if key == "fo_mod":
                assert len(w) == wit["stability_index"]
    elif key in ("fo2", "fo2_mod") and member is False:
        x, y = wit["x"], wit["y"]
        e = omega(cat(x, y))
        assert same(e, wit["xy_omega"])
        lhs = cat(e, x, e)
        assert same(lhs, wit["lhs"]) and not same(lhs, e)
        check_context(wit["context"], lhs, e)
        if key == "fo2_mod":
            s = wit["stability_index"]
            assert len(x) == s and len(y) == s
    elif key == "piecewise_testable" and member is False:
        x, y, u, v = wit["x"], wit["y"], wit["u"], wit["v"]
        if wit["relation"] == "R":
            assert same(cat(x, u), y) and same(cat(y, v), x)
        else:
            assert same(cat(u, x), y) and same(cat(v, y), x)
        check_context(wit["context"], x, y)
    elif key == "ltl_p_y" and member is False:
        e, x, y, u, v = wit["e"], wit["x"], wit["y"], wit["u"], wit["v"]
        assert len(e) > 0 and same(cat(e, e), e)
        for z in (x, y):
            assert same(cat(e, z), z) and same(cat(z, e), z)
        assert same(cat(x, u), y) and same(cat(y, v), x)
        check_context(wit["context"], x, y)
    elif key == "locally_testable" and member is False:
        e, x, y = wit["e"], wit["x"], wit["y"]
        assert len(e) > 0 and same(cat(e, e), e)
        assert same(cat(e, x), x) and same(cat(x, e), x)
        if wit["kind"] == "not idempotent":
            check_context(wit["context"], cat(x, x), x)
        else:
            assert same(cat(e, y), y) and same(cat(y, e), y)
            check_context(wit["context"], cat(x, y), cat(y, x))
    elif key == "locally_threshold_testable" and member is False:
        e, f, x, y, z = (wit[c] for c in "efxyz")
        assert len(e) > 0 and len(f) > 0 and same(cat(e, e), e) and same(cat(f, f), f)
        lhs, rhs = cat(e, x, f, y, e, z, f), cat(e, z, f, y, e, x, f)
        check_context(wit["context"], lhs, rhs)


def _show(word) -> str:
    if word is None:
        return "ε"
    word = list(word)
    if not word:
        return "ε"
    if all(len(s) == 1 for s in word):
        return "".join(word)
    return "·".join(word)


DECIDERS: dict[str, Callable[[Context], ClassResult]] = {
    "ltl_p": decide_ltl_p,
    "ltl_p_mod": decide_ltl_p_mod,
    "ltl_p_y": decide_ltl_p_y,
    "star_free": decide_star_free,
    "stutter_invariant": decide_stutter_invariant,
    "fo2": decide_fo2,
    "fo2_mod": decide_fo2_mod,
    "fo_mod": decide_fo_mod,
    "piecewise_testable": decide_piecewise_testable,
    "locally_testable": decide_locally_testable,
    "locally_threshold_testable": decide_locally_threshold_testable,
    "group": decide_group,
}
AUTOMATON_KEYS = ("ltl_p", "ltl_p_mod", "stutter_invariant", "group")


def find_counter_dfa(dfa: DFA, max_work: int = 50_000_000, max_length: int = 12) -> dict[str, Any] | None:
    """Search short words for a counter (q·w^m = q ≠ q·w, m ≥ 2) directly on the DFA, without the monoid.

    Words are tried in shortlex order (one per distinct transformation) until ``max_work`` state
    updates or ``max_length``. A counter proves the language is not star-free (McNaughton & Papert 1971);
    finding none proves nothing (aperiodicity is PSPACE-complete on DFAs, Cho & Huynh 1991).

    Returns:
        ``{"word", "state", "m", "cycle", "prefix"}`` or ``None``.
    """
    A = dfa.canonical()
    n, k = A.num_states, A.num_letters
    t = A.transitions.astype(np.int64)
    ctx = Context(A)
    seen = {np.arange(n).tobytes()}
    frontier = [(np.arange(n, dtype=np.int64), ())]
    work = 0
    logn = max(1, int(math.ceil(math.log2(max(n, 2)))))
    for _ in range(max_length):
        nxt = []
        for f, w in frontier:
            for a in range(k):
                g = t[f, a]
                key = g.tobytes()
                if key in seen:
                    continue
                seen.add(key)
                word = w + (A.alphabet[a],)
                # y = g^n lies on the cycles; g has a non-trivial cycle iff g moves some point of im y
                y = np.arange(n)
                base, p = g, n
                while p:
                    if p & 1:
                        y = base[y]
                    p >>= 1
                    if p:
                        base = base[base]
                work += n * (2 * logn + 2)
                img = np.unique(y)
                moved = img[g[img] != img]
                if moved.size:
                    q = int(moved[0])
                    cyc = [q]
                    r = int(g[q])
                    while r != q:
                        cyc.append(r)
                        r = int(g[r])
                    return {"word": _wl(word), "state": q, "m": len(cyc), "cycle": cyc,
                            "prefix": _wl(ctx.access_word(q)), "check": "q·w ≠ q and q·w^m = q"}
                nxt.append((g, word))
                if work > max_work:
                    return None
        frontier = nxt
        if not frontier:
            break
    return None
