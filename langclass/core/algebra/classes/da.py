"""The DA family: FO²[<] (DA) and FO²[<,MOD] (QDA), and J-triviality (piecewise testable).

* FO²[<] = LTL[P,F] ⇔ M ∈ DA ⇔ every regular element is idempotent (Schützenberger 1976;
  D. Thérien & T. Wilke, "Over words, two variables are as powerful as one quantifier alternation", 1998).
* FO²[<,MOD] ⇔ QDA: every element of T = η(Σ^s) that is regular in M is idempotent (L. Dartois &
  C. Paperman, "Two-variable first order logic with modular predicates over words", 2013; an element
  of T is regular in T iff it is regular in M: x = x m x ⇒ x = x·(mx)^{s-1}m·x with (mx)^{s-1}m ∈ T).
* piecewise testable ⇔ M is J-trivial (I. Simon, "Piecewise testable events", 1975).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .aperiodic import need_monoid
from .base import ClassResult, Decider, Evidence, make_result, register, show, words
from .context import Context
from .definite import Definite, check_definite
from .evidence import MonoidWords, Separation, monoid_words
from .replaykit import Checker, ReplayError, same_figures
from langclass.core.base.wording import count_noun

__all__ = ["decide_fo2", "decide_fo2_mod", "decide_piecewise_testable", "RegularIdempotent",
           "StableRegularIdempotent", "DAWitness", "StableDAWitness", "JTrivial", "GreenWitness"]


@dataclass(frozen=True)
class RegularIdempotent(Evidence):
    """Every regular element (x ∈ xMx) of the monoid is idempotent; ``monoid`` lists it as words
    (``None`` over the certificate cap)."""

    CHECK = "the listed words are the whole monoid, its regular elements are as counted and all idempotent"
    regular_d_classes: int
    regular_elements: int
    monoid: MonoidWords | None = None


@dataclass(frozen=True)
class StableRegularIdempotent(Evidence):
    """Every element of T = η(Σ^s) that is regular in M is idempotent."""

    CHECK = ("the listed words are the whole monoid; s and |η(Σ^s)| are as stated and every element of "
             "η(Σ^s) regular in the monoid is idempotent")
    stability_index: int
    stable_semigroup_size: int
    monoid: MonoidWords | None = None


@dataclass(frozen=True)
class DAWitness(Evidence):
    """x, y with (xy)^ω·x·(xy)^ω ≠ (xy)^ω; ``xy_omega`` and ``lhs`` are words of both sides and
    ``context`` separates them."""

    CHECK = "(xy)^ω·x·(xy)^ω ≠ (xy)^ω: prefix·lhs·suffix and prefix·xy_omega·suffix differ in membership"
    x: tuple[str, ...]
    y: tuple[str, ...]
    omega: int
    xy_omega: tuple[str, ...]
    lhs: tuple[str, ...]
    context: Separation


@dataclass(frozen=True)
class StableDAWitness(Evidence):
    """:class:`DAWitness` with x and y of length exactly s (so they lie in the stable semigroup)."""

    CHECK = DAWitness.CHECK + " (x and y have length s: they lie in the stable semigroup)"
    x: tuple[str, ...]
    y: tuple[str, ...]
    omega: int
    xy_omega: tuple[str, ...]
    lhs: tuple[str, ...]
    context: Separation
    stability_index: int


@dataclass(frozen=True)
class JTrivial(Evidence):
    """All ``j_classes`` J-classes are singletons (= the monoid's size)."""

    CHECK = "the listed words are the whole monoid and no two of its elements are R- or L-equivalent"
    j_classes: int
    monoid: MonoidWords | None = None


@dataclass(frozen=True)
class GreenWitness(Evidence):
    """x ≠ y R-equivalent (x·u = y, y·v = x) or L-equivalent (u·x = y, v·y = x)."""

    CHECK = "x·u = y and y·v = x (R) or u·x = y and v·y = x (L), yet x ≠ y"
    relation: str
    x: tuple[str, ...]
    y: tuple[str, ...]
    u: tuple[str, ...]
    v: tuple[str, ...]
    context: Separation


def _idempotent_in_R(M, z: int) -> int:
    """An idempotent R-equivalent to z, preferring one in z's H-class (z regular)."""
    if M.group_element[z]:
        H = M.green["H"]
        return int(np.flatnonzero((H == H[z]) & M.idempotent)[0])
    R = M.green["R"]
    return int(np.flatnonzero((R == R[z]) & M.idempotent)[0])


def _da_witness(ctx: Context, z: int, stable: bool) -> DAWitness | StableDAWitness:
    """x, y with (xy)^ω x (xy)^ω ≠ (xy)^ω from a regular non-idempotent z (x = z, xy = e idempotent in R_z)."""
    M = ctx.monoid
    e = _idempotent_in_R(M, z)
    zp = M.element_of_word(M.right_path(z, e))
    # stable: y = (z'z)^{s-1} z' ∈ T and z·y = e
    y = M.product(*([zp, z] * (M.stability_index - 1) + [zp])) if stable else zp
    xy = M.multiply(z, y)
    assert xy == e and M.idempotent[e]
    lhs = M.product(e, z, e)
    assert lhs != e
    if stable:
        return StableDAWitness(words(M.stable_word(z)), words(M.stable_word(y)), 1, words(M.word(e)),
                               words(M.word(lhs)), ctx.element_context(lhs, e), M.stability_index)
    return DAWitness(words(M.word(z)), words(M.word(y)), 1, words(M.word(e)), words(M.word(lhs)),
                     ctx.element_context(lhs, e))


def decide_fo2(ctx: Context) -> ClassResult:
    """FO²[<] = LTL[P,F] ⇔ M ∈ DA ⇔ every regular element of M is idempotent (Thérien & Wilke 1998)."""
    M = need_monoid(ctx)
    viol = M.regular & ~M.idempotent
    if not viol.any():
        return make_result("fo2", True,
                           f"every regular element of the syntactic monoid is idempotent ({len(M.regular_d_classes)} regular "
                           "D-classes, each an aperiodic semigroup), so it is in DA",
                           RegularIdempotent(len(M.regular_d_classes), int(M.regular.sum()), monoid_words(M)), None)
    wit = _da_witness(ctx, int(np.flatnonzero(viol)[0]), stable=False)
    return make_result("fo2", False,
                       f"x = {show(wit.x)}, y = {show(wit.y)} violate (xy)^ω x (xy)^ω = (xy)^ω "
                       f"(x is regular but not idempotent), so the monoid is not in DA", wit, wit)


def decide_fo2_mod(ctx: Context) -> ClassResult:
    """FO²[<,MOD] ⇔ QDA: the stable semigroup T = η(Σ^s) is in DA (Dartois & Paperman 2013)."""
    M = need_monoid(ctx)
    viol = M.stable & M.regular & ~M.idempotent
    s = M.stability_index
    if not viol.any():
        return make_result("fo2_mod", True,
                           f"every regular element of the stable semigroup η(Σ^{s}) ({count_noun(M.stable_size, 'element')}) is idempotent, "
                           "so it is in DA", StableRegularIdempotent(s, M.stable_size, monoid_words(M)), None)
    wit = _da_witness(ctx, int(np.flatnonzero(viol)[0]), stable=True)
    return make_result("fo2_mod", False,
                       f"x = {show(wit.x)}, y = {show(wit.y)} in the stable semigroup η(Σ^{s}) violate "
                       "(xy)^ω x (xy)^ω = (xy)^ω, so it is not in DA", wit, wit)


def decide_piecewise_testable(ctx: Context) -> ClassResult:
    """Piecewise testable ⇔ M is J-trivial (Simon 1975)."""
    M = need_monoid(ctx)
    g = M.green
    for rel, pathfn in (("R", M.right_path), ("L", M.left_path)):
        lab = g[rel]
        counts = np.bincount(lab)
        if (counts > 1).any():
            c = int(np.flatnonzero(counts > 1)[0])
            x, y = (int(v) for v in np.flatnonzero(lab == c)[:2])
            u, v = pathfn(x, y), pathfn(y, x)
            side = "x·u = y and y·v = x" if rel == "R" else "u·x = y and v·y = x"
            wit = GreenWitness(rel, words(M.word(x)), words(M.word(y)), words(u), words(v), ctx.element_context(x, y))
            return make_result("piecewise_testable", False,
                               f"η({show(M.word(x))}) ≠ η({show(M.word(y))}) are {rel}-equivalent ({side}), "
                               "so the monoid is not J-trivial", wit, wit)
    return make_result("piecewise_testable", True,
                       f"each of the {count_noun(M.size, 'J-class', 'J-classes')} of the syntactic monoid is a singleton (J-trivial)",
                       JTrivial(M.size, monoid_words(M)), None)


# ============================================================================ replay


def _replay_fo2_yes(chk: Checker, cert: RegularIdempotent | Definite) -> None:
    if isinstance(cert, Definite):  # found on the DFA alone (the monoid over its cap)
        check_definite(chk.A, cert)
        return
    same_figures(cert, chk.require_member("fo2").certificate, ('regular_d_classes', 'regular_elements'))  # recomputed on the DFA
    if cert.monoid is None and not chk.small():  # by the definition too where the words are listed
        return
    W = chk.monoid(cert.monoid)
    reg = W.regular
    if int(reg.sum()) != cert.regular_elements:
        raise ReplayError(f"the monoid has {int(reg.sum())} regular elements, not {cert.regular_elements}")
    classes = np.unique(W.j_labels[reg]).size  # a D-class is regular iff it holds an idempotent
    if classes != cert.regular_d_classes:
        raise ReplayError(f"the monoid has {classes} regular D-classes, not {cert.regular_d_classes}")
    if (reg & ~W.idempotent).any():
        raise ReplayError("a regular element is not idempotent")


def _replay_fo2_mod_yes(chk: Checker, cert: StableRegularIdempotent) -> None:
    same_figures(cert, chk.require_member("fo2_mod").certificate, ('stability_index', 'stable_semigroup_size'))  # recomputed on the DFA
    if cert.monoid is None and not chk.small():  # by the definition too where the words are listed
        return
    W = chk.monoid(cert.monoid)
    s, stable = W.levels()
    if s != cert.stability_index:
        raise ReplayError(f"the stability index is {s}, not {cert.stability_index}")
    if int(stable.sum()) != cert.stable_semigroup_size:
        raise ReplayError(f"η(Σ^{s}) has {int(stable.sum())} elements, not {cert.stable_semigroup_size}")
    if (stable & W.regular & ~W.idempotent).any():
        raise ReplayError("an element of T regular in M is not idempotent")


def _replay_da_no(chk: Checker, wit: DAWitness | StableDAWitness) -> None:
    x, y = wit.x, wit.y
    p = chk.omega_exponent(chk.cat(x, y))
    if wit.omega != p:
        raise ReplayError(f"the least p with (xy)^p idempotent is {p}, not {wit.omega}")
    e = chk.cat(x, y) * p
    if not chk.same(e, wit.xy_omega):
        raise ReplayError("xy_omega is not a word of (xy)^ω")
    lhs = chk.cat(e, x, e)
    if not (chk.same(lhs, wit.lhs) and not chk.same(lhs, e)):
        raise ReplayError("lhs is not a word of (xy)^ω·x·(xy)^ω, or it equals (xy)^ω")
    chk.check_context(wit.context, lhs, e)
    if isinstance(wit, StableDAWitness):
        s, _ = chk.closure().levels()  # recomputed on the DFA, never read from the witness
        if wit.stability_index != s:
            raise ReplayError(f"the stability index is {s}, not {wit.stability_index}")
        if not (len(x) == s and len(y) == s):
            raise ReplayError(f"x and y must have length s = {s} (so that they lie in η(Σ^s))")


def _replay_pt_yes(chk: Checker, cert: JTrivial) -> None:
    same_figures(cert, chk.require_member("piecewise_testable").certificate, ('j_classes',))  # recomputed on the DFA
    if cert.monoid is None and not chk.small():  # by the definition too where the words are listed
        return
    W = chk.monoid(cert.monoid)
    if W.m != cert.j_classes:
        raise ReplayError(f"the monoid has {W.m} elements, not {cert.j_classes} singleton J-classes")
    if np.unique(W.j_labels).size != W.m:
        raise ReplayError("two elements are J-equivalent")


def _replay_pt_no(chk: Checker, wit: GreenWitness) -> None:
    x, y, u, v = wit.x, wit.y, wit.u, wit.v
    if wit.relation == "R":
        if not (chk.same(chk.cat(x, u), y) and chk.same(chk.cat(y, v), x)):
            raise ReplayError('check `chk.same(chk.cat(x, u), y) and chk.same(chk.cat(y, v), x)` in _replay_pt_no does not hold')
    else:
        if wit.relation != "L":
            raise ReplayError('check `wit.relation == "L"` in _replay_pt_no does not hold')
        if not (chk.same(chk.cat(u, x), y) and chk.same(chk.cat(v, y), x)):
            raise ReplayError('check `chk.same(chk.cat(u, x), y) and chk.same(chk.cat(v, y), x)` in _replay_pt_no does not hold')
    chk.check_context(wit.context, x, y)


register(Decider("fo2", decide_fo2, (RegularIdempotent, Definite), (DAWitness,), _replay_fo2_yes, _replay_da_no))
register(Decider("fo2_mod", decide_fo2_mod, (StableRegularIdempotent,), (StableDAWitness,), _replay_fo2_mod_yes,
                 _replay_da_no))
register(Decider("piecewise_testable", decide_piecewise_testable, (JTrivial,), (GreenWitness,), _replay_pt_yes,
                 _replay_pt_no))
