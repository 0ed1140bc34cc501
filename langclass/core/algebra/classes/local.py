"""The local family, read on the local monoids eSe of η(Σ⁺): LTL[P,Y], locally testable, locally threshold testable.

* LTL[P,Y] ⇔ η(Σ⁺) is locally R-trivial: eSe is R-trivial for every idempotent e (LR = R ∗ D).
* locally testable ⇔ eSe is idempotent and commutative for every idempotent e (J. A. Brzozowski &
  I. Simon, "Characterizations of locally testable events", 1973; R. McNaughton, "Algebraic decision
  procedures for local testability", 1974).
* locally threshold testable = FO[+1] ⇔ η(Σ⁺) aperiodic and e x f y e z f = e z f y e x f for
  idempotents e, f (D. Beauquier & J.-E. Pin, "Factors of words", 1989; D. Thérien & A. Weiss,
  "Graph congruences and wreath products", 1985).

The deciders check one maximal idempotent per D-class (:attr:`Context.maximal_idempotent_reps`
proves why that suffices). A member's replay recomputes the membership with the decision procedure
on the DFA and compares every listed figure with the recomputed one; for monoids small enough to
list their words it also checks the property by the definition on its own enumeration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from langclass.core.base.errors import LimitExceeded
from .aperiodic import counter_from_element, need_monoid, replay_counter
from .base import CERT_LIST_MAX, ClassResult, Decider, Evidence, make_result, register, show, words
from .context import Context
from .definite import Definite, check_definite
from .evidence import MonoidWords, Separation, monoid_words
from .replaykit import Checker, ReplayError
from langclass.core.base.wording import count_noun

__all__ = ["decide_ltl_p_y", "decide_locally_testable", "decide_locally_threshold_testable", "LTT_WORK_BUDGET",
           "LocalMonoid", "LocalMonoids", "LocalRWitness", "LTWitness", "LTTCertificate",
           "LTTCounter", "LTTIdentity"]

LTT_WORK_BUDGET = 400_000_000
"""Entries compared when checking the Beauquier–Pin identity (or commutativity of eSe) exhaustively
(one per product with the multiplication table, n per product on transformations without it);
beyond it the answer is unknown (``LimitExceeded``)."""

def _sword(M, x: int) -> tuple[str, ...]:
    """A nonempty word for an element of the semigroup η(Σ⁺) (the identity's is ``identity_word_plus``)."""
    return words(M.identity_word_plus if int(x) == 0 else M.word(x))


@dataclass(frozen=True)
class LocalMonoid(Evidence):
    """An idempotent e (as a nonempty word) and the size of its local monoid eSe."""

    e: tuple[str, ...]
    eSe_size: int


@dataclass(frozen=True)
class LocalMonoids(Evidence):
    """The local monoids eSe checked, one maximal idempotent per D-class; ``monoid`` lists the whole
    monoid as words (``None`` over the certificate cap) for a replay by the definition."""

    CHECK = ("each e is a nonempty idempotent word with |eSe| as listed; with the monoid's words, the property "
             "holds for the local monoid of every idempotent of η(Σ⁺)")
    maximal_idempotents: tuple[LocalMonoid, ...]
    truncated: bool
    monoid: MonoidWords | None = None


@dataclass(frozen=True)
class LocalRWitness(Evidence):
    """x ≠ y in eSe, R-equivalent (x·u = y, y·v = x)."""

    CHECK = "e is idempotent (from a nonempty word), e·x = x·e = x, e·y = y·e = y, x·u = y, y·v = x, x ≠ y"
    e: tuple[str, ...]
    x: tuple[str, ...]
    y: tuple[str, ...]
    u: tuple[str, ...]
    v: tuple[str, ...]
    context: Separation


@dataclass(frozen=True)
class LTWitness(Evidence):
    """x ∈ eSe with x·x ≠ x (``kind`` "not idempotent", ``y`` None) or x, y ∈ eSe with x·y ≠ y·x
    (``kind`` "not commutative")."""

    CHECK = "x (and y) ∈ eSe, and x·x ≠ x (not idempotent) or x·y ≠ y·x (not commutative)"
    e: tuple[str, ...]
    x: tuple[str, ...]
    y: tuple[str, ...] | None
    kind: str
    context: Separation


@dataclass(frozen=True)
class LTTCertificate(Evidence):
    """η(Σ⁺) is aperiodic and the identity holds on every pair of D-class representatives of the
    maximal idempotents (or, when 1 ∈ η(Σ⁺), the monoid is commutative)."""

    CHECK = ("on the monoid enumerated on the DFA: η(Σ⁺) is aperiodic and e x f y e z f = e z f y e x f for all "
             "idempotents e, f of η(Σ⁺); the counts of maximal idempotents, D-classes and pairs are as stated")
    maximal_idempotents: int
    d_class_representatives: int
    pairs_checked: int
    commutative: bool
    monoid: MonoidWords | None = None


@dataclass(frozen=True)
class LTTCounter(Evidence):
    """η(Σ⁺) is not aperiodic: a counter (see :class:`~langclass.core.algebra.classes.evidence.Counter`)."""

    CHECK = "q·w ≠ q and q·w^m = q"
    word: tuple[str, ...]
    state: int
    m: int
    cycle: tuple[int, ...]
    prefix: tuple[str, ...]
    kind: str = "not aperiodic"


@dataclass(frozen=True)
class LTTIdentity(Evidence):
    """Idempotent words e, f and x, y, z with e x f y e z f ≠ e z f y e x f (separated by ``context``)."""

    CHECK = "e x f y e z f ≠ e z f y e x f"
    e: tuple[str, ...]
    f: tuple[str, ...]
    x: tuple[str, ...]
    y: tuple[str, ...]
    z: tuple[str, ...]
    kind: str
    context: Separation


def _checked(lst: list[LocalMonoid]) -> tuple[tuple[LocalMonoid, ...], bool]:
    return tuple(lst[:CERT_LIST_MAX]), len(lst) > CERT_LIST_MAX


def decide_ltl_p_y(ctx: Context) -> ClassResult:
    """LTL[P,Y] ⇔ η(Σ⁺) is locally R-trivial: for every idempotent e, eSe is R-trivial.

    Checked on one maximal idempotent per D-class (e' ≤ e ⇒ e'Se' ⊆ eSe; eSe ≅ e'Se' when e D e',
    see :attr:`Context.maximal_idempotent_reps`); R on eSe is R on M restricted (x = y·m ⇒ x = y·(e m e)).
    """
    M = need_monoid(ctx)
    R = M.green["R"]
    nontriv = np.bincount(R)[R] > 1
    checked: list[LocalMonoid] = []
    reps = ctx.maximal_idempotent_reps
    lm, rm = ctx.rep_masks
    for i, e in enumerate(reps.tolist()):
        ctx.check_time("LTL[P,Y]")
        mask = lm[i] & rm[i]
        ids = np.flatnonzero(mask & nontriv)
        ew = _sword(M, e)
        checked.append(LocalMonoid(ew, int(mask.sum())))
        if ids.size:
            labs = R[ids]
            counts = np.bincount(labs)
            if (counts > 1).any():
                c = int(np.flatnonzero(counts > 1)[0])  # the least R-class with two elements in eSe
                x, y = (int(v) for v in ids[labs == c][:2])
                u, v = M.right_path(x, y), M.right_path(y, x)
                wit = LocalRWitness(ew, _sword(M, x), _sword(M, y), words(u), words(v), ctx.element_context(x, y))
                return make_result("ltl_p_y", False,
                                   f"for the idempotent e = η({show(ew)}), x = η({show(wit.x)}) and y = η({show(wit.y)}) "
                                   "are distinct R-equivalent elements of eSe, so the syntactic semigroup is not locally R-trivial",
                                   wit, wit)
    return make_result("ltl_p_y", True,
                       f"eSe is R-trivial for a maximal idempotent e of each of the {count_noun(len(checked), 'D-class', 'D-classes')} of maximal "
                       "idempotents of the syntactic semigroup (hence for every idempotent), so it is locally R-trivial",
                       LocalMonoids(*_checked(checked), monoid_words(M)), None)


def decide_locally_testable(ctx: Context) -> ClassResult:
    """Locally testable ⇔ eSe is idempotent and commutative for every idempotent e of η(Σ⁺)
    (Brzozowski & Simon 1973; McNaughton 1974). Checked on one maximal idempotent per D-class
    (see :attr:`Context.maximal_idempotent_reps`).

    Raises:
        LimitExceeded: ``lt_commutativity_work`` when the pairs of some eSe exceed :data:`LTT_WORK_BUDGET`.
    """
    M = need_monoid(ctx)
    fits = ctx.table_fits
    cost = 1 if fits else M.num_states  # entries compared per product
    checked: list[LocalMonoid] = []
    reps = ctx.maximal_idempotent_reps
    lm, rm = ctx.rep_masks
    for i, e in enumerate(reps.tolist()):
        ctx.check_time("locally testable")
        ids = np.flatnonzero(lm[i] & rm[i])
        ew = _sword(M, e)
        checked.append(LocalMonoid(ew, int(ids.size)))
        idem = M.idempotent[ids]  # x·x = x
        if not idem.all():
            x = int(ids[np.flatnonzero(~idem)[0]])
            xx = M.multiply(x, x)
            wit = LTWitness(ew, _sword(M, x), None, "not idempotent", ctx.element_context(xx, x))
            return make_result("locally_testable", False,
                               f"x = η({show(M.word(x))}) lies in eSe for e = η({show(ew)}) but x·x ≠ x", wit, wit)
        r = ids.size
        if r * r * cost > LTT_WORK_BUDGET:
            raise LimitExceeded("lt_commutativity_work", LTT_WORK_BUDGET,
                                f"checking commutativity of eSe ({r} elements) needs {r * r * cost} comparisons")
        bad_pair = None
        if fits:
            chunk = max(1, 4_000_000 // max(1, M.size))
            for c0 in range(0, r, chunk):
                ctx.check_time("locally testable")
                sub = ids[c0:c0 + chunk]
                bad = ctx.left_rows(sub)[:, ids] != ctx.right_cols(sub)[ids, :].T  # x_i·x_j ≠ x_j·x_i
                if bad.any():
                    i0, j0 = (int(v) for v in np.argwhere(bad)[0])
                    bad_pair = (int(sub[i0]), int(ids[j0]))
                    break
        else:
            A = M.elements[ids].astype(np.intp)
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
            wit = LTWitness(ew, _sword(M, x), _sword(M, y), "not commutative", ctx.element_context(xy, yx))
            return make_result("locally_testable", False,
                               f"x = η({show(M.word(x))}) and y = η({show(M.word(y))}) lie in eSe for e = η({show(ew)}) "
                               "but do not commute", wit, wit)
    return make_result("locally_testable", True,
                       f"eSe is an idempotent commutative monoid for a maximal idempotent e of each of the "
                       f"{count_noun(len(checked), 'D-class', 'D-classes')} of maximal idempotents (hence for every idempotent)",
                       LocalMonoids(*_checked(checked), monoid_words(M)), None)


def decide_locally_threshold_testable(ctx: Context) -> ClassResult:
    """Locally threshold testable = FO[+1] ⇔ η(Σ⁺) aperiodic and e x f y e z f = e z f y e x f for all
    idempotents e, f (Beauquier & Pin 1989; Thérien & Weiss 1985), checked as a·b·c = c·b·a for
    a, c ∈ eSf and b ∈ fSe on maximal idempotents e, f (smaller ones give subsets of these), one per
    D-class (the identity holds at (e, f) iff at (e', f') for e D e', f D f'; see
    :attr:`Context.maximal_idempotent_reps`).

    Raises:
        LimitExceeded: ``ltt_identity_work`` when the exhaustive check exceeds :data:`LTT_WORK_BUDGET`.
    """
    M = need_monoid(ctx)
    viol = M.nontrivial_group_elements
    if viol.any():
        x = int(np.flatnonzero(viol)[0])
        c = counter_from_element(ctx, x)
        wit = LTTCounter(c.word, c.state, c.m, c.cycle, c.prefix)
        return make_result("locally_threshold_testable", False,
                           f"the syntactic semigroup is not aperiodic (the word {show(M.word(x))} is a counter)", wit, wit)
    n = M.num_states
    if M.identity_in_semigroup:
        # e = f = 1: the identity reads x y z = z y x on S = M, i.e. M commutative (y = 1), and a commutative
        # monoid satisfies it; commutativity is checked on the generators.
        gens = M.letter_ids.tolist()
        for i, a in enumerate(gens):
            for b in gens[i + 1:]:
                if M.multiply(a, b) != M.multiply(b, a):
                    ab, ba = M.multiply(a, b), M.multiply(b, a)
                    one = words(M.identity_word_plus)
                    wit = LTTIdentity(one, one, words(M.word(a)), one, words(M.word(b)), "identity",
                                      ctx.element_context(ab, ba))
                    return make_result("locally_threshold_testable", False,
                                       f"with e = f = y = 1 (= η({show(one)})), x = {show(M.word(a))} and z = {show(M.word(b))} "
                                       "do not commute", wit, wit)
        return make_result("locally_threshold_testable", True,
                           "the syntactic semigroup contains 1 and is aperiodic and commutative",
                           LTTCertificate(1, 1, 1, True, monoid_words(M)), None)
    fits = ctx.table_fits
    cost = 1 if fits else n
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
        if fits:
            TA = ctx.right_cols(A)  # [m, p]: y·c
            AM = ctx.left_rows(A)  # [p, m]: a·y
            chunk = max(1, 4_000_000 // max(1, A.size * A.size))
            for c0 in range(0, B.size, chunk):
                ctx.check_time("locally threshold testable")
                Bc = B[c0:c0 + chunk]
                AB = AM[:, Bc]  # [p, q]: a·b
                L = TA[AB]  # [p, q, p]: (a·b)·c
                bad = L != L.transpose(2, 1, 0)
                if bad.any():
                    i0, q0, j0 = (int(v) for v in np.argwhere(bad)[0])
                    found = (int(A[i0]), int(Bc[q0]), int(A[j0]))
                    break
        else:
            XA = M.elements[A].astype(np.intp)  # [p, n]
            for b in B.tolist():
                ctx.check_time("locally threshold testable")
                P = M.elements[b].astype(np.intp)[XA]  # a·b : [p, n]
                L = XA[np.arange(A.size)[None, :, None], P[:, None, :]]  # [a, c, n]: (a·b)·c
                bad = ~(L == L.transpose(1, 0, 2)).all(axis=2)
                if bad.any():
                    i0, j0 = (int(v) for v in np.argwhere(bad)[0])
                    found = (int(A[i0]), b, int(A[j0]))
                    break
        if found is not None:
            a, b, c = found
            lhs, rhs = M.product(a, b, c), M.product(c, b, a)
            wit = LTTIdentity(words(M.word(e)), words(M.word(f)), words(M.word(a)), words(M.word(b)),
                              words(M.word(c)), "identity", ctx.element_context(lhs, rhs))
            return make_result("locally_threshold_testable", False,
                               f"e = η({show(M.word(e))}), f = η({show(M.word(f))}), x = {show(M.word(a))}, "
                               f"y = {show(M.word(b))}, z = {show(M.word(c))} violate e x f y e z f = e z f y e x f",
                               wit, wit)
    return make_result("locally_threshold_testable", True,
                       f"the syntactic semigroup is aperiodic and e x f y e z f = e z f y e x f holds for all "
                       f"{len(reps)}² pairs of maximal idempotents e, f taken one per D-class (hence for all idempotents)",
                       LTTCertificate(len(ctx.maximal_idempotents), len(reps), len(plan), False, monoid_words(M)), None)


# ============================================================================ replay


def _check_listed(chk: Checker, cert: LocalMonoids) -> None:
    """The listed idempotents are one maximal idempotent of η(Σ⁺) per D-class of maximal idempotents
    (all of them unless ``truncated``, which holds iff there are more than CERT_LIST_MAX), each
    with its |eSe| — all recomputed on the DFA with the classification's context (the maximal
    idempotents, Green's J, the masks of eM and Me), whatever the certificate lists."""
    ctx = chk.context()
    M = ctx.monoid
    maximal = ctx.maximal_idempotents
    J = M.green["J"]
    want = np.unique(J[maximal]).size
    if cert.truncated != (want > CERT_LIST_MAX):
        raise ReplayError(f"there are {want} D-classes of maximal idempotents: truncated is {want > CERT_LIST_MAX}")
    if len(cert.maximal_idempotents) != min(want, CERT_LIST_MAX):
        raise ReplayError(f"{len(cert.maximal_idempotents)} idempotents listed; there are {want} D-classes of maximal idempotents")
    is_max = set(maximal.tolist())
    seen = set()
    for lm in cert.maximal_idempotents:
        chk.idempotent_word(lm.e)
        e = M.element_of_word(lm.e)
        if e not in is_max:
            raise ReplayError(f"η({list(lm.e)}) is not a maximal idempotent of the syntactic semigroup")
        if int(J[e]) in seen:
            raise ReplayError("two listed idempotents lie in one D-class")
        seen.add(int(J[e]))
        left, right = ctx.fixed_masks([e])
        size = int((left[0] & right[0]).sum())
        if size != lm.eSe_size:
            raise ReplayError(f"eSe has {size} elements, not {lm.eSe_size}")


def _replay_ltl_p_y_yes(chk: Checker, cert: LocalMonoids) -> None:
    """The membership is recomputed by the decision procedure on the DFA and the listed figures
    compared (:func:`_check_listed`); with the monoid's words (small monoids) also by the definition on
    the replay's own enumeration: every local monoid eSe is R-trivial. Checked on the maximal
    idempotents: e' ≤ e gives e'Se' = e'(eSe)e' ⊆ eSe, and two elements of eSe are R-equivalent in eSe
    iff in M (x = y·m ⇒ x = y·(e m e)), so an R-trivial eSe has R-trivial subsets; and one maximal
    idempotent per D-class suffices (isomorphic local monoids, see
    :meth:`~langclass.core.algebra.classes.replaykit.WordMonoid.maximal_idempotent_reps`)."""
    chk.require_member("ltl_p_y")
    _check_listed(chk, cert)
    if cert.monoid is None and not chk.small():
        return
    W = chk.monoid(cert.monoid)
    R = W.r_labels
    for e in W.maximal_idempotent_reps().tolist():
        ids = W.local(e)
        if np.unique(R[ids]).size != ids.size:
            raise ReplayError(f"the local monoid of idempotent {e} is not R-trivial")


def _replay_lt_yes(chk: Checker, cert: LocalMonoids | Definite) -> None:
    """Recomputed by the decision procedure and compared as for LTL[P,Y]; by the definition for small
    monoids: every local monoid eSe is idempotent and commutative (both pass to the subsets e'Se' ⊆ eSe
    of e' ≤ e, so the maximal idempotents suffice, one per D-class)."""
    if isinstance(cert, Definite):  # found on the DFA alone (the monoid over its cap): checked there, fully
        check_definite(chk.A, cert)
        return
    chk.require_member("locally_testable")
    _check_listed(chk, cert)
    if cert.monoid is None and not chk.small():
        return
    W = chk.monoid(cert.monoid)
    for e in W.maximal_idempotent_reps().tolist():
        ids = W.local(e)
        if not W.idempotent[ids].all():
            raise ReplayError("eSe is not idempotent")
        Xs = W.X[ids]
        chk.spend(ids.size * ids.size * chk.n, "commutativity of eSe")
        for i in range(ids.size):
            xy = Xs[:, Xs[i]]  # x_i then y, for every y
            yx = Xs[i][Xs]  # y then x_i
            if not (xy == yx).all():
                raise ReplayError("eSe is not commutative")


def _replay_ltl_p_y_no(chk: Checker, wit: LocalRWitness) -> None:
    e, x, y, u, v = wit.e, wit.x, wit.y, wit.u, wit.v
    chk.idempotent_word(e)
    for z in (x, y):
        if not (chk.same(chk.cat(e, z), z) and chk.same(chk.cat(z, e), z)):
            raise ReplayError('check `chk.same(chk.cat(e, z), z) and chk.same(chk.cat(z, e), z)` in _replay_ltl_p_y_no does not hold')
    if not (chk.same(chk.cat(x, u), y) and chk.same(chk.cat(y, v), x)):
        raise ReplayError('check `chk.same(chk.cat(x, u), y) and chk.same(chk.cat(y, v), x)` in _replay_ltl_p_y_no does not hold')
    chk.check_context(wit.context, x, y)


def _replay_lt_no(chk: Checker, wit: LTWitness) -> None:
    e, x, y = wit.e, wit.x, wit.y
    if wit.kind == "not idempotent" and y is not None:
        raise ReplayError("a \"not idempotent\" witness has no y")
    chk.idempotent_word(e)
    if not (chk.same(chk.cat(e, x), x) and chk.same(chk.cat(x, e), x)):
        raise ReplayError('check `chk.same(chk.cat(e, x), x) and chk.same(chk.cat(x, e), x)` in _replay_lt_no does not hold')
    if wit.kind == "not idempotent":
        chk.check_context(wit.context, chk.cat(x, x), x)
    else:
        if not (wit.kind == "not commutative" and y is not None):
            raise ReplayError('check `wit.kind == "not commutative" and y is not None` in _replay_lt_no does not hold')
        if not (chk.same(chk.cat(e, y), y) and chk.same(chk.cat(y, e), y)):
            raise ReplayError('check `chk.same(chk.cat(e, y), y) and chk.same(chk.cat(y, e), y)` in _replay_lt_no does not hold')
        chk.check_context(wit.context, chk.cat(x, y), chk.cat(y, x))


def _replay_ltt_yes(chk: Checker, cert: LTTCertificate) -> None:
    """The membership and the counts are recomputed by the decision procedure on the DFA and compared;
    with the monoid's words (small monoids) also by the definition on the replay's own enumeration:
    η(Σ⁺) aperiodic and e x f y e z f = e z f y e x f for all idempotents e, f, checked as
    a·b·c = c·b·a for a, c ∈ eSf, b ∈ fSe on the maximal idempotents (e' ≤ e, f' ≤ f give
    e'Sf' = e·e'Sf'·f ⊆ eSf and f'Se' ⊆ fSe); with 1 ∈ η(Σ⁺) the identity at e = f = 1 is
    commutativity, checked on the letters."""
    got = chk.require_member("locally_threshold_testable").certificate
    if isinstance(got, LTTCertificate):
        for name in ("maximal_idempotents", "d_class_representatives", "pairs_checked", "commutative"):
            if getattr(cert, name) != getattr(got, name):
                raise ReplayError(f"{name} is {getattr(got, name)}, not {getattr(cert, name)}")
    if cert.monoid is None and not chk.small():
        return
    W = chk.monoid(cert.monoid)
    S = np.flatnonzero(W.semigroup)
    if not W.aperiodic(S).all():
        raise ReplayError("η(Σ⁺) is not aperiodic")
    one = bool(W.semigroup[0])
    if cert.commutative != one:
        raise ReplayError(f"commutative is the case 1 ∈ η(Σ⁺), which is {one}")
    if one:
        if (cert.maximal_idempotents, cert.d_class_representatives, cert.pairs_checked) != (1, 1, 1):
            raise ReplayError("with 1 ∈ η(Σ⁺) the only maximal idempotent is 1: one pair")
        L = W.letter_ids.tolist()
        if any(W.product(a, b) != W.product(b, a) for a in L for b in L):
            raise ReplayError("1 ∈ η(Σ⁺) and two letters do not commute")
        return
    maximal = W.maximal_idempotents()
    reps = W.maximal_idempotent_reps()
    r = reps.size
    if (cert.maximal_idempotents, cert.d_class_representatives, cert.pairs_checked) != (maximal.size, r, r * r):
        raise ReplayError(f"there are {maximal.size} maximal idempotents in {r} D-classes ({r * r} pairs)")
    Sm = W.semigroup
    for e in reps.tolist():
        for f in reps.tolist():
            A = W.local(e, f)
            A = A[Sm[A]]
            B = W.local(f, e)
            B = B[Sm[B]]
            if A.size == 0 or B.size == 0:
                continue
            chk.spend(A.size * A.size * B.size * chk.n, "the Beauquier–Pin identity")
            XA = W.X[A]
            for b in B.tolist():
                P = W.X[b][XA]  # a then b: [p, n]
                L = XA[np.arange(A.size)[None, :, None], P[:, None, :]]  # [a, c, n]: a·b·c
                if not (L == L.transpose(1, 0, 2)).all():
                    raise ReplayError("e x f y e z f ≠ e z f y e x f for some idempotents e, f")


def _replay_ltt_no(chk: Checker, wit: LTTCounter | LTTIdentity) -> None:
    if isinstance(wit, LTTCounter):
        if wit.kind != "not aperiodic":
            raise ReplayError('check `wit.kind == "not aperiodic"` in _replay_ltt_no does not hold')
        replay_counter(chk, wit)
        return
    if wit.kind != "identity":
        raise ReplayError(f"unknown witness kind {wit.kind!r}")
    e, f, x, y, z = wit.e, wit.f, wit.x, wit.y, wit.z
    chk.idempotent_word(e)
    chk.idempotent_word(f)
    lhs, rhs = chk.cat(e, x, f, y, e, z, f), chk.cat(e, z, f, y, e, x, f)
    chk.check_context(wit.context, lhs, rhs)


register(Decider("ltl_p_y", decide_ltl_p_y, (LocalMonoids,), (LocalRWitness,), _replay_ltl_p_y_yes, _replay_ltl_p_y_no))
register(Decider("locally_testable", decide_locally_testable, (LocalMonoids, Definite), (LTWitness,), _replay_lt_yes,
                 _replay_lt_no))
register(Decider("locally_threshold_testable", decide_locally_threshold_testable, (LTTCertificate,),
                 (LTTCounter, LTTIdentity), _replay_ltt_yes, _replay_ltt_no))
