"""One entry point: classify a regular language exactly and say which positional encoding suffices.

:func:`analyze` takes a DFA (any complete DFA; it is minimized), runs the polynomial automaton
tests, enumerates the syntactic monoid (within ``limits.max_monoid_size``), decides every class of
:data:`langclass.core.algebra.lattice.CLASS_INFO` with a certificate or witness, fills classes a limit left
open by the lattice inclusions where they decide them, asserts the lattice's consistency and the
agreement of independent tests, and chooses the encodings (:mod:`langclass.core.precision.encoding_choice`).

Example:
    >>> from langclass.core.automata.automaton import DFA
    >>> aa = DFA.from_table(["a"], [[1], [0]], 0, [0])          # (aa)*
    >>> r = analyze(aa)
    >>> r.classes["ltl_p_mod"].member, r.classes["ltl_p_mod"].period, r.classes["ltl_p"].member
    (True, 2, False)
    >>> r.encodings["soft"]["encoding"]
    'rope_periodic'
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.algebra.classes.definite import find_definite
from langclass.core.algebra.classes.implied import MOD_FREE, implied_period
from langclass.core.algebra.classes import (
    AUTOMATON_KEYS,
    DECIDERS,
    ClassResult,
    Context,
    find_counter_dfa,
    implied_result,
    ltl_p_y_delay,
    monoid_extras,
    render,
)
from langclass.core.precision.encoding_choice import DEFAULT_PARAMS, EncodingParams, choose_encodings
from langclass.core.base.errors import LimitExceeded
from langclass.core.algebra.lattice import CLASS_INFO, CLASS_KEYS, LatticeViolation, check_consistency, contained_in, implied_by
from langclass.core.base.limits import DEFAULT_LIMITS, Limits
from langclass.core.algebra.monoid import MAX_GROUPS_REPORTED, TransitionMonoid, monoid_summary, nontrivial_groups, transition_monoid
from langclass.core.algebra.monoid.groups import group_label
from langclass.core.base.wording import count_noun

__all__ = ["Analysis", "analyze", "format_table"]



@dataclass(frozen=True, eq=False)
class Analysis:
    """The full classification of one language.

    Attributes:
        dfa: the canonical minimal complete DFA.
        monoid: its transition monoid, or ``None`` when a limit stopped the enumeration.
        monoid_summary: JSON-ready summary (or ``{"error": {...}}``).
        classes: class key → :class:`~langclass.core.algebra.classes.ClassResult`.
        encodings: ``{"soft": {...}, "hard": {...}, "causal": {...}}`` (see :func:`~langclass.core.precision.encoding_choice.choose_encodings`).
        beyond: for languages outside FO[<,MOD] (= outside AC⁰): the group found in the stable
            semigroup and the circuit-complexity consequence (ACC⁰ or NC¹-complete); ``None`` for
            languages in AC⁰ — also when their monoid holds groups, which then all lie outside the
            stable semigroup. The groups of every language are in ``monoid_summary["nontrivial_groups"]``
            (the table prints them).
        extra: further facts (ground-truth ``extra`` names where they exist).
        timings_ms: wall-clock milliseconds per stage.
    """

    dfa: DFA
    monoid: TransitionMonoid | None
    monoid_summary: dict[str, Any]
    classes: dict[str, ClassResult]
    encodings: dict[str, dict[str, Any]]
    beyond: dict[str, Any] | None
    extra: dict[str, Any]
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def members(self) -> dict[str, bool | None]:
        return {k: r.member for k, r in self.classes.items()}

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready record the API and ``langclass classify --json`` return."""
        return {
            "num_states": self.dfa.num_states,
            "alphabet": list(self.dfa.alphabet),
            "fingerprint": self.dfa.fingerprint(),
            "monoid": self.monoid_summary,
            "classes": {k: r.to_dict() for k, r in self.classes.items()},
            "encodings": self.encodings,
            "beyond": self.beyond,
            "extra": self.extra,
            "timings_ms": self.timings_ms,
        }


def _limit_result(key: str, err: LimitExceeded) -> ClassResult:
    return ClassResult(key, None, f"undecided: {err.detail}", None, None, CLASS_INFO[key].source, "none",
                       error=err.to_dict())


_DECISION_ORDER: tuple[str, ...] = tuple(sorted(CLASS_KEYS, key=lambda k: -len(contained_in(k))))
"""The order the monoid's deciders run in: the classes with the most subclasses first (stable in
:data:`CLASS_KEYS` order), so that a non-member of a large class (the common case) answers all of
its subclasses through the lattice."""

_NOT_IMPLYING = frozenset({"crasp"})
"""Classes whose answers are never carried to another class: C-RASP's certificate is a whole
program (costly to replay) and its inclusions rest on the counting characterization, so a class it
would settle is decided by its own decider or through a textbook inclusion."""

_UP: dict[str, tuple[str, ...]] = {k: tuple(sorted((s for s in implied_by(k) if s not in _NOT_IMPLYING),
                                                   key=lambda s: -len(implied_by(s)))) for k in CLASS_KEYS}
"""Superclasses of each class that may carry a non-member answer, the smallest first (most superclasses of their own)."""

_DOWN: dict[str, tuple[str, ...]] = {k: tuple(sorted((s for s in contained_in(k) if s not in _NOT_IMPLYING),
                                                     key=lambda s: -len(contained_in(s)))) for k in CLASS_KEYS}
"""Subclasses of each class that may carry a member answer, the largest first (most subclasses of their own)."""


def _implying(key: str, results: Mapping[str, ClassResult], *, need_period: bool = True) -> str | None:
    """A class decided by its own decider whose answer the lattice carries to ``key``: the largest
    subclass that holds the language, else the smallest superclass that does not (an answer itself
    carried by the lattice is never the one named: its own implying class implies ``key`` too, and
    the evidence stays one level deep, as replay reads it). ``None`` when there is none — or, with
    ``need_period``, when the language is a member of ``ltl_p_y_mod`` only through a class whose
    inclusion does not fix the least period m (then its decider runs, to find m)."""
    for sub in _DOWN[key]:
        r = results.get(sub)
        if r is not None and r.member is True and r.method != "lattice":
            if need_period and key in MOD_FREE and implied_period(key, sub) != 1:
                continue  # the inclusion does not give the least period
            return sub
    for sup in _UP[key]:
        r = results.get(sup)
        if r is not None and r.member is False and r.method != "lattice":
            return sup
    return None


def analyze(dfa: DFA, limits: Limits = DEFAULT_LIMITS, *, params: EncodingParams = DEFAULT_PARAMS,
            cross_check: bool = False) -> Analysis:
    """Classify L(dfa) in every class of the lattice, with certificates, and choose the encodings.

    Args:
        dfa: a complete DFA (minimized and canonically renumbered here).
        limits: ``max_monoid_size`` (and ``max_monoid_entries`` if present) bound the monoid;
            ``time_limit_s`` bounds the whole analysis; ``max_states`` bounds the product automaton
            used to find the Y-offset of LTL[P,Y] languages.
        params: parameters of the conventional-RoPE certificate (angle g, scale C, dtype, max_length).
        cross_check: run every class's own decider. By default a class whose answer the lattice
            already carries from a decided class (a member of a subclass, a non-member of a
            superclass; the classes with the most subclasses are decided first) is answered
            through that inclusion with that class's evidence (``method`` ``"lattice"``; a replay
            checks the inclusion and the evidence). With ``cross_check`` every decider runs and
            :func:`~langclass.core.algebra.lattice.check_consistency` compares their answers
            (the tests run it on random languages; the answers are the same).

    Returns:
        :class:`Analysis`. Classes with polynomial automaton tests (LTL[P], LTL[P,MOD],
        stutter-invariance, group) are always decided; when the monoid exceeds its cap the algebraic
        classes are decided where the lattice implies them (or, for star-free, by a counter found on the
        DFA) and otherwise have ``member = None`` and the limit error.

    Raises:
        LatticeViolation: two answers contradict each other (a bug). A limit (size, work or
            ``time_limit_s``) never raises: it leaves the affected classes undecided with the error.
    """
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    deadline = limits.deadline()
    A = dfa.canonical()
    ctx = Context(A, None, limits, deadline)
    results: dict[str, ClassResult] = {}
    for key in AUTOMATON_KEYS:
        results[key] = DECIDERS[key](ctx)
    timings["automaton_tests"] = (time.perf_counter() - t_start) * 1e3

    t0 = time.perf_counter()
    monoid: TransitionMonoid | None = None
    monoid_error: LimitExceeded | None = None
    try:
        monoid = transition_monoid(A, limits, deadline=deadline)
    except LimitExceeded as err:  # includes TimeLimitExceeded
        monoid_error = err
    timings["monoid"] = (time.perf_counter() - t0) * 1e3

    t0 = time.perf_counter()
    ctx.monoid = monoid
    extra: dict[str, Any] = {"min_dfa_states": A.num_states}
    if monoid is not None:
        for key in _DECISION_ORDER:
            if key in results:
                continue
            if not cross_check and (by := _implying(key, results)) is not None:
                results[key] = implied_result(key, results[by].member, results[by])
                continue
            try:
                results[key] = DECIDERS[key](ctx)
            except LimitExceeded as err:
                results[key] = _limit_result(key, err)
        try:
            extra.update(monoid_extras(ctx))
        except LimitExceeded as err:  # the extra facts are optional; say which limit stopped them
            extra["error"] = err.to_dict()
        summary = monoid_summary(monoid)
    else:
        for key in CLASS_KEYS:
            if key in results:
                continue
            results[key] = _limit_result(key, monoid_error)
        counter = None
        try:
            counter = find_counter_dfa(A)
        except LimitExceeded:
            counter = None
        if counter is not None:
            results["star_free"] = ClassResult(
                "star_free", False,
                f"the word {_w(counter.word)} is a counter of the minimal DFA: q·w^{counter.m} = q ≠ q·w for "
                f"q = {counter.state} (found without the monoid, which is over its cap)",
                counter, counter, CLASS_INFO["star_free"].source, "automaton")
        definite = None
        try:
            definite = find_definite(A, deadline=deadline)
        except LimitExceeded:
            definite = None
        if definite is not None:
            what = ("the last" if definite.side == "suffix" else "the first")
            how = ("every word of length {k} maps all states of the minimal DFA to one state" if definite.side == "suffix"
                   else "every word of length {k} leads the initial state to a sink").format(k=definite.k)
            results["locally_testable"] = ClassResult(
                "locally_testable", True,
                f"membership of words of length ≥ {definite.k} depends on {what} {definite.k} letters only ({how}; found "
                "without the monoid, which is over its cap), so the language is locally testable",
                definite, None, CLASS_INFO["locally_testable"].source, "automaton")
            results["fo2"] = ClassResult(
                "fo2", True,
                f"the language is {'' if definite.side == 'suffix' else 'reverse '}{definite.k}-definite ({how}; found without "
                "the monoid), so every regular element of its syntactic monoid is idempotent (s·e = e, resp. e·s = e, "
                "for idempotents e): the monoid is in DA",
                definite, None, CLASS_INFO["fo2"].source, "automaton")
        summary = {"error": monoid_error.to_dict()}
    timings["algebraic_tests"] = (time.perf_counter() - t0) * 1e3

    # fill what the lattice implies for the classes a limit left undecided
    for key in CLASS_KEYS:
        if results[key].member is None and (by := _implying(key, results, need_period=False)) is not None:
            results[key] = implied_result(key, bool(results[by].member), results[by], error=results[key].error)
    members = {k: results[k].member for k in CLASS_KEYS}
    period = results["ltl_p_mod"].period
    check_consistency(members, period=period, monoid_size=monoid.size if monoid is not None else None,
                      period_y_mod=results["ltl_p_y_mod"].period)
    if monoid is not None and "r_trivial" in extra:
        # independent tests must agree: automaton vs algebra
        if extra["r_trivial"] != members["ltl_p"]:
            raise LatticeViolation("partially ordered minimal DFA disagrees with R-triviality of the monoid")
        if extra["stable_semigroup_r_trivial"] != members["ltl_p_mod"]:
            raise LatticeViolation("the SCC test for LTL[P,MOD] disagrees with R-triviality of the stable semigroup")
        if (monoid.size == 1 or not (monoid.elements[monoid.letter_ids] != np.arange(A.num_states)).any()) and not members["group"]:
            raise LatticeViolation("a trivial monoid must be a group")

    t0 = time.perf_counter()
    delay = None
    if members["ltl_p_y"] is True and members["ltl_p"] is not True and members["ltl_p_mod"] is not True:
        cap = min(limits.max_states, 200_000)
        try:
            delay = ltl_p_y_delay(A, max_states=cap, deadline=deadline)
            if delay is None:  # beyond the usual bound k ≤ n: search further while the product stays small
                delay = ltl_p_y_delay(A, max_k=A.num_states ** 2, max_states=cap, min_k=A.num_states + 1,
                                      deadline=deadline)
        except LimitExceeded as err:  # the delay is optional: the encoding then says it is unknown
            delay = None
            extra["ltl_p_y_delay_error"] = err.to_dict()
    if members["ltl_p"] is True:
        delay = 0
    extra["ltl_p_y_delay"] = delay if members["ltl_p_y"] else None
    extra["min_k"] = period
    extra["partially_ordered_min_dfa"] = members["ltl_p"]
    extra["counter_free_min_dfa"] = members["star_free"]
    if monoid is not None:
        extra["syntactic_monoid_size"] = monoid.size
        extra["stability_index"] = monoid.stability_index
        extra["stable_semigroup_size"] = monoid.stable_size
    least_mod = None
    if members.get("fo_mod") is True and members.get("star_free") is False:
        from langclass.core.synthesis.fo_mod import least_modulus

        try:
            least_mod = least_modulus(A, monoid).modulus
        except LimitExceeded:
            least_mod = None  # the answer falls back to the stability index
    y_mod = results["ltl_p_y_mod"]
    period_y_mod = y_mod.period
    if period_y_mod is None and y_mod.member is True:  # implied through the lattice: 1 from LTL[P,Y], else k
        period_y_mod = 1 if members["ltl_p_y"] is True else period
    outside = ({"reason": y_mod.reason, "witness": y_mod.witness.to_dict() if y_mod.witness is not None else None}
               if y_mod.member is False else None)
    cr = results["crasp"]
    encodings = choose_encodings(members, period=period, delay=delay,
                                 stability_index=monoid.stability_index if monoid is not None else None,
                                 modulus=least_mod, params=params, period_y_mod=period_y_mod, outside_y_mod=outside,
                                 crasp_depth=getattr(cr.certificate, "depth", None) if cr.member else None,
                                 outside_crasp=({"reason": cr.reason, "witness": cr.witness.to_dict()
                                                 if cr.witness is not None else None} if cr.member is False else None))
    timings["encodings"] = (time.perf_counter() - t0) * 1e3

    beyond = None
    if members["fo_mod"] is False and monoid is not None:
        groups_T = nontrivial_groups(monoid, within=monoid.stable, limit=0)
        all_groups = nontrivial_groups(monoid, limit=0)
        solvable = all(gi.solvable for gi in all_groups)
        G = groups_T[0]
        gd = G.to_dict()
        gd["generator_words"] = [list(monoid.stable_word(h)) for h in G.generators]
        beyond = {
            "group": gd,
            "stable_semigroup_groups": [g.to_dict() for g in groups_T[:MAX_GROUPS_REPORTED]],
            "all_groups_solvable": solvable,
            "complexity": ("ACC⁰ (every group in the syntactic monoid is solvable; Barrington & Thérien 1988)"
                           if solvable else
                           "NC¹-complete (the syntactic monoid contains a non-solvable group; Barrington 1989)"),
            "reason": f"the stable semigroup η(Σ^{monoid.stability_index}) contains the {group_label(G.name, G.order)}, "
                      "so the language is not in AC⁰ (Barrington, Compton, Straubing & Thérien 1992)",
        }
    elif members["fo_mod"] is False:
        beyond = {"group": None, "reason": "not in FO[<,MOD]; the group is not reported because the monoid is over its cap"}
    timings["total"] = (time.perf_counter() - t_start) * 1e3
    ordered = {k: results[k] for k in CLASS_KEYS}
    return Analysis(A, monoid, summary, ordered, encodings, beyond, extra, {k: round(v, 3) for k, v in timings.items()})


# ============================================================================ text table


def _w(word) -> str:
    if word is None:
        return "—"
    word = list(word)
    if not word:
        return "ε"
    return "".join(word) if all(len(s) == 1 for s in word) else "·".join(word)


def format_table(analysis: Analysis, state_names: Mapping[int, Sequence[str]] | None = None) -> str:
    """A plain-text table of the classes (member, reason, certificate or witness) and the encoding answer.

    ``state_names``: ``{canonical state: user names}`` of a DFA input
    (:func:`langclass.core.drawing.svg.user_state_names`); then the table says which canonical state each
    name became and shows the evidence's states in the user's names, the canonical number alongside
    (reasons keep the canonical numbers)."""
    a = analysis
    lines = [f"minimal DFA: {count_noun(a.dfa.num_states, 'state')} over {{{', '.join(a.dfa.alphabet)}}}"]
    if state_names:
        lines.append("your state names: " + "; ".join(f"{', '.join(ns)} → canonical {q}"
                                                       for q, ns in sorted(state_names.items())))
    ms = a.monoid_summary
    if "error" in ms:
        lines.append(f"syntactic monoid: not enumerated ({ms['error'].get('detail')})")
    else:
        lines.append(f"syntactic monoid: {count_noun(ms['size'], 'element')} (semigroup {ms['semigroup_size']}), "
                     f"{count_noun(ms['idempotents'], 'idempotent')}, {count_noun(ms['d_classes'], 'D-class', 'D-classes')}, "
                     f"stability index s = {ms['stability_index']}, "
                     f"stable semigroup {count_noun(ms['stable_semigroup_size'], 'element')}")
    lines.append("")
    w1 = max(len(CLASS_INFO[k].name) for k in a.classes) + 2
    lines.append(f"{'class':<{w1}}{'member':<8}reason")
    lines.append("-" * (w1 + 8 + 60))
    for key, r in a.classes.items():
        mem = {True: "yes", False: "no", None: "?"}[r.member]
        name = CLASS_INFO[key].name
        if key == "ltl_p_mod" and r.period:
            mem = f"yes k={r.period}"
        if key == "ltl_p_y_mod" and r.period:
            mem = f"yes m={r.period}"
        lines.append(f"{name:<{w1}}{mem:<8}{r.reason}")
        ev = render(r, state_names=state_names)
        if ev:
            lines.append(f"{'':<{w1}}{'':<8}{'certificate' if r.member else 'witness'}: {ev}")
    lines.append("")
    lines.append("encodings:")
    for fam in ("soft", "hard", "causal"):
        e = a.encodings.get(fam)
        if e is None:  # a record of an earlier version
            continue
        thm = f" — {e['theorem']}" if e.get("theorem") else ""
        guarantee = "" if e["length_guarantee"] in e["name"] else f" [{e['length_guarantee']}]"
        lines.append(f"  {fam}: {e['name']}{guarantee}{thm}")
        if e.get("setting"):
            lines.append(f"  {'':<{len(fam)}}  setting: {e['setting']}")
        for alt in e.get("alternatives") or []:  # e.g. recency heads beside conventional RoPE for LTL[P,Y]
            label = alt.get("name") or f"{alt['encoding']} ({', '.join(f'{k} {v}' for k, v in alt.get('parameters', {}).items())})"
            lines.append(f"  {'':<{len(fam)}}  or: {label}" + (f" — {alt['theorem']}" if alt.get("theorem") and not alt.get("name") else ""))
    groups = ms.get("nontrivial_groups") or []
    if groups and not a.beyond:
        names = ", ".join(f"{g['name']}" for g in groups[:5]) + (" …" if len(groups) > 5 else "")
        lines.append(f"groups: {names} in the syntactic monoid, none in the stable semigroup η(Σ^{ms['stability_index']}) "
                     "(so the language is in AC⁰)" if a.classes["fo_mod"].member else f"groups: {names} in the syntactic monoid")
    if a.beyond:
        g = a.beyond.get("group")
        if g:
            lines.append(f"beyond AC⁰: {group_label(g['name'], g['order'])}, generators "
                         f"{', '.join(_w(w) for w in g['generator_words'])}; {a.beyond.get('complexity')}")
        else:
            lines.append(f"beyond AC⁰: {a.beyond['reason']}")
    return "\n".join(lines)
