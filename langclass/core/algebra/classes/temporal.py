"""The unary-temporal family decided on C-orbits: LTL[P,Y,MOD], FO²[<,+1], FO²[<,+1,MOD] and the future logics.

Each class is PL(C), FL(C) or TL(C) for a gap class C (:mod:`langclass.core.algebra.orbits`;
T. Place & M. Zeitoun, "A generic characterization of generalized unary temporal logic and
two-variable first-order logic", CSL 2024): every C-orbit of the syntactic morphism is R-trivial,
L-trivial, resp. in DA.

=================  ========================  ===========  ==========================================
key                logic                     C, side      orbits
=================  ========================  ===========  ==========================================
``ltl_p_y_mod``    LTL[P,Y,MOD]              MOD⁺, past   e·K_m·e R-trivial (``period`` = least m)
``fo2_succ``       FO²[<,+1]                 DD, both     e·M·e in DA (LDA)
``fo2_succ_mod``   FO²[<,+1,MOD]             MOD⁺, both   e·K_m·e in DA (QLDA)
``ltl_f``          LTL[F]                    ST, future   M L-trivial
``ltl_f_x``        LTL[F,X]                  DD, future   e·M·e L-trivial
``ltl_f_mod``      LTL[F,MOD]                MOD, future  K_m L-trivial
``ltl_f_x_mod``    LTL[F,X,MOD]              MOD⁺, future e·K_m·e L-trivial
=================  ========================  ===========  ==========================================

A member's certificate lists the orbits checked (one idempotent per D-class, as a word, with the
orbit's size), the least modulus m and the monoid as words; a replay recomputes the verdict and the
least modulus on the DFA with the classification's own engines (the transition monoid and the
orbit engine: the orbits of one idempotent per D-class at every modulus up to m), whatever the
certificate lists or leaves out, and compares every listed idempotent, orbit size, the count of
orbits and the ``truncated`` flag with them. A non-member's witness is elements of one orbit —
x ≠ y R- (or L-) equivalent inside it, or x, y breaking (xy)^ω x (xy)^ω = (xy)^ω — as words of
length ≡ 0 (mod the stable modulus s); a replay checks on the DFA alone that η(Σ^s) = η(Σ^{2s})
(s recomputed: the modulus must be it; so those words lie in every MOD_m-kernel), that each word w satisfies η(e·w·e) = η(w) (it lies in
the orbit of e) and the relation itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from langclass.core.algebra.orbits import CLASS_OF, OrbitEngine, UnaryTemporal
from ..lattice import CLASS_INFO
from .aperiodic import need_monoid
from .base import CERT_LIST_MAX, ClassResult, Decider, Evidence, make_result, register, show, words
from .context import Context
from .evidence import MonoidWords, Separation, monoid_words
from .replaykit import Checker, ReplayError
from langclass.core.base.wording import count_noun

__all__ = ["TEMPORAL_KEYS", "OrbitSummary", "OrbitCertificate", "OrbitGreenWitness", "OrbitDAWitness",
           "decide_unary_temporal", "orbit_engine"]

TEMPORAL_KEYS: tuple[str, ...] = ("ltl_p_y_mod", "fo2_succ", "fo2_succ_mod", "ltl_f", "ltl_f_x", "ltl_f_mod",
                                  "ltl_f_x_mod")
"""The classes this module decides (the other five of :data:`~langclass.core.algebra.orbits.CLASS_OF`
keep their specialized deciders, which the orbit engine is tested against)."""

_PROPERTY = {"past": "R-trivial", "future": "L-trivial", "both": "in DA"}
_GAP_NAME = {"ST": "ST", "DD": "DD", "MOD": "MOD", "MOD+": "MOD⁺"}
_LOGIC_OF_SIDE = {"past": "PL", "future": "FL", "both": "TL"}


@dataclass(frozen=True)
class OrbitSummary(Evidence):
    """One checked orbit: the idempotent e as a word and |e·K_m·e|."""

    e: tuple[str, ...]
    size: int


@dataclass(frozen=True)
class OrbitCertificate(Evidence):
    """Every C-orbit at modulus ``period`` has the property; ``orbits`` one per D-class of idempotents."""

    CHECK = ("with the monoid's words: K_m (elements with an antecedent of length ≡ 0 mod m, m = period) and the orbit "
             "e·K_m·e of every idempotent concerned are recomputed; each is R-trivial / L-trivial / in DA by products "
             "inside it, the listed idempotents are one per D-class with the listed orbit sizes, and every smaller "
             "modulus fails")
    gap: str
    side: str
    period: int
    orbits: tuple[OrbitSummary, ...]
    truncated: bool
    monoid: MonoidWords | None = None


@dataclass(frozen=True)
class OrbitGreenWitness(Evidence):
    """x ≠ y in the C-orbit of e, R-equivalent inside it (x·u = y, y·v = x; ``relation`` "R") or
    L-equivalent (u·x = y, v·y = x; "L"); x, y, u, v are words of length ≡ 0 (mod ``modulus``)."""

    CHECK = ("η(Σ^modulus) = η(Σ^{2·modulus}) (so words of length ≡ 0 mod modulus lie in every MOD_m-kernel; modulus 1 "
             "for ST, DD), e is idempotent (nonempty for DD, MOD⁺), each of x, y, u, v has length ≡ 0 (mod modulus) and "
             "η(e·w·e) = η(w), x·u = y and y·v = x (R) or u·x = y and v·y = x (L), and the context separates x ≠ y")
    gap: str
    side: str
    relation: str
    modulus: int
    e: tuple[str, ...]
    x: tuple[str, ...]
    y: tuple[str, ...]
    u: tuple[str, ...]
    v: tuple[str, ...]
    context: Separation


@dataclass(frozen=True)
class OrbitDAWitness(Evidence):
    """x, y in the C-orbit of e with (xy)^ω·x·(xy)^ω ≠ (xy)^ω (words of length ≡ 0 mod ``modulus``)."""

    CHECK = ("η(Σ^modulus) = η(Σ^{2·modulus}), e is idempotent (nonempty for DD, MOD⁺), x and y have length ≡ 0 (mod "
             "modulus) and lie in e·M·e, xy_omega = (xy)^ω, lhs = (xy)^ω x (xy)^ω, and the context separates lhs ≠ xy_omega")
    gap: str
    side: str
    modulus: int
    e: tuple[str, ...]
    x: tuple[str, ...]
    y: tuple[str, ...]
    xy_omega: tuple[str, ...]
    lhs: tuple[str, ...]
    context: Separation


# ============================================================================ decide


def orbit_engine(ctx: Context) -> OrbitEngine:
    """The :class:`~langclass.core.algebra.orbits.OrbitEngine` of the context's monoid, shared by the deciders."""
    eng = ctx.__dict__.get("_orbit_engine")
    if eng is None:
        eng = OrbitEngine(need_monoid(ctx), ctx.deadline, mult_table=lambda: ctx.table_if_built(1))
        ctx.__dict__["_orbit_engine"] = eng
    return eng


def _e_word(M, e: int, plus: bool) -> tuple[str, ...]:
    if e != 0:
        return words(M.word(e))
    return words(M.identity_word_plus) if plus else ()


def _kword(M, v: UnaryTemporal, x: int) -> tuple[str, ...]:
    a = M.dfa.alphabet
    return tuple(a[i] for i in v.kernel.word(x))


def decide_unary_temporal(ctx: Context, key: str) -> ClassResult:
    """Decide one of :data:`TEMPORAL_KEYS` on the C-orbits (see the module docstring).

    Raises:
        LimitExceeded: ``orbit_work`` (:data:`~langclass.core.algebra.orbits.ORBIT_WORK_BUDGET`).
        TimeLimitExceeded: the deadline passed.
    """
    gap, side = CLASS_OF[key]
    M = need_monoid(ctx)
    v = orbit_engine(ctx).decide(gap, side)
    plus = gap in ("DD", "MOD+")
    cname = f"{_LOGIC_OF_SIDE[side]}({_GAP_NAME[gap]})"
    prop = _PROPERTY[side]
    if v.member:
        lst = [OrbitSummary(_e_word(M, o.idempotent, plus), len(o.elements)) for o in v.orbits]
        cut = len(lst) > CERT_LIST_MAX
        cert = OrbitCertificate(gap, side, int(v.period), tuple(lst[:CERT_LIST_MAX]), cut, monoid_words(M))
        kern = "K" if gap in ("ST", "DD") else f"K_{v.period}"
        how = (f"for m = {v.period} (and no smaller m) " if gap in ("MOD", "MOD+") else "")
        sizes = ", ".join(str(len(o.elements)) for o in v.orbits[:4]) + (" …" if len(v.orbits) > 4 else "")
        reason = (f"every {_GAP_NAME[gap]}-orbit e·{kern}·e of the syntactic morphism is {prop} {how}"
                  f"({count_noun(len(v.orbits), 'orbit')} checked, one idempotent per D-class, of sizes {sizes}), "
                  f"so the language is in {CLASS_INFO[key].name} = {cname}")
        return make_result(key, True, reason, cert, None, period=int(v.period) if key == "ltl_p_y_mod" else None)
    w = v.witness
    assert w is not None
    ew = _e_word(M, w.idempotent, plus)
    mod_txt = (f"; the words have lengths ≡ 0 mod the stable modulus {v.modulus}, whose kernel lies in every "
               f"MOD_m-kernel, so no modulus m helps" if gap in ("MOD", "MOD+") else "")
    if w.relation == "DA":
        wit = OrbitDAWitness(gap, side, v.modulus, ew, _kword(M, v, w.x), _kword(M, v, w.y), _kword(M, v, w.u),
                             _kword(M, v, w.v), ctx.element_context(w.v, w.u))
        reason = (f"in the {_GAP_NAME[gap]}-orbit of e = η({show(ew)}), x = η({show(wit.x)}) and y = η({show(wit.y)}) "
                  f"violate (xy)^ω x (xy)^ω = (xy)^ω, so the orbit is not in DA and the language is not in {CLASS_INFO[key].name} = {cname}{mod_txt}")
        return make_result(key, False, reason, wit, wit)
    wit = OrbitGreenWitness(gap, side, w.relation, v.modulus, ew, _kword(M, v, w.x), _kword(M, v, w.y),
                            _kword(M, v, w.u), _kword(M, v, w.v), ctx.element_context(w.x, w.y))
    rel = "x·u = y and y·v = x" if w.relation == "R" else "u·x = y and v·y = x"
    reason = (f"in the {_GAP_NAME[gap]}-orbit of e = η({show(ew)}), x = η({show(wit.x)}) ≠ y = η({show(wit.y)}) are "
              f"{w.relation}-equivalent ({rel} with u, v in the orbit), so the orbit is not {prop} and the language "
              f"is not in {CLASS_INFO[key].name} = {cname}{mod_txt}")
    return make_result(key, False, reason, wit, wit)


# ============================================================================ replay


def _check_header(ev, key: str) -> None:
    gap, side = CLASS_OF[key]
    if (ev.gap, ev.side) != (gap, side):
        raise ReplayError(f"the evidence is for {ev.gap}/{ev.side}, but {key} is {gap}/{side}")


def _check_modulus(chk: Checker, gap: str, modulus: int) -> None:
    """The witness's modulus is the stable modulus s recomputed on the DFA (1 for ST and DD): the
    least s ≥ 1 with η(Σ^s) = η(Σ^{2s}), from the levels η(Σ^j) of the replay's own closure (so an
    extreme modulus costs nothing)."""
    if modulus < 1:
        raise ReplayError("the modulus must be ≥ 1")
    if gap in ("ST", "DD"):
        if modulus != 1:
            raise ReplayError(f"the gap class {gap} has modulus 1")
        return
    s, _ = chk.closure().levels()
    if modulus != s:
        raise ReplayError(f"the stable modulus is s = {s} (least s ≥ 1 with η(Σ^s) = η(Σ^2s)), not {modulus}")


def _check_e(chk: Checker, gap: str, e) -> None:
    if gap in ("DD", "MOD+"):
        chk.idempotent_word(e)
    elif not chk.same(chk.cat(e, e), e):
        raise ReplayError(f"{list(e)} is not an idempotent word")


def _in_orbit(chk: Checker, e, w, modulus: int, name: str) -> None:
    if len(w) % modulus:
        raise ReplayError(f"|{name}| = {len(w)} is not ≡ 0 (mod {modulus})")
    if not chk.same(chk.cat(e, w, e), w):
        raise ReplayError(f"{name} is not in the orbit of e (η(e·{name}·e) ≠ η({name}))")


def _replay_no(key: str):
    def replay(chk: Checker, wit: OrbitGreenWitness | OrbitDAWitness) -> None:
        _check_header(wit, key)
        _check_modulus(chk, wit.gap, wit.modulus)
        _check_e(chk, wit.gap, wit.e)
        if isinstance(wit, OrbitDAWitness):
            if wit.side != "both":
                raise ReplayError("a DA violation refutes TL(C) only")
            for name in ("x", "y"):
                _in_orbit(chk, wit.e, getattr(wit, name), wit.modulus, name)
            f = chk.omega(chk.cat(wit.x, wit.y))
            if not chk.same(f, wit.xy_omega):
                raise ReplayError("xy_omega is not (xy)^ω")
            lhs = chk.cat(f, wit.x, f)
            if not chk.same(lhs, wit.lhs):
                raise ReplayError("lhs is not (xy)^ω x (xy)^ω")
            if chk.same(lhs, f):
                raise ReplayError("(xy)^ω x (xy)^ω = (xy)^ω: no violation")
            chk.check_context(wit.context, lhs, f)
            return
        expected = {"past": "R", "future": "L"}.get(wit.side)
        if wit.relation != expected:
            raise ReplayError(f"{wit.side} needs an {expected}-relation witness, not {wit.relation!r}")
        for name in ("x", "y", "u", "v"):
            _in_orbit(chk, wit.e, getattr(wit, name), wit.modulus, name)
        x, y, u, v = wit.x, wit.y, wit.u, wit.v
        if wit.relation == "R":
            ok = chk.same(chk.cat(x, u), y) and chk.same(chk.cat(y, v), x)
        else:
            ok = chk.same(chk.cat(u, x), y) and chk.same(chk.cat(v, y), x)
        if not ok:
            raise ReplayError(f"x and y are not {wit.relation}-equivalent through u and v")
        chk.check_context(wit.context, x, y)

    return replay


def _violation_text(M, key: str, v: UnaryTemporal) -> str:
    """The recomputed violation of a non-member, for a refusal message."""
    w = v.witness
    assert w is not None
    plus = v.gap in ("DD", "MOD+")
    e = show(_e_word(M, w.idempotent, plus))
    kern = "" if v.gap in ("ST", "DD") else f" at the stable modulus {v.modulus}"
    if w.relation == "DA":
        what = (f"x = η({show(_kword(M, v, w.x))}), y = η({show(_kword(M, v, w.y))}) violate (xy)^ω x (xy)^ω = (xy)^ω "
                "(the orbit is not in DA)")
    else:
        what = (f"x = η({show(_kword(M, v, w.x))}) ≠ y = η({show(_kword(M, v, w.y))}) are {w.relation}-equivalent "
                f"(the orbit is not {_PROPERTY[v.side]})")
    return (f"recomputed on the DFA, the language is not in {CLASS_INFO[key].name}: in the orbit of e = η({e}){kern}, "
            f"{what}")


def _check_monoid_words(M, mw: MonoidWords) -> None:
    """A certificate's listed words are exactly the monoid's shortlex tree."""
    if len(mw.parents) != len(mw.letters):
        raise ReplayError("parents and letters differ in length")
    if len(mw.parents) + 1 != M.size:
        raise ReplayError(f"the certificate lists {len(mw.parents) + 1} elements; the monoid has {M.size}")
    alpha = M.dfa.alphabet
    if (tuple(mw.parents) != tuple(M.parent[1:].tolist())
            or tuple(mw.letters) != tuple(alpha[int(a)] for a in M.last_letter[1:].tolist())):
        raise ReplayError("the certificate's words are not the monoid's shortlex-least words")


def _replay_yes(key: str):
    def replay(chk: Checker, cert: OrbitCertificate) -> None:
        """The verdict, the least period and the orbits are recomputed on the DFA with the classification's
        own engines (the transition monoid and the orbit engine, see
        :meth:`~langclass.core.algebra.classes.replaykit.Checker.orbit_engine`), whatever the
        certificate lists or leaves out; then every stated figure is compared with them."""
        _check_header(cert, key)
        gap, side = cert.gap, cert.side
        if cert.period < 1 or (gap in ("ST", "DD") and cert.period != 1):
            raise ReplayError(f"the period {cert.period} is not a modulus of {gap}")
        M = chk.transition_monoid()
        if cert.monoid is not None:
            _check_monoid_words(M, cert.monoid)
        v = chk.orbit_engine().decide(gap, side)
        if not v.member:
            raise ReplayError(_violation_text(M, key, v))
        if cert.period != v.period:
            if cert.period > v.period:
                raise ReplayError(f"the smaller modulus {v.period} works too: {cert.period} is not the least")
            raise ReplayError(f"at modulus {cert.period} some orbit is not {_PROPERTY[side]}: the least modulus is "
                              f"{v.period}, not {cert.period}")
        reps = v.orbits
        if cert.truncated != (len(reps) > CERT_LIST_MAX):
            raise ReplayError(f"there are {len(reps)} D-classes of idempotents to check: truncated is "
                              f"{len(reps) > CERT_LIST_MAX}")
        if len(cert.orbits) != min(len(reps), CERT_LIST_MAX):
            raise ReplayError(f"{len(cert.orbits)} orbits listed, but there are {len(reps)} D-classes of "
                              "idempotents to check")
        J = M.green["J"]
        rep_classes = {int(J[o.idempotent]) for o in reps}
        eng, seen = chk.orbit_engine(), set()
        for o in cert.orbits:
            _check_e(chk, gap, o.e)
            e = M.element_of_word(o.e)
            if not M.idempotent[e] or int(J[e]) not in rep_classes:
                raise ReplayError(f"the word {list(o.e)} is not an idempotent whose orbit is checked")
            if int(J[e]) in seen:
                raise ReplayError("two listed idempotents lie in one D-class")
            seen.add(int(J[e]))
            size = int(eng.orbit(e, v.kernel).size)
            if size != o.size:
                raise ReplayError(f"the orbit of {list(o.e)} has {size} elements, not {o.size}")

    return replay


def _decider(key: str):
    def decide(ctx: Context) -> ClassResult:
        return decide_unary_temporal(ctx, key)

    decide.__name__ = f"decide_{key}"
    decide.__doc__ = f"{key}: see :func:`decide_unary_temporal`."
    return decide


for _key in TEMPORAL_KEYS:
    register(Decider(_key, _decider(_key), (OrbitCertificate,), (OrbitGreenWitness, OrbitDAWitness),
                     _replay_yes(_key), _replay_no(_key)))
