"""Which B-RASP program a language's hard-attention transformer is compiled from (plan stage, no torch).

Two routes reach a masked hard-attention transformer from a star-free or FO[<,MOD] language, both
from *Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages*:

* ``"cascade"`` — §5.6: the holonomy (Krohn–Rhodes) cascade of the counter-free automaton (for
  FO[<,MOD]: of the m-marked language), one rightmost future-masked attention operation per state
  bit and level (Lemmas 9–11; :mod:`langclass.core.synthesis.cascade_brasp`). Depth 2k + 1 layers
  for k levels; width polynomial in the cascade.
* ``"local-divisors"`` — Thm 3 / Lemma 4: the past-LTL formula of the local-divisor induction
  (:mod:`langclass.core.synthesis.starfree`, :mod:`langclass.core.synthesis.fo_mod`) translated to
  B-RASP and narrowed (:mod:`langclass.core.logic.brasp_width`); its size multiplies at every level
  of the induction.

:func:`choose_hard_route` plans the candidates and keeps the one with fewer parameters; a route
that fails — the local-divisor synthesis past any of its limits (its 200,000-subformula cap, the
bound below), a program the compiler cannot take — is a candidate recorded with its reason, and the
construction fails only when every route does. The cascade program is planned as built and narrowed
(:data:`CASCADE_NARROW_WIDTH`, :func:`plan_cascade`). The size
of the local-divisor program is first bounded from below without planning it (every vector is a
stream coordinate, the embedding and readout read every coordinate, and every head has at least six
weight rows of width d_model; narrowing only adds vectors, so the bound of the un-narrowed program holds); when that bound already exceeds the cascade's exact count the
local-divisor plan is not built.

The local-divisor *synthesis* itself is bounded the same way (:func:`local_divisor_synthesis`):
under ``"auto"`` the cascade is planned first, and the induction may build at most
P / (|Σ| + 1) distinct subformulas, P the smaller of the cascade's parameters and the parameter
budget. Every local-divisor program measured has at least (|Σ| + 1) parameters per subformula its
synthesis built (``parameters_at_least`` over the ground-truth languages and Dyck-1 of depth 4 and
5: 7.3 to 956 times that; ``tests/test_construct_route.py`` checks the bound changes no choice), so
a synthesis stopped there would not have produced the smaller program, and a plan over the budget is
refused without first synthesizing a formula of 10⁴ subformulas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded, TimeLimitExceeded, UnsupportedError
from langclass.core.base.limits import DEFAULT_LIMITS, Deadline, Limits
from langclass.core.logic import formulas as F
from langclass.core.logic.brasp import formula_to_brasp
from langclass.core.logic.brasp_program import AttentionOp, Program
from langclass.core.logic.brasp_width import narrow_program
from langclass.core.synthesis.cascade_brasp import cascade_program
from langclass.core.synthesis.fo_mod import synthesize_fo_mod
from langclass.core.synthesis.starfree import MAX_STAR_FREE_NODES

from langclass.models.construct.brasp_plan import BraspPlan, is_identity, plan_brasp
from langclass.models.construct.size import planned_parameters  # the one count, shared with the parameter budget

__all__ = ["ROUTES", "RouteChoice", "CascadeCandidate", "CASCADE_NARROW_WIDTH", "plan_cascade", "choose_hard_route", "planned_parameters",
           "parameters_at_least", "local_divisor_node_bound", "local_divisor_synthesis", "local_divisor_candidate"]

ROUTES = ("auto", "cascade", "local-divisors")
"""The values of the construction option ``route``."""


def parameters_at_least(program: Program) -> tuple[int, int]:
    """``(parameters, d_model)`` lower bounds for the transformer of ``program`` without planning it:
    d_model ≥ the program's vectors + 1 (one coordinate each and the constant one), the embedding
    and readout contribute (|Σ| + 1)·d_model, and every attention operation that is not an identity
    has a head of at least 2 query/key rows and 4 value/output rows of width d_model."""
    d = len(program.names) + 1
    heads = sum(1 for op in program.ops if isinstance(op, AttentionOp) and not is_identity(op))
    return (len(program.alphabet) + 1 + 6 * heads) * d + 1, d


@dataclass(frozen=True)
class RouteChoice:
    """The chosen program and how the candidates compared.

    Attributes:
        route: ``"cascade"`` or ``"local-divisors"``.
        program: the chosen B-RASP program; ``plan`` its plan.
        candidates: per route, ``{"d_model", "layers", "heads", "parameters"}`` (planned), or
            ``{"parameters_at_least", "d_model_at_least", "planned": False}``, or ``{"error"}``.
        cascade: the cascade's summary (height, states per level, global size, modulus) when it was
            built.
    """

    route: str
    program: Program
    plan: BraspPlan
    candidates: dict[str, dict[str, Any]] = field(default_factory=dict)
    cascade: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        s = self.plan.summary()
        return {"route": self.route, "cascade_height": None if self.cascade is None else self.cascade["cascade_height"],
                "layers": s["layers"], "heads": s["heads"], "d_model": s["d_model"],
                "parameters": planned_parameters(self.plan), "cascade": self.cascade, "candidates": self.candidates}


@dataclass(frozen=True)
class CascadeCandidate:
    """The cascade route's program planned (:func:`plan_cascade`): ``program``, ``plan``, ``info``
    (:meth:`CascadeProgram.summary`) and ``parameters`` (:func:`planned_parameters`)."""

    program: Program
    plan: BraspPlan
    info: dict[str, Any]
    parameters: int


CASCADE_NARROW_WIDTH = 9
"""Expression width the cascade program is narrowed to (:func:`narrow_program`, identity operations
counted as the one coordinate the compiler reads for them). The cascade's reset and prefix functions
read the previous prefix's bits, the letter and the position mark, which passes the compiler's 14
coordinates on large cascades: issue 38's 6-state language over {a, b, c} (m = 6, levels of 6, 6
and 2 states) reads 15 as built. Measured (``plan_brasp`` parameters): that language compiles only
narrowed — 5.46 M parameters at width 9, 5.88 M at 10, 7.32 M at 11, 6.81 M at 12, 11.6 M at 8 (over
the 10⁷ budget), 22–28 M at 6–7; the 3-state one of the issue has 95,037 at 9, 124,153 at 8 and
246,918 as built (= width ≥ 10); on the first 40 hard-attention languages of the scan
(``tests/_construct_scan.py``) every cascade compiles as built and the best of as built and width
w totals 2.06 M parameters at w = 8, 2.20 M at 9 and 2.19 M at 10. Width 9 is the narrowest that
keeps every reproducer under the budget. :func:`plan_cascade` plans the program as built and
narrowed and keeps the smaller that compiles."""


def plan_cascade(dfa: DFA, limits: Limits = DEFAULT_LIMITS, deadline: Deadline | None = None) -> CascadeCandidate:
    """The cascade program of ``dfa`` and its plan (no torch): the program as built and narrowed to
    :data:`CASCADE_NARROW_WIDTH` are both planned and the one with fewer parameters that compiles is
    kept; ``info["narrowing"]`` says which (``"width"``: None or the width) and what each gave.

    Raises:
        UnsupportedError: the language is not in FO[<,MOD]; LimitExceeded: the decomposition's limits,
        or ``max_ffn_inputs`` when neither program compiles (before any weight exists);
        TimeLimitExceeded.
    """
    deadline = deadline or limits.deadline()
    cp = cascade_program(dfa, limits, deadline)
    tried: dict[str, dict[str, Any]] = {}
    best: tuple[int, Program, BraspPlan, int | None] | None = None
    failure: LimitExceeded | None = None
    versions: list[tuple[int | None, Program]] = [(None, cp.program)]
    narrowed = narrow_program(cp.program, width=CASCADE_NARROW_WIDTH, deadline=deadline, identity_cost=1)
    if narrowed is not cp.program:
        versions.append((CASCADE_NARROW_WIDTH, narrowed))
    for width, program in versions:
        key = "as built" if width is None else f"width {width}"
        try:
            plan = plan_brasp(program, deadline)
        except LimitExceeded as err:
            if err.limit != "max_ffn_inputs":
                raise
            tried[key] = {"error": err.detail}
            failure = err
            continue
        n = planned_parameters(plan)
        tried[key] = {"parameters": n, "layers": len(plan.layers), "d_model": plan.d_model}
        if best is None or n < best[0]:
            best = (n, program, plan, width)
    if best is None:
        raise LimitExceeded("max_ffn_inputs", failure.value if failure else None,
                            "the cascade program cannot be compiled: "
                            + "; ".join(f"{k}: {v['error']}" for k, v in tried.items()), field="options.route")
    n, program, plan, width = best
    return CascadeCandidate(program, plan, {**cp.summary(), "narrowing": {"width": width, "tried": tried}}, n)


def local_divisor_node_bound(alphabet_size: int, *parameters: int | None) -> int | None:
    """Most distinct subformulas the local-divisor synthesis may build when its program has to have
    fewer than ``min(parameters)`` parameters (None: no bound): ``min(parameters) // (|Σ| + 1)``,
    at least 1 (module docstring)."""
    known = [p for p in parameters if p is not None]
    return None if not known else max(1, min(known) // (alphabet_size + 1))


def _sizes(plan: BraspPlan) -> dict[str, Any]:
    s = plan.summary()
    return {"d_model": s["d_model"], "layers": s["layers"], "heads": s["heads"], "parameters": planned_parameters(plan),
            "planned": True}


def choose_hard_route(dfa: DFA | None, formula: F.Formula | None, alphabet: Sequence[str], *, route: str = "auto",
                      limits: Limits = DEFAULT_LIMITS, deadline: Deadline | None = None,
                      cascade: CascadeCandidate | None = None) -> RouteChoice:
    """Plan the hard-attention program of a language by the cascade and/or the local-divisor route
    (module docstring) and return the smaller (``route="auto"``) or the one asked for.

    Args:
        dfa: the language (None: only the local-divisor route, from ``formula``).
        formula: its synthesized past-LTL formula (None: only the cascade route).
        alphabet: Σ (the formula's).
        route: ``"auto"``, ``"cascade"`` or ``"local-divisors"``.
        limits, deadline: the limits of every step.
        cascade: the cascade of ``dfa`` already planned (:func:`plan_cascade`), not planned again.

    Raises:
        InputError: an unknown ``route``, or a route that has no input (no DFA / no formula).
        UnsupportedError, LimitExceeded: from the asked route, or from both under ``"auto"``
            (``max_ffn_inputs`` when a program is too wide for the compiler).
        TimeLimitExceeded: ``time_limit_s``.
    """
    if route not in ROUTES:
        raise InputError(f"route must be one of {list(ROUTES)}, got {route!r}", field="options.route")
    deadline = deadline or limits.deadline()
    candidates: dict[str, dict[str, Any]] = {}
    built: dict[str, tuple[Program, BraspPlan]] = {}
    errors: dict[str, Exception] = {}
    cascade_info = None
    if route in ("auto", "cascade"):
        if dfa is None:
            if route == "cascade":
                raise InputError("the cascade route needs a language (a regex or a DFA)", field="options.route")
        else:
            try:
                cc = cascade if cascade is not None else plan_cascade(dfa, limits, deadline)
                cascade_info = cc.info
                built["cascade"] = (cc.program, cc.plan)
                candidates["cascade"] = _sizes(cc.plan)
            except TimeLimitExceeded:
                raise
            except (UnsupportedError, LimitExceeded) as err:
                if route == "cascade":
                    raise
                errors["cascade"] = err
                candidates["cascade"] = {"error": err.detail}
    deadline.check("route choice")
    if route in ("auto", "local-divisors"):
        if formula is None:
            if route == "local-divisors":
                raise InputError("the local-divisor route needs a synthesized formula", field="options.route")
        else:
            try:
                program = formula_to_brasp(formula, alphabet, limits)
                lower, d_lower = parameters_at_least(program)  # narrowing only adds vectors: a bound for both
                if route == "auto" and "cascade" in built and lower > candidates["cascade"]["parameters"]:
                    candidates["local-divisors"] = {"parameters_at_least": lower, "d_model_at_least": d_lower,
                                                    "planned": False}
                else:
                    program = narrow_program(program, deadline=deadline)  # compiler fan-in ≤ 14
                    plan = plan_brasp(program, deadline)
                    built["local-divisors"] = (program, plan)
                    candidates["local-divisors"] = _sizes(plan)
            except TimeLimitExceeded:
                raise
            except (UnsupportedError, LimitExceeded) as err:
                if route == "local-divisors" or "cascade" not in built:
                    raise
                errors["local-divisors"] = err
                candidates["local-divisors"] = {"error": err.detail}
    if not built:
        raise next(iter(errors.values())) if errors else InputError("no route has an input", field="options.route")
    chosen = min(built, key=lambda r: (candidates[r]["parameters"], r != "cascade"))
    program, plan = built[chosen]
    return RouteChoice(chosen, program, plan, candidates, cascade_info)


def local_divisor_synthesis(dfa: DFA, limits: Limits, route: str, *, max_parameters: int | None = None,
                            cascade: CascadeCandidate | None = None):
    """``(synthesis, note)``: the FO[<,MOD] formula of the local-divisor route — none for
    ``route="cascade"`` (the cascade needs only the automaton). Under ``"auto"`` it runs within a
    third of ``time_limit_s`` and builds at most :func:`local_divisor_node_bound` subformulas of the
    cascade's parameters (``cascade``) and the budget (``max_parameters``); past either, or past any
    limit of the synthesis (e.g. its 200,000-subformula cap), the route is a failed candidate: the
    synthesis is None, ``note`` says why and the cascade decides alone. Under ``"local-divisors"``
    the budget's bound applies too, and every limit is the construction's error.

    Raises:
        UnsupportedError: L is not quasi-aperiodic (from the synthesis).
        LimitExceeded: under ``"local-divisors"``: ``max_parameters`` when the synthesis passes the
            budget's bound, or the synthesis' own limits.
    """
    if route == "cascade":
        return None, None
    k = len(dfa.alphabet)
    bound = local_divisor_node_bound(k, cascade.parameters if (route == "auto" and cascade) else None, max_parameters)
    max_nodes = MAX_STAR_FREE_NODES if bound is None else min(MAX_STAR_FREE_NODES, bound)
    timed = route == "auto" and limits.time_limit_s is not None
    try:
        return synthesize_fo_mod(dfa, replace(limits, time_limit_s=limits.time_limit_s / 3) if timed else limits,
                                 max_nodes=max_nodes), None
    except TimeLimitExceeded as err:
        if not timed:
            raise
        return None, f"not synthesized within a third of the time limit ({err.detail})"
    except LimitExceeded as err:
        bounded = err.limit == "max_star_free_nodes" and max_nodes < MAX_STAR_FREE_NODES
        over = (f"more than {max_nodes:,} distinct subformulas: its program would have more than "
                f"(|Σ| + 1) = {k + 1} parameters per subformula")
        if route == "auto":  # a route that hits a cap is a failed candidate, never the end of the construction
            if not bounded:
                return None, f"not synthesized: limit {err.limit} = {err.value} hit ({err.detail})"
            sizes = [p for p in (cascade.parameters if cascade else None, max_parameters) if p is not None]
            whose = ("the cascade's" if cascade is not None and min(sizes) == cascade.parameters
                     else "the parameter budget's")
            return None, f"not synthesized: the local-divisor induction built {over}, over {whose} {min(sizes):,}"
        if not bounded:
            raise
        raise LimitExceeded("max_parameters", max_parameters,
                            f"the local-divisor synthesis built {over}, over the budget of {max_parameters:,} "
                            "(max_parameters); nothing was allocated", field="options.max_parameters") from None


def local_divisor_candidate(dfa: DFA, limits: Limits, route: str, max_parameters: int | None):
    """``(synthesis, note, cascade)``: under route ``"auto"`` the cascade is planned first (None when
    that fails: :func:`choose_hard_route` tries again and records the error) so that its size bounds
    the local-divisor synthesis; then :func:`local_divisor_synthesis`. Pass ``cascade`` on to
    :func:`choose_hard_route`.

    Raises:
        as :func:`local_divisor_synthesis`.
    """
    cascade = None
    if route == "auto":
        try:
            cascade = plan_cascade(dfa, limits)
        except (UnsupportedError, LimitExceeded):
            cascade = None
    synthesis, note = local_divisor_synthesis(dfa, limits, route, max_parameters=max_parameters, cascade=cascade)
    return synthesis, note, cascade
