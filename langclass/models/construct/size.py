"""The size of a planned transformer, before any weight exists (no torch), and the parameter budget.

:func:`planned_parameters` counts the parameters the assembly stage will allocate for a plan —
:class:`~langclass.models.construct.plan.FormulaPlan` (soft attention,
:mod:`~langclass.models.construct.soft`) or :class:`~langclass.models.construct.brasp_plan.BraspPlan`
(hard attention, :mod:`~langclass.models.construct.hard`) — from the plan's shapes alone, and
:func:`check_parameter_budget` refuses a plan over ``Limits.max_parameters`` with
:class:`~langclass.core.base.errors.LimitExceeded` *before* assembly, so an oversized construction
costs its planning time, never its memory.

The counts follow the assembly exactly (a test compares them with ``sum(p.numel())`` of built models):

* soft: token embedding (BOS, EOS, PAD + |Σ|) × d_model; per attention layer with H heads of width
  d_head, Q/K/V/O projections with biases, 4·(H·d_head·d_model) + 3·H·d_head + d_model; per
  feed-forward layer with U units, 2·U·d_model + U + d_model; the readout d_model + 1;
* hard: letter embedding |Σ| × d_model; per head with n_q query rows and n_v value rows (no biases),
  2·n_q·d_model + 2·n_v·d_model; the same feed-forward and readout terms.
"""

from __future__ import annotations

from typing import Any

from langclass.core.base.errors import LimitExceeded
from langclass.core.base.limits import Limits

from langclass.models.construct.brasp_plan import BraspPlan
from langclass.models.construct.plan import FormulaPlan

__all__ = ["planned_parameters", "check_parameter_budget", "plan_size"]


def _ffn(units: int, d_model: int) -> int:
    return 0 if units == 0 else 2 * units * d_model + units + d_model


def planned_parameters(plan: FormulaPlan | BraspPlan) -> int:
    """Parameters the assembly of ``plan`` allocates (module docstring); no tensor is created.

    Raises:
        TypeError: not a formula or B-RASP plan.
    """
    D = plan.d_model
    if isinstance(plan, FormulaPlan):
        from langclass.models.nn.tokens import NUM_SPECIAL  # here, so that sizing a B-RASP plan loads no torch

        total = (NUM_SPECIAL + len(plan.alphabet)) * D + D + 1
        for layer in plan.layers:
            if layer.heads:
                inner = len(layer.heads) * plan.d_head
                total += 4 * inner * D + 3 * inner + D
            total += _ffn(len(layer.units), D)
        return total
    if isinstance(plan, BraspPlan):
        total = len(plan.letter_rows) * D + D + 1
        for layer in plan.layers:
            for hd in layer.heads:
                n_q, n_v = len(hd.alpha), 1 + len(hd.beta) + len(hd.v)
                total += 2 * n_q * D + 2 * n_v * D
            total += _ffn(len(layer.units), D)
        return total
    raise TypeError(f"not a construction plan: {type(plan).__name__}")


def plan_size(plan: FormulaPlan | BraspPlan) -> dict[str, Any]:
    """``{"parameters", "layers", "heads", "d_model"}`` of a plan (what a refusal reports)."""
    return {"parameters": planned_parameters(plan), "layers": len(plan.layers),
            "heads": sum(len(layer.heads) for layer in plan.layers), "d_model": plan.d_model}


def check_parameter_budget(plan: FormulaPlan | BraspPlan, limits: Limits) -> dict[str, Any]:
    """The plan's size (:func:`plan_size`), or :class:`LimitExceeded` when its parameter count exceeds
    ``limits.max_parameters`` (None = no budget).

    Raises:
        LimitExceeded: ``max_parameters``; ``extra["planned"]`` holds the planned size.
    """
    size = plan_size(plan)
    bound = limits.max_parameters
    if bound is not None and size["parameters"] > bound:
        err = LimitExceeded(
            "max_parameters", bound,
            f"the planned transformer has {size['parameters']:,} parameters ({size['layers']} layers, {size['heads']} "
            f"heads, d_model {size['d_model']}), over the budget of {bound:,} (max_parameters); nothing was allocated",
            field="options.max_parameters")
        err.extra["planned"] = size
        raise err
    return size
