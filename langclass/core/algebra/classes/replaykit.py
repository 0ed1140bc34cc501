"""What a replay needs: words run on the minimal DFA, the monoid enumerated again, and the classification's engines.

Element identities are decided by comparing the transformations of words on the DFA. A membership
is never taken from a certificate: :meth:`Checker.require_member` recomputes it with the class's own
decision procedure on the DFA, with the engines the classification uses (the
:class:`~langclass.core.algebra.monoid.TransitionMonoid` of
:func:`~langclass.core.algebra.monoid.transition_monoid`, the classification's
:class:`~langclass.core.algebra.classes.context.Context`, the
:class:`~langclass.core.algebra.orbits.OrbitEngine`), and the certificate's figures are compared
with the recomputed ones (:func:`same_figures`). Up to
:data:`~langclass.core.algebra.classes.evidence.CERT_MONOID_MAX` elements, :class:`WordMonoid` is
the syntactic monoid enumerated again on the DFA by the replay's own loop (:meth:`Checker.closure`:
breadth-first, shortlex-least words) — a certificate's
:class:`~langclass.core.algebra.classes.evidence.MonoidWords` must be exactly that tree — and the
property is also checked by its definition on it; larger monoids (no certificate lists their
words) are read from the classification's enumeration. Everything stated (s, |η(Σ^s)|, counts of
regular elements and classes) is recomputed here by the definitions: Green's R, L and J as strong
components of the right, left and two-sided Cayley graphs, x regular iff its R-class holds an
idempotent, the sets η(Σ^j) one after the other. Each replay is bounded: the closure by
``max_monoid_size``/``max_monoid_entries`` of its :class:`~langclass.core.base.limits.Limits`, the
rest by :data:`REPLAY_WORK` and the deadline; a replay over a bound raises
:class:`~langclass.core.base.errors.LimitExceeded` naming it (neither confirmed nor refuted).

Everything computed from the DFA alone (both monoids, the context, the orbit engine's kernels, the
decisions, the strong components) is kept per DFA in a small cache (:func:`checker_for`,
:data:`REPLAY_SESSIONS` DFAs), so replaying every answer of one language enumerates its monoid
once, as classifying it does.
"""

from __future__ import annotations

import linecache
import os
import threading
from collections import OrderedDict
from functools import cached_property
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import LimitExceeded
from langclass.core.base.limits import DEFAULT_LIMITS, Deadline, Limits
from .evidence import CERT_MONOID_MAX, MonoidWords, Separation

__all__ = ["Checker", "ReplayError", "WordMonoid", "REPLAY_WORK", "REPLAY_TABLE_ENTRIES", "REPLAY_SESSIONS",
           "checker_for", "clear_replay_cache", "same_figures"]

REPLAY_SESSIONS = 8
"""DFAs whose replay facts (the monoids, the orbit engine, strong components) are kept between
replays (least recently used first out)."""

REPLAY_WORK = 400_000_000
"""Transformation entries (or table entries) one replay may compute beyond the closure itself;
past it the replay raises ``LimitExceeded("replay_work")``."""

REPLAY_TABLE_ENTRIES = 16_000_000
"""A replay tabulates the multiplication (m² entries) only up to this many; larger monoids are
checked on transformations and Cayley graphs."""


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


def _scc_labels(succ: np.ndarray) -> np.ndarray:
    """Strong-component label ``[m]`` of the graph with edges x → succ[x, j] (scipy's C routine)."""
    m, k = succ.shape
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    g = csr_matrix((np.ones(m * k, dtype=np.int8), (np.repeat(np.arange(m), k), succ.ravel())), shape=(m, m))
    _, lab = connected_components(g, directed=True, connection="strong")
    return lab.astype(np.int64)


def _compose(first: np.ndarray, then: np.ndarray) -> np.ndarray:
    """Rows of transformations: ``first`` followed by ``then`` (q ↦ then[first[q]]), row by row."""
    return np.take_along_axis(then, first, axis=1)


class Checker:
    """Runs words on one canonical minimal DFA; a failed check raises :class:`ReplayError` (never a bare
    ``assert``, which ``python -O`` would strip).

    Args:
        dfa: any complete DFA (minimized here).
        limits: bounds of the closure (``max_monoid_size``, ``max_monoid_entries``) and the deadline.
        deadline: optional deadline checked by the long loops (default: one from ``limits``).
    """

    def __init__(self, dfa: DFA, limits: Limits = DEFAULT_LIMITS, deadline: Deadline | None = None, *,
                 shared: _Shared | None = None) -> None:
        self.A = dfa.canonical() if shared is None else shared.A
        self.n = self.A.num_states
        self.limits = limits
        self.deadline = deadline if deadline is not None else limits.deadline()
        self.work = 0
        self.shared = shared if shared is not None else _Shared(self.A)

    @property
    def _closure(self) -> WordMonoid | None:
        W = self.shared.closure
        if W is not None:
            W._chk = self  # the shared monoid charges this replay's work and checks its deadline
        return W

    def transition_monoid(self) -> Any:
        """The syntactic monoid enumerated by the classification's engine
        (:func:`~langclass.core.algebra.monoid.transition_monoid` on the DFA, this checker's limits
        and deadline), kept with the DFA's other replay facts.

        Raises:
            LimitExceeded: ``max_monoid_size`` / ``max_monoid_entries``; TimeLimitExceeded: the deadline.
        """
        if self.shared.monoid is None:
            from ..monoid import transition_monoid

            self.shared.monoid = transition_monoid(self.A, self.limits, deadline=self.deadline)
        return self.shared.monoid

    def orbit_engine(self) -> Any:
        """The :class:`~langclass.core.algebra.orbits.OrbitEngine` of :meth:`transition_monoid` (the
        classification's engine; its kernels are kept across replays of the DFA), on this checker's deadline."""
        if self.shared.engine is None:
            from langclass.core.algebra.orbits import OrbitEngine

            self.shared.engine = OrbitEngine(self.transition_monoid(), self.deadline)
        self.shared.engine.deadline = self.deadline
        return self.shared.engine

    def context(self) -> Any:
        """The classification's :class:`~langclass.core.algebra.classes.context.Context` of the DFA with
        :meth:`transition_monoid` (its lazily computed facts — maximal idempotents, the table — kept
        across replays of the DFA), on this checker's deadline."""
        if self.shared.context is None:
            from .context import Context

            self.shared.context = Context(self.A, self.transition_monoid(), self.limits, self.deadline)
        self.shared.context.deadline = self.deadline
        return self.shared.context

    def decided(self, key: str) -> Any:
        """The :class:`~langclass.core.algebra.classes.base.ClassResult` of class ``key`` recomputed on the
        DFA by the class's own decision procedure on :meth:`context` (kept per DFA and key).

        Raises:
            LimitExceeded / TimeLimitExceeded: the decision is over a bound (neither confirmed nor refuted).
        """
        got = self.shared.decided.get(key)
        if got is None:
            from .base import REGISTRY

            got = self.shared.decided[key] = REGISTRY[key].decide(self.context())
        return got

    def require_member(self, key: str) -> Any:
        """The recomputed :meth:`decided` result, which must be a membership.

        Raises:
            ReplayError: the language is not in the class (the message gives the recomputed reason)."""
        res = self.decided(key)
        if res.member is not True:
            from ..lattice import CLASS_INFO

            raise ReplayError(f"recomputed on the DFA by the class's decision procedure, the language is not in "
                              f"{CLASS_INFO[key].name}: {res.reason}")
        return res

    def small(self) -> bool:
        """The monoid has at most CERT_MONOID_MAX elements (certificates list its words): the replay then
        also checks the property by the definition on its own enumeration (:meth:`monoid`)."""
        return self.transition_monoid().size <= CERT_MONOID_MAX

    def scc(self) -> np.ndarray:
        """Strong-component label ``[n]`` of every state of the minimal DFA (scipy's C routine; kept)."""
        if self.shared.scc is None:
            self.shared.scc = _scc_labels(self.A.transitions.astype(np.int64))
        return self.shared.scc

    def spend(self, entries: int, step: str) -> None:
        """Count ``entries`` computed towards :data:`REPLAY_WORK` and check the deadline.

        Raises:
            LimitExceeded: ``replay_work`` (past :data:`REPLAY_WORK`); TimeLimitExceeded: the deadline.
        """
        self.work += int(entries)
        if self.work > REPLAY_WORK:
            raise LimitExceeded("replay_work", REPLAY_WORK,
                                f"replay_work={REPLAY_WORK} exceeded while {step} (needed at least {self.work})")
        self.deadline.check(f"replay: {step}")

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

    def omega_exponent(self, w) -> int:
        """The least p ≥ 1 with η(w)^p idempotent."""
        x = self.tr(w)
        p, y = 1, x
        while not np.array_equal(y[y], y):
            y = x[y]
            p += 1
        return p

    def omega(self, w) -> list[str]:
        """w^p for the least p ≥ 1 with η(w)^p idempotent."""
        return list(w) * self.omega_exponent(w)

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

    def closure_words(self) -> MonoidWords:
        """The transition monoid of the minimal DFA enumerated breadth-first (elements in the order
        found, letters in alphabet order), so each element's word is its shortlex-least one — the
        tree a :class:`MonoidWords` certificate lists (V. Froidure & J.-E. Pin, "Algorithms for
        computing finite semigroups", 1997).

        Raises:
            LimitExceeded: ``max_monoid_size`` or ``max_monoid_entries`` of the checker's limits.
        """
        return self.closure().words

    def closure(self) -> WordMonoid:
        """The syntactic monoid as a :class:`WordMonoid`, enumerated on the DFA (cached); see
        :meth:`closure_words`."""
        if self._closure is None and self.transition_monoid().size > CERT_MONOID_MAX:
            # no certificate lists the words of so large a monoid: the classification's enumeration
            # (same elements in the same shortlex order, its Cayley graphs) is the replay's
            M = self.transition_monoid()
            X = np.ascontiguousarray(M.elements, dtype=np.int64)
            mw = MonoidWords(tuple(M.parent[1:].tolist()), tuple(self.A.alphabet[int(a)] for a in M.last_letter[1:].tolist()))
            self.shared.closure = WordMonoid(self, mw, X, {r.tobytes(): i for i, r in enumerate(X)},
                                             cayley=(np.asarray(M.right, dtype=np.int64), np.asarray(M.left, dtype=np.int64)))
        if self._closure is None:
            A, n = self.A, self.n
            t = A.transitions.astype(np.int64)
            k = t.shape[1]
            cap = self.limits.max_monoid_size
            entry_cap = self.limits.max_monoid_entries
            rows = [np.arange(n, dtype=np.int64)]
            index = {rows[0].tobytes(): 0}
            parents: list[int] = []
            letters: list[int] = []
            start = 0
            while start < len(rows):
                end = len(rows)
                self.deadline.check("replay: the monoid's closure")
                F = np.stack(rows[start:end])  # [f, n]
                cand = t[F].transpose(0, 2, 1)  # [f, k, n]: x then letter a
                for i in range(end - start):
                    for a in range(k):
                        row = cand[i, a]
                        key = row.tobytes()
                        if key not in index:
                            index[key] = len(rows)
                            rows.append(row.copy())
                            parents.append(start + i)
                            letters.append(a)
                            if (cap is not None and len(rows) > cap) or (entry_cap is not None and len(rows) * n > entry_cap):
                                name = "max_monoid_size" if cap is not None and len(rows) > cap else "max_monoid_entries"
                                bound = getattr(self.limits, name)
                                raise LimitExceeded(name, bound, f"{name}={bound} exceeded while replaying "
                                                    "(the replay enumerates the monoid on the DFA)")
                start = end
            mw = MonoidWords(tuple(parents), tuple(A.alphabet[a] for a in letters))
            self.shared.closure = WordMonoid(self, mw, np.stack(rows), index)
        return self._closure

    def monoid(self, mw: MonoidWords | None = None) -> WordMonoid:
        """The syntactic monoid enumerated on the DFA; a certificate's words ``mw`` (when given) must be
        exactly its shortlex tree (so they are all of it, each the least word of its element).

        Raises:
            ReplayError: ``mw`` is another tree; LimitExceeded: see :meth:`closure`.
        """
        W = self.closure()
        if mw is not None:
            if len(mw.parents) != len(mw.letters):
                raise ReplayError("parents and letters differ in length")
            if len(mw.parents) + 1 != W.m:
                raise ReplayError(f"the certificate lists {len(mw.parents) + 1} elements; the monoid has {W.m}")
            if tuple(mw.parents) != W.words.parents or tuple(mw.letters) != W.words.letters:
                raise ReplayError("the certificate's words are not the monoid's shortlex-least words")
        return W


class WordMonoid:
    """The transition monoid of a :class:`Checker`'s DFA with its shortlex words, built by
    :meth:`Checker.closure`, and the algebraic definitions answered on it.

    Attributes:
        X: ``[m, n]`` transformations (element 0 the identity); right / left: ``[m, |Σ|]`` the right
        and left Cayley graphs (x·a and a·x); words: the :class:`MonoidWords` tree; letter_ids: η(a).
    """

    def __init__(self, chk: Checker, mw: MonoidWords, X: np.ndarray, index: dict[bytes, int],
                 cayley: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        A = chk.A
        self.X, self.m, self.k = X, X.shape[0], A.num_letters
        self.words, self._chk, self._index = mw, chk, index
        self._parents = list(mw.parents)
        self._letters = [A.letter_index(a) for a in mw.letters]
        if cayley is not None:  # the classification's Cayley graphs of the same elements
            self.right, self.left = cayley
            self.letter_ids = self.right[0].copy()
            return
        chk.spend(self.m * max(1, self.k) * 2, "the Cayley graphs")
        t = A.transitions.astype(np.int64)
        self.right = np.empty((self.m, self.k), dtype=np.int64)
        self.left = np.empty((self.m, self.k), dtype=np.int64)
        step = max(1, 4_000_000 // max(1, self.k * chk.n))
        for c0 in range(0, self.m, step):
            chk.deadline.check("replay: the Cayley graphs")
            Xc = X[c0:c0 + step]
            self.right[c0:c0 + step] = self.ids(t[Xc].transpose(0, 2, 1).reshape(-1, chk.n)).reshape(-1, self.k)  # x·a
            self.left[c0:c0 + step] = self.ids(Xc[:, t.T].reshape(-1, chk.n)).reshape(-1, self.k)  # a·x
        self.letter_ids = self.right[0].copy()

    def ids(self, rows: np.ndarray) -> np.ndarray:
        """Element ids of transformation rows ``[r, n]`` (each must be an element)."""
        get = self._index.get
        out = np.fromiter((get(r.tobytes(), -1) for r in np.ascontiguousarray(rows, dtype=np.int64)),
                          dtype=np.int64, count=rows.shape[0])
        if (out < 0).any():
            raise ReplayError("a product is not an element of the monoid")
        return out

    def element(self, word) -> int:
        """The id of η(word)."""
        return self._index[self._chk.tr(word).tobytes()]

    def product(self, *xs: int) -> int:
        """The id of x₁·x₂·…"""
        row = np.arange(self._chk.n)
        for x in xs:
            row = self.X[int(x)][row]
        return self._index[row.tobytes()]

    @cached_property
    def T(self) -> np.ndarray:
        """``[m, m]`` multiplication table (x·y at ``[x, y]``), built only up to
        :data:`REPLAY_TABLE_ENTRIES` entries: column y is column parent(y) read through the right
        Cayley graph on y's last letter.

        Raises:
            LimitExceeded: ``replay_table_entries``."""
        if self.m * self.m > REPLAY_TABLE_ENTRIES:
            raise LimitExceeded("replay_table_entries", REPLAY_TABLE_ENTRIES,
                                f"a replay tabulates at most {REPLAY_TABLE_ENTRIES} products (the monoid has {self.m} elements)")
        self._chk.spend(self.m * self.m, "the multiplication table")
        R = self.right
        out = np.empty((self.m, self.m), dtype=np.int64)
        out[:, 0] = np.arange(self.m)
        for y, (p, a) in enumerate(zip(self._parents, self._letters), start=1):
            out[:, y] = R[out[:, p], a]
        return out

    @cached_property
    def idempotent(self) -> np.ndarray:
        """Boolean ``[m]``: x·x = x (on the transformations)."""
        self._chk.spend(self.X.size, "idempotents")
        return (_compose(self.X, self.X) == self.X).all(axis=1)

    @cached_property
    def semigroup(self) -> np.ndarray:
        """Boolean ``[m]``: the elements of η(Σ⁺) (reached from the letters in the right Cayley graph)."""
        mask = np.zeros(self.m, dtype=bool)
        mask[self.letter_ids] = True
        frontier = np.unique(self.letter_ids)
        while frontier.size:
            nxt = np.unique(self.right[frontier].ravel())
            nxt = nxt[~mask[nxt]]
            mask[nxt] = True
            frontier = nxt
        return mask

    def levels(self) -> tuple[int, np.ndarray]:
        """``(s, T)``: the least s ≥ 1 with η(Σ^s) = η(Σ^{2s}) and the mask of η(Σ^s), the sets
        η(Σ^j) computed one after the other on the right Cayley graph (η(Σ^{j+1}) = η(Σ^j)·Σ)."""
        sets: list[np.ndarray | None] = [None]
        cur = np.zeros(self.m, dtype=bool)
        cur[self.letter_ids] = True
        sets.append(cur)
        s = 1
        while True:
            while len(sets) <= 2 * s:
                self._chk.spend(int(sets[-1].sum()) * max(1, self.k), "the stable semigroup's levels")
                nxt = np.zeros(self.m, dtype=bool)
                nxt[self.right[np.flatnonzero(sets[-1])].ravel()] = True
                sets.append(nxt)
            if (sets[s] == sets[2 * s]).all():
                return s, sets[s]
            s += 1

    def powers(self, ids: np.ndarray, p: int) -> np.ndarray:
        """Rows ``[len(ids), n]``: the transformations x^p (p ≥ 0), by repeated squaring."""
        base = self.X[ids]
        out = np.broadcast_to(np.arange(self._chk.n), base.shape).copy()
        while p:
            self._chk.spend(2 * base.size, "powers")
            if p & 1:
                out = _compose(out, base)
            p >>= 1
            if p:
                base = _compose(base, base)
        return out

    def aperiodic(self, ids: np.ndarray) -> np.ndarray:
        """Boolean per element of ``ids``: x^ω·x = x^ω (x generates no non-trivial group). The index
        of a transformation of n points is at most n, so this is x^n = x^{n+1}."""
        ids = np.asarray(ids, dtype=np.int64)
        P = self.powers(ids, self._chk.n)
        return (_compose(P, self.X[ids]) == P).all(axis=1)

    @cached_property
    def r_labels(self) -> np.ndarray:
        """Label ``[m]`` of the R-class of every element: x R y ⇔ xM = yM ⇔ x, y mutually reachable in
        the right Cayley graph."""
        return _scc_labels(self.right)

    @cached_property
    def l_labels(self) -> np.ndarray:
        """Label ``[m]`` of the L-class (strong components of the left Cayley graph)."""
        return _scc_labels(self.left)

    def r_classes(self) -> np.ndarray:
        """:attr:`r_labels` (the R-class label ``[m]`` of every element)."""
        return self.r_labels

    def l_classes(self) -> np.ndarray:
        """:attr:`l_labels` (the L-class label ``[m]`` of every element)."""
        return self.l_labels

    @cached_property
    def j_labels(self) -> np.ndarray:
        """Label ``[m]`` of the J-class (= D-class: the monoid is finite), strong components of the
        graph with both Cayley graphs' edges."""
        return _scc_labels(np.concatenate([self.right, self.left], axis=1))

    @cached_property
    def regular(self) -> np.ndarray:
        """Boolean ``[m]``: x is regular (x ∈ xMx) ⇔ its R-class contains an idempotent."""
        return np.isin(self.r_labels, self.r_labels[self.idempotent])

    def local(self, e: int, f: int | None = None) -> np.ndarray:
        """Sorted element ids of eMf (for idempotents in η(Σ⁺): eSf)."""
        f = e if f is None else f
        self._chk.spend(self.X.size, "a local monoid")
        rows = self.X[f][self.X[:, self.X[e]]]  # e, then x, then f
        return np.sort(self.ids(np.unique(rows, axis=0)))

    def maximal_idempotents(self) -> np.ndarray:
        """Idempotents of η(Σ⁺) maximal for e ≤ f ⇔ e = e·f = f·e (sorted ids; ``[0]`` when 1 ∈ η(Σ⁺))."""
        E = np.flatnonzero(self.idempotent & self.semigroup)
        if self.semigroup[0]:
            return np.array([0], dtype=np.int64)
        XE = self.X[E]
        self._chk.spend(E.size * E.size * self._chk.n, "maximal idempotents")
        keep = []
        for i in range(E.size):
            e = XE[i]
            fe = XE[:, e]  # e then f, for every f
            ef = e[XE]  # f then e
            above = (fe == e).all(axis=1) & (ef == e).all(axis=1)
            above[i] = False
            if not above.any():
                keep.append(int(E[i]))
        return np.asarray(keep, dtype=np.int64)

    def maximal_idempotent_reps(self) -> np.ndarray:
        """One maximal idempotent per D-class (the least id). Idempotents e D e' have isomorphic local
        monoids and the Beauquier–Pin identity holds at (e, f) iff at (e', f) (the conjugation
        argument written out at
        :attr:`langclass.core.algebra.classes.context.Context.maximal_idempotent_reps`)."""
        maxi = self.maximal_idempotents()
        _, first = np.unique(self.j_labels[maxi], return_index=True)
        return np.sort(maxi[first])


class _Shared:
    """What replays of one minimal DFA share: the DFA, the replay's own closure, the classification's
    monoid and orbit engine, the strong components (each computed on first use)."""

    def __init__(self, A: DFA) -> None:
        self.A = A
        self.closure: WordMonoid | None = None
        self.monoid: Any = None
        self.engine: Any = None
        self.context: Any = None
        self.decided: dict[str, Any] = {}
        self.scc: np.ndarray | None = None


_SESSIONS: OrderedDict[tuple, _Shared] = OrderedDict()
_SESSIONS_LOCK = threading.Lock()


def checker_for(dfa: DFA, limits: Limits = DEFAULT_LIMITS) -> Checker:
    """A :class:`Checker` of the DFA with its own deadline and work count, sharing what earlier
    replays of the same minimal DFA (under the same monoid limits) computed from it. The cache holds
    facts of the DFA alone — never anything read from evidence — so a forged record cannot change
    what a later replay sees."""
    A = dfa.canonical()
    key = (tuple(A.alphabet), A.transitions.shape, A.transitions.astype(np.int64).tobytes(), int(A.initial),
           np.asarray(A.accepting, dtype=bool).tobytes(), limits.max_monoid_size, limits.max_monoid_entries)
    with _SESSIONS_LOCK:
        shared = _SESSIONS.get(key)
        if shared is None:
            shared = _SESSIONS[key] = _Shared(A)
            while len(_SESSIONS) > REPLAY_SESSIONS:
                _SESSIONS.popitem(last=False)
        else:
            _SESSIONS.move_to_end(key)
    return Checker(A, limits, shared=shared)


def clear_replay_cache() -> None:
    """Forget every DFA's replay facts (the next replay recomputes them)."""
    with _SESSIONS_LOCK:
        _SESSIONS.clear()


def same_figures(cert: Any, got: Any, names: tuple[str, ...]) -> None:
    """Every stated figure ``names`` of a certificate equals the one recomputed on the DFA (``got``,
    the decision procedure's certificate of the same type).

    Raises:
        ReplayError: naming the first figure that differs, with both values."""
    if type(got) is not type(cert):
        return
    for name in names:
        if getattr(cert, name) != getattr(got, name):
            raise ReplayError(f"{name} is {getattr(got, name)} (recomputed on the DFA), not {getattr(cert, name)}")
