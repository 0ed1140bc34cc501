"""LDA and QLDA by their local monoids: FO²[<,+1] and FO²[<,+1,MOD], decided without orbits.

* **FO²[<,+1] ⇔ LDA**: the syntactic semigroup S = η(Σ⁺) is *locally DA*, i.e. the local monoid
  eSe is in DA for every idempotent e of S (D. Thérien & T. Wilke, "Over words, two variables are
  as powerful as one quantifier alternation", 1998: FO²[<] = DA and FO²[<,+1] = LDA = DA ∗ D).
* **FO²[<,+1,MOD] ⇔ QLDA**: the stable semigroup T = η(Σ^s) (s the stability index, the least
  s ≥ 1 with η(Σ^s) = η(Σ^{2s})) is in LDA: eTe ∈ DA for every idempotent e of T (L. Dartois &
  C. Paperman, "Two-variable first order logic with modular predicates over words", 2013).

A monoid N is in DA iff every regular element of N (x ∈ xNx) is idempotent. For U ∈ {S, T} and an
idempotent e ∈ U the local monoid is eUe = {x ∈ U : e·x = x = x·e} (eUe ⊆ U as U is a semigroup
containing e; x = e·x·e for such x). Two facts make the test one pass over the monoid M:

1. *x ∈ eUe is regular in eUe iff it is regular in M.* "⇒" is clear. "⇐": let x = x·y·x with
   y ∈ M. If y = 1 then x = x·x and z = x ∈ U has x·z·x = x. Otherwise y has a nonempty word, of
   length ℓ ≥ 1; for U = S take z = y·x·y ∈ S (x·y·x·y·x = x), for U = T take z = (y·x)^{s−1}·y:
   x·z·x = (x·y)^s·x = x, and z has a word of length (s−1)(ℓ + s) + ℓ = s·ℓ + s(s−1) ≡ 0 (mod s),
   positive, so z ∈ η(Σ^{ks}) = T (η(Σ^s) = η(Σ^{2s}) gives η(Σ^{ks}) = T for every k ≥ 1; x has a
   word of length s). In every case e·z·e ∈ eUe and x·(e·z·e)·x = (x·e)·z·(e·x) = x·z·x = x.
2. Hence **U ∉ LDA iff there are an idempotent e ∈ U and an x ∈ U that is regular in M, not
   idempotent, with e·x = x = x·e** — the decider's search; x ∈ U is automatic for U = S
   (x = e·x·e with e ∈ S), for U = T it is a condition.

Evidence (both replayable from the DFA alone, :func:`replay_local_da`): a non-member's
:class:`LocalDAWitness` gives words e, x, z with e·e = e, e·x = x = x·e, x·z·x = x and a context
separating x·x from x; for QLDA the lengths of e and x are positive multiples of s, which the replay
recomputes from the DFA (:func:`stability_index_of`), so they lie in T. A member's
:class:`LocalDACertificate` lists the monoid as words (up to
:data:`~langclass.core.algebra.classes.evidence.CERT_MONOID_MAX` elements) and the replay checks
every local monoid eUe by the definition (regular in eUe by a search over eUe itself, not by fact 1).

This module is the independent check of the orbit engine's TL(DD) = FO²[<,+1] and TL(MOD⁺) =
FO²[<,+1,MOD]; it registers no class key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import LimitExceeded
from langclass.core.base.limits import DEFAULT_LIMITS, Limits
from langclass.core.base.wording import count_noun
from .classes.aperiodic import need_monoid
from .classes.base import Evidence, show, words
from .classes.context import Context
from .classes.evidence import MonoidWords, Separation, monoid_words
from .classes.replaykit import Checker, ReplayError
from .monoid import transition_monoid

__all__ = ["LocalDACertificate", "LocalDAWitness", "LocalDAResult", "decide_lda", "decide_qlda", "local_da",
           "replay_local_da", "stability_index_of", "LOCAL_DA_WORK", "REPLAY_LEVELS_MAX", "SOURCE_LDA", "SOURCE_QLDA"]

LOCAL_DA_WORK = 400_000_000
"""Most membership tests x ∈ eUe (idempotents of U × monoid elements, times the states when the
multiplication table does not fit) the search may make; beyond it ``LimitExceeded("local_da_work")``."""

REPLAY_LEVELS_MAX = 2_000_000
"""Most transformations :func:`stability_index_of` builds (summed over the levels η(Σ^j))."""

SOURCE_LDA = ("D. Thérien & T. Wilke, Over words, two variables are as powerful as one quantifier alternation "
              "(1998): FO²[<,+1] = LDA")
SOURCE_QLDA = ("L. Dartois & C. Paperman, Two-variable first order logic with modular predicates over words "
               "(2013): FO²[<,+1,MOD] = QLDA")

VARIETIES = ("LDA", "QLDA")


@dataclass(frozen=True)
class LocalDACertificate(Evidence):
    """Every local monoid eUe (U = η(Σ⁺) for LDA, η(Σ^s) for QLDA) is in DA.

    Attributes:
        variety: ``"LDA"`` or ``"QLDA"``.
        stability_index: s (QLDA), ``None`` for LDA.
        semigroup_size: |U|.
        idempotents: the idempotents of U (each local monoid eUe was checked).
        monoid: the monoid as words (``None`` over the certificate cap).
    """

    CHECK = ("with the monoid's words: U (η(Σ⁺), resp. η(Σ^s) with s recomputed) has the stated size and number "
             "of idempotents, and in every eUe each element regular in eUe is idempotent")
    variety: str
    stability_index: int | None
    semigroup_size: int
    idempotents: int
    monoid: MonoidWords | None = None


@dataclass(frozen=True)
class LocalDAWitness(Evidence):
    """An idempotent e ∈ U and a regular non-idempotent x of eUe (x·z·x = x, x·x ≠ x)."""

    CHECK = ("e is a nonempty idempotent word, x a nonempty word, e·x = x = x·e, x·z·x = x, and the context "
             "separates x·x from x; for QLDA |e| and |x| are multiples of the stability index s, recomputed")
    variety: str
    e: tuple[str, ...]
    x: tuple[str, ...]
    z: tuple[str, ...]
    stability_index: int | None
    context: Separation


@dataclass(frozen=True)
class LocalDAResult:
    """The answer of :func:`decide_lda` / :func:`decide_qlda`.

    Attributes:
        variety: ``"LDA"`` (FO²[<,+1]) or ``"QLDA"`` (FO²[<,+1,MOD]).
        member: the answer.
        reason: one line for a reader.
        certificate: the member's :class:`LocalDACertificate`, else ``None``.
        witness: the non-member's :class:`LocalDAWitness`, else ``None``.
        source: the characterization's paper and theorem.
    """

    variety: str
    member: bool
    reason: str
    certificate: LocalDACertificate | None
    witness: LocalDAWitness | None
    source: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready record (what :func:`replay_local_da` reads)."""
        return {"variety": self.variety, "member": self.member, "reason": self.reason,
                "certificate": None if self.certificate is None else self.certificate.to_dict(),
                "witness": None if self.witness is None else self.witness.to_dict(), "source": self.source}


def _nonempty_word(M, x: int) -> tuple[str, ...]:
    return words(M.identity_word_plus if int(x) == 0 else M.word(x))


def _decide(ctx: Context, modular: bool) -> LocalDAResult:
    M = need_monoid(ctx)
    variety, source = ("QLDA", SOURCE_QLDA) if modular else ("LDA", SOURCE_LDA)
    U = M.stable if modular else M.in_semigroup
    s = M.stability_index if modular else None
    where = f"the stable semigroup T = η(Σ^{s})" if modular else "the syntactic semigroup S = η(Σ⁺)"
    E = np.flatnonzero(U & M.idempotent)
    candidates = U & M.regular & ~M.idempotent  # fact 2: the only possible violators
    if candidates.any():
        cost = 1 if ctx.table_fits else M.num_states
        work = int(E.size) * M.size * cost
        if work > LOCAL_DA_WORK:
            raise LimitExceeded("local_da_work", LOCAL_DA_WORK,
                                f"checking the local monoids eUe of {E.size} idempotents in a monoid of {M.size} elements "
                                f"needs {work} membership tests (> {LOCAL_DA_WORK})")
        chunk = max(1, 4_000_000 // max(1, M.size))
        for c0 in range(0, E.size, chunk):
            ctx.check_time(variety)
            es = E[c0:c0 + chunk]
            lm, rm = ctx.fixed_masks(es)
            hit = lm & rm & candidates[None, :]
            if hit.any():
                i, x = (int(v) for v in np.argwhere(hit)[0])
                e = int(es[i])
                xrow = ctx.left_rows([x])[0]  # x·y for every y
                xcol = ctx.right_cols([x])[:, 0]  # y·x for every y
                z = int(np.flatnonzero(xcol[xrow] == x)[0])  # x·z·x = x
                xx = M.multiply(x, x)
                if modular:
                    ew, xw = words(M.stable_word(e)), words(M.stable_word(x))
                else:
                    ew, xw = _nonempty_word(M, e), _nonempty_word(M, x)
                wit = LocalDAWitness(variety, ew, xw, words(M.word(z)), s, ctx.element_context(xx, x))
                return LocalDAResult(
                    variety, False,
                    f"for the idempotent e = η({show(ew)}) of {where}, x = η({show(xw)}) lies in eUe and is regular "
                    f"(x·z·x = x for z = {show(wit.z)}) but not idempotent, so eUe is not in DA and the semigroup is "
                    f"not in LDA", None, wit, source)
    cert = LocalDACertificate(variety, s, int(U.sum()), int(E.size), monoid_words(M))
    return LocalDAResult(
        variety, True,
        f"in each of the {count_noun(int(E.size), 'local monoid')} eUe of {where} every regular element is "
        "idempotent (eUe ∈ DA), so the semigroup is in LDA", cert, None, source)


def decide_lda(ctx: Context) -> LocalDAResult:
    """FO²[<,+1] ⇔ η(Σ⁺) ∈ LDA (Thérien & Wilke 1998), by the search of fact 2 (module docstring).

    Args:
        ctx: a :class:`~langclass.core.algebra.classes.Context` with its monoid.

    Returns:
        A :class:`LocalDAResult` with ``variety="LDA"``.

    Raises:
        ValueError: the context has no monoid.
        LimitExceeded: ``local_da_work``; TimeLimitExceeded from the context's deadline.
    """
    return _decide(ctx, modular=False)


def decide_qlda(ctx: Context) -> LocalDAResult:
    """FO²[<,+1,MOD] ⇔ η(Σ^s) ∈ LDA, i.e. the language is in QLDA (Dartois & Paperman 2013).

    Args / Returns / Raises: as :func:`decide_lda` (``variety="QLDA"``).
    """
    return _decide(ctx, modular=True)


def local_da(dfa: DFA, *, modular: bool = False, limits: Limits = DEFAULT_LIMITS) -> LocalDAResult:
    """:func:`decide_lda` (``modular=False``) or :func:`decide_qlda` (``modular=True``) from a DFA.

    Args:
        dfa: any complete DFA (minimized here).
        modular: QLDA instead of LDA.
        limits: ``max_monoid_size`` / ``max_monoid_entries`` and ``time_limit_s``.

    Raises:
        LimitExceeded: a monoid limit, ``local_da_work``, ``time_limit_s``.

    Example:
        >>> from langclass.core.ingest.parse import parse_regex
        >>> local_da(parse_regex("(a|b)*ab(a|b)*", ["a", "b"])).member  # in FO²[<,+1], not in FO²[<]
        True
    """
    deadline = limits.deadline()
    A = dfa.canonical()
    ctx = Context(A, transition_monoid(A, limits, deadline=deadline), limits, deadline)
    return _decide(ctx, modular)


# ============================================================================ replay


def stability_index_of(dfa: DFA, max_transformations: int = REPLAY_LEVELS_MAX) -> int:
    """The stability index s of L(dfa) — the least s ≥ 1 with η(Σ^s) = η(Σ^{2s}) — from the DFA
    alone: the levels η(Σ^j) as sets of transformations of the minimal DFA, one after the other
    (no :mod:`langclass.core.algebra.monoid` code).

    Raises:
        LimitExceeded: ``replay_levels_max`` past ``max_transformations`` transformations built.
    """
    A = dfa.canonical()
    t = A.transitions.astype(np.int64)
    k = A.num_letters
    levels: list[np.ndarray] = [np.zeros((0, A.num_states), dtype=np.int64), np.unique(t.T.copy(), axis=0)]
    built = int(levels[1].shape[0])
    s = 1
    while True:
        while len(levels) <= 2 * s:
            prev = levels[-1]
            nxt = np.unique(np.concatenate([t[prev, a] for a in range(k)]), axis=0)  # q ↦ (q·w)·a
            built += int(nxt.shape[0])
            if built > max_transformations:
                raise LimitExceeded("replay_levels_max", max_transformations,
                                    f"recomputing the stability index built more than {max_transformations} transformations")
            levels.append(nxt)
        if np.array_equal(levels[s], levels[2 * s]):
            return s
        s += 1


def _replay_witness(chk: Checker, wit: LocalDAWitness) -> None:
    e, x, z = list(wit.e), list(wit.x), list(wit.z)
    chk.idempotent_word(e)
    if not x:
        raise ReplayError("x must be a nonempty word (an element of the semigroup)")
    if not (chk.same(chk.cat(e, x), x) and chk.same(chk.cat(x, e), x)):
        raise ReplayError("e·x = x = x·e does not hold: x is not in the local monoid eUe")
    if not chk.same(chk.cat(x, z, x), x):
        raise ReplayError("x·z·x ≠ x: z does not show that x is regular")
    chk.check_context(wit.context, chk.cat(x, x), x)
    if wit.variety == "QLDA":
        s = stability_index_of(chk.A)
        if wit.stability_index != s:
            raise ReplayError(f"the stability index is {s}, not {wit.stability_index}")
        if len(e) % s or len(x) % s:
            raise ReplayError(f"|e| = {len(e)} and |x| = {len(x)} must be multiples of s = {s} (elements of η(Σ^s))")
    elif wit.stability_index is not None:
        raise ReplayError("an LDA witness has no stability index")


def _replay_certificate(chk: Checker, cert: LocalDACertificate) -> None:
    if (cert.variety == "QLDA") != (cert.stability_index is not None):
        raise ReplayError("a QLDA certificate names the stability index, an LDA certificate none")
    if cert.monoid is None:
        return  # over the certificate cap: the figures only
    W = chk.monoid(cert.monoid)
    if cert.variety == "QLDA":
        s, U = W.levels()
        if s != cert.stability_index:
            raise ReplayError(f"the stability index is {s}, not {cert.stability_index}")
    else:
        U = W.semigroup
    E = np.flatnonzero(U & W.idempotent)
    if int(U.sum()) != cert.semigroup_size or int(E.size) != cert.idempotents:
        raise ReplayError(f"U has {int(U.sum())} elements and {E.size} idempotents, not {cert.semigroup_size} and "
                          f"{cert.idempotents}")
    T = W.T
    for e in E.tolist():
        N = np.intersect1d(W.local(e), np.flatnonzero(U))  # eUe
        TN = T[np.ix_(N, N)]  # products inside eUe
        regular = (T[TN, N[:, None]] == N[:, None]).any(axis=1)  # x·z·x = x for some z ∈ eUe
        if (regular & ~W.idempotent[N]).any():
            x = int(N[np.flatnonzero(regular & ~W.idempotent[N])[0]])
            raise ReplayError(f"element {x} of eUe (e = element {e}) is regular in eUe but not idempotent")


def replay_local_da(dfa: DFA, result: LocalDAResult | dict[str, Any]) -> None:
    """Re-check a :class:`LocalDAResult` (or its ``to_dict()`` record) on the DFA alone.

    Raises:
        ReplayError: the record is malformed or its evidence does not hold; the message says which check.
    """
    d = result.to_dict() if isinstance(result, LocalDAResult) else result
    if not isinstance(d, dict) or d.get("variety") not in VARIETIES or not isinstance(d.get("member"), bool):
        raise ReplayError("a local-DA record names its variety (LDA or QLDA) and a boolean answer")
    try:
        if d["member"]:
            ev: Evidence = LocalDACertificate.from_dict(d.get("certificate") or {}, "certificate")
        else:
            ev = LocalDAWitness.from_dict(d.get("witness") or {}, "witness")
    except ValueError as err:
        raise ReplayError(f"{d['variety']}: malformed evidence: {err}") from None
    if ev.variety != d["variety"]:
        raise ReplayError("the evidence is for another variety")
    chk = Checker(dfa)
    if d["member"]:
        _replay_certificate(chk, ev)
    else:
        _replay_witness(chk, ev)
