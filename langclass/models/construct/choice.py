"""What a construction builds: the formula by its language's class, the non-strict mask, the plan
and its parameter budget (the decisions :func:`langclass.models.construct.verify.run_construction` takes
between parsing its input and assembling the model).

* :func:`language_class` — the least class of the language among LTL[P], LTL[P,MOD], LTL[P,Y]
  (*Disentangling the Expressivity of RoPE*: NoPE, periodic RoPE, conventional RoPE), star-free and
  FO[<,MOD] (*Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages*), decided
  on the minimal DFA and its monoid by the classifier's deciders;
* :func:`by_class` — a formula whose fragment needs a stronger model than its language's class (e.g.
  ``P(b & Y a)`` over {a, b}: fragment LTL[P,Y], language in LTL[P]) is replaced by the synthesized
  formula of the class;
* :func:`nonstrict` — the non-strict-mask program of a stutter-invariant star-free language (*Masked
  Hard-Attention Transformers …*, Thm 18; :mod:`langclass.core.logic.brasp_nonstrict`);
* :func:`plan_model` — the plan (no tensor) and its size, refused over the parameter budget.
"""

from __future__ import annotations

from typing import Any

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded, UnsupportedError
from langclass.core.base.limits import Limits
from langclass.core.logic import formulas as F
from langclass.core.logic.brasp import Program

__all__ = ["MASK_CHOICES", "NONSTRICT_NARROW_WIDTH", "language_class", "by_class", "nonstrict", "nonstrict_route", "unbuilt_formula_to_candidate",
           "plan_model"]

MASK_CHOICES = ("strict", "nonstrict")
"""Hard-attention masks a construction may use: strict (j < i, every star-free language, Thm 17) or
non-strict (j ≤ i / j ≥ i only, stutter-invariant star-free languages, Thm 18)."""

NONSTRICT_NARROW_WIDTH = 7
"""Expression width the non-strict program is narrowed to (:func:`narrow_program`): its shift
combinations make wide disjunctions whose cube expansion dominates the size at the default width
(e.g. (a|b|c)*ab(a|b|c)* by local divisors: 4.2 M parameters at width 12, 0.34 M at 8, 0.23 M at 7,
0.24 M at 6). Measured over the 15 stutter-invariant star-free ground-truth languages and both
routes, width 7 is never larger than 6 and every other width tried (6, 8, 10) is larger somewhere."""

_SOFT_RANK = {"Boolean": 0, "LTL[P]": 0, "LTL[P,MOD]": 1, "LTL[P,Y]": 2, "LTL[P,Y,MOD]": 3, "LTL[S]": 4, "LTL[S,MOD]": 5}
"""Order of the formula fragments by the model they need: NoPE, periodic RoPE (all lengths),
conventional RoPE (up to N_max), both, hard attention, hard attention with marks."""



def language_class(dfa: DFA, limits: Limits) -> str | None:
    """The least class of the language among LTL[P], LTL[P,MOD], LTL[P,Y] (the soft-attention
    classes, in the order of the model they need), star-free and FO[<,MOD]; ``"none of these"``
    outside them; None when a limit left a decision open."""
    from langclass.core.algebra.classes.aperiodic import decide_fo_mod, decide_star_free
    from langclass.core.algebra.classes.context import Context
    from langclass.core.algebra.classes.local import decide_ltl_p_y
    from langclass.core.algebra.classes.ordered import decide_ltl_p, decide_ltl_p_mod

    from langclass.core.algebra.monoid import transition_monoid

    try:
        deadline = limits.deadline()
        A = dfa.canonical()
        ctx = Context(A, transition_monoid(A, limits, deadline=deadline), limits, deadline)
        for name, decide in (("LTL[P]", decide_ltl_p), ("LTL[P,MOD]", decide_ltl_p_mod), ("LTL[P,Y]", decide_ltl_p_y),
                             ("star-free", decide_star_free), ("FO[<,MOD]", decide_fo_mod)):
            member = decide(ctx).member
            if member is None:
                return None
            if member:
                return name
    except LimitExceeded:
        return None
    return "none of these"


_CLASS_RANK = {"LTL[P]": 0, "LTL[P,MOD]": 1, "LTL[P,Y]": 2, "star-free": 4, "FO[<,MOD]": 5}


def by_class(formula: F.Formula, dfa: DFA, language_class: str | None, limits: Limits):
    """The synthesis of the formula's language when its class needs a weaker model than the formula's
    fragment (e.g. ``P(b & Y a)``, fragment LTL[P,Y], defines an LTL[P] language: NoPE at every length
    instead of conventional RoPE up to N_max); None to build the formula as written."""
    from langclass.core.synthesis.synthesis import synthesize

    rank = _SOFT_RANK.get(F.fragment(formula), 6)
    if language_class not in _CLASS_RANK or _CLASS_RANK[language_class] >= min(rank, 3):
        return None
    try:
        synthesis = synthesize(dfa, limits)
    except (UnsupportedError, LimitExceeded):
        return None
    return synthesis if _SOFT_RANK.get(synthesis.fragment, 6) < rank else None


def nonstrict(program: Program, dfa: DFA | None, limits: Limits) -> Program:
    """The non-strict program of a star-free stutter-invariant language (Thm 18): refused with the
    stutter witness when the language is not stutter-invariant."""
    from langclass.core.algebra.classes.context import Context
    from langclass.core.algebra.classes.letters import decide_stutter_invariant
    from langclass.core.logic.brasp_nonstrict import nonstrict_program
    from langclass.core.logic.brasp_width import narrow_program

    if dfa is None:
        raise InputError("mask 'nonstrict' needs the language (a regex or a DFA beside the program) to check that it "
                         "is stutter-invariant", field="options.mask")
    si = decide_stutter_invariant(Context(dfa, limits=limits))
    if not si.member:
        raise UnsupportedError(f"mask 'nonstrict' recognizes exactly the stutter-invariant star-free languages (Masked "
                               f"Hard-Attention Transformers Recognize Exactly the Star-Free Languages, Thm 18), and this "
                               f"language is not stutter-invariant: {si.reason}", field="options.mask")
    return narrow_program(nonstrict_program(program), width=NONSTRICT_NARROW_WIDTH, deadline=limits.deadline())


def nonstrict_route(first: Any, dfa: DFA, formula: F.Formula | None, route: str, limits: Limits, cascade: Any = None):
    """The route choice of a non-strict-mask model: the Thm 18 rewrite multiplies the routes'
    sizes by different factors (Tomita 7: cascade 17,530 → 335,275 parameters, local divisors
    2,377-parameter soft formula → 200,979), so under ``route="auto"`` both candidates are rewritten
    and planned and the smaller is kept.

    Args:
        first: the strict :class:`~langclass.models.construct.route.RouteChoice`.
        dfa, formula: the language and its local-divisor formula (None: the cascade only).
        route: the ``route`` option; only ``"auto"`` compares.
        limits: as everywhere; cascade: the cascade already planned (or None).

    Returns:
        A :class:`~langclass.models.construct.route.RouteChoice` whose program is the non-strict
        program and whose candidates give each route's sizes after the rewrite (``"mask":
        "nonstrict"``).

    Raises:
        InputError, UnsupportedError: from :func:`nonstrict` (not stutter-invariant).
    """
    from langclass.models.construct.brasp_plan import plan_brasp
    from langclass.models.construct.route import RouteChoice, choose_hard_route, planned_parameters

    choices = {first.route: first}
    other = "local-divisors" if first.route == "cascade" else "cascade"
    if route == "auto" and (formula is not None or other == "cascade"):
        try:
            choices[other] = choose_hard_route(dfa, formula if other == "local-divisors" else None, dfa.alphabet,
                                               route=other, limits=limits, cascade=cascade)
        except (UnsupportedError, LimitExceeded):
            pass  # the strict chooser recorded why this route has no program
    built = {}
    for name, c in choices.items():
        program = nonstrict(c.program, dfa, limits)
        built[name] = (c, program, plan_brasp(program, limits.deadline()))
    candidates = dict(first.candidates)
    for name, (_, _, plan) in built.items():
        s = plan.summary()
        candidates[name] = {"d_model": s["d_model"], "layers": s["layers"], "heads": s["heads"],
                            "parameters": planned_parameters(plan), "planned": True, "mask": "nonstrict",
                            "strict": first.candidates.get(name)}
    best = min(built, key=lambda r: (candidates[r]["parameters"], r != "cascade"))
    c, program, plan = built[best]
    return RouteChoice(best, program, plan, candidates, c.cascade or first.cascade)


def plan_model(prep: dict) -> tuple[Any, dict[str, Any]]:
    """The model's plan (no tensor) and its size; :class:`LimitExceeded` ``max_parameters`` over the budget."""
    from langclass.models.construct.brasp_plan import plan_brasp
    from langclass.models.construct.plan import plan_formula
    from langclass.models.construct.size import check_parameter_budget

    choice = prep.get("route_choice")
    if prep["attention"] == "soft":
        plan = plan_formula(prep["formula"], prep["alphabet"], prep["copt"])
    elif choice is not None and choice.program is prep["program"]:
        plan = choice.plan  # the route chooser planned this very program (the non-strict rewrite did not replace it)
    else:
        plan = plan_brasp(prep["program"])
    return plan, check_parameter_budget(plan, Limits(max_parameters=prep["max_parameters"]))


def unbuilt_formula_to_candidate(result: dict[str, Any]) -> None:
    """When the cascade route was built, move the local-divisor formula — synthesized to compare the
    routes, then not built — from the record's ``formula``, ``fragment`` and ``synthesis`` to its
    candidate (``route.candidates["local-divisors"]``, with ``built: false``): the record describes
    the model built (before, that formula and its ``verified: false`` read as the model's)."""
    if result["route"].get("route") != "cascade" or result.get("synthesis") is None:
        return
    candidate = result["route"].setdefault("candidates", {}).setdefault("local-divisors", {})
    candidate.update({"built": False, "formula": result["formula"], "fragment": result["fragment"],
                      "synthesis": result["synthesis"]})
    result["formula"] = result["fragment"] = result["synthesis"] = None
