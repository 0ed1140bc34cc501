"""The LTL[P,Y,MOD] route of ``construct``: a soft-attention formula from the automaton alone.

When the language is in neither LTL[P,MOD] nor LTL[P,Y] (the routes of
:func:`langclass.core.synthesis.synthesis.synthesize`), it may still be in LTL[P,Y,MOD]: then the
m-marked language (positions marked by their index mod m) is in LTL[P,Y] for the least such m, its
window-product formula is synthesized and the marks are turned back into MOD(m, r) atoms
(:func:`langclass.core.synthesis.marked_y_mod.synthesize_ltl_p_y_mod`). The plan of
:mod:`~langclass.models.construct.plan` compiles it with periodic RoPE of period m for the MOD atoms
and, by default on this route, recency heads for Y — exact at every length (docs/recency.md: the
recency heads; *Disentangling the Expressivity of RoPE*, Lemma 3.2 / App. C.3: MOD with periodic
RoPE). ``y_mode="rope"`` remains available (conventional RoPE, exact up to N_max only).
"""

from __future__ import annotations

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import LimitExceeded, TimeLimitExceeded, UnsupportedError
from langclass.core.base.limits import Limits
from langclass.core.synthesis.marked_y_mod import synthesize_ltl_p_y_mod
from langclass.core.synthesis.synthesis_result import Synthesis

__all__ = ["MARKED_METHOD", "synthesize_soft", "marked_synthesis", "default_y_mode"]

MARKED_METHOD = "marked-window-product"
"""The ``Synthesis.method`` of this route."""


def synthesize_soft(dfa: DFA, limits: Limits, attention: str = "auto") -> Synthesis:
    """The soft-attention formula of L(dfa): :func:`~langclass.core.synthesis.synthesis.synthesize`
    (LTL[P], (w)*, LTL[P,MOD], LTL[P,Y]) and, when that fails and ``attention`` is not ``"hard"``, this
    route (LTL[P,Y,MOD]).

    Raises:
        UnsupportedError: no soft formula is known; the message says why for every route tried (and,
            on this route, names the limit it hit, if any).
        LimitExceeded: a limit of :func:`synthesize`; TimeLimitExceeded.
    """
    from langclass.core.synthesis.synthesis import synthesize

    try:
        return synthesize(dfa, limits)
    except UnsupportedError as soft_err:
        if attention == "hard":
            raise
        synthesis, err = marked_synthesis(dfa, limits, soft_err)
        if synthesis is None:
            raise err from None
        return synthesis


def marked_synthesis(dfa: DFA, limits: Limits, soft_err: UnsupportedError) -> tuple[Synthesis | None, UnsupportedError]:
    """The LTL[P,Y,MOD] formula of L(dfa), tried after the other soft routes failed with ``soft_err``.

    Returns:
        ``(synthesis, soft_err)`` when L ∈ LTL[P,Y,MOD]; else ``(None, err)`` with ``err`` the soft
        answer extended by why this route failed too (not in LTL[P,Y,MOD], or the limit it hit —
        its name is in the message), keeping ``soft_err``'s certificate and source.

    Raises:
        TimeLimitExceeded: the time limit passed (the whole construction stops; no later route runs).
    """
    try:
        return synthesize_ltl_p_y_mod(dfa, limits), soft_err
    except TimeLimitExceeded:
        raise
    except (UnsupportedError, LimitExceeded) as err:
        why = (f"outside LTL[P,Y,MOD] ({err.detail})" if isinstance(err, UnsupportedError)
               else f"LTL[P,Y,MOD] undecided: limit {err.limit} = {err.value} hit ({err.detail})")
        return None, UnsupportedError(f"{soft_err.detail}; {why}", field=soft_err.field, **soft_err.extra)


def default_y_mode(synthesis: Synthesis | None) -> str:
    """``"recency"`` for a formula of this route (exact at every length), else ``"rope"`` (the
    construction of *Disentangling the Expressivity of RoPE*, Cor. 4.1, the default of the other routes)."""
    return "recency" if synthesis is not None and synthesis.method == MARKED_METHOD else "rope"
