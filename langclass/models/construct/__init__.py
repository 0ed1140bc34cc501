"""Stage 2 of models — construct: exact transformers from formulas and programs (plans, assembly, routes, verification); imports nn and core.

Exact transformers built from formulas and B-RASP programs (no training), in two stages.

**Plan** (no torch; inspectable and testable on its own, like the craft stage of tracr):

* :mod:`~langclass.models.construct.plan` — :func:`plan_formula`: formula → :class:`FormulaPlan`
  (stream layout, the literal of every node, heads, Boolean gates, layer schedule, constants,
  encodings); :class:`ConstructionOptions`.
* :mod:`~langclass.models.construct.brasp_plan` — :func:`plan_brasp`: B-RASP program →
  :class:`BraspPlan` (stream layout, heads, feed-forward targets).
* :mod:`~langclass.models.construct.gates` — literals, gates and Boolean functions as ReLU units.
* :mod:`~langclass.models.construct.route` — :func:`choose_hard_route`: the Krohn–Rhodes cascade
  program or the local-divisor program of a language, whichever plans smaller.

**Assembly** (torch): :mod:`~langclass.models.construct.soft` (:class:`FormulaTransformer`,
:func:`build_formula_transformer`), :mod:`~langclass.models.construct.hard` (:class:`BraspTransformer`,
:func:`build_brasp_transformer`), both writing their feed-forward layers through the one writer of
:mod:`~langclass.models.construct.assembly`.

**Choice and verification** (torch): :mod:`~langclass.models.construct.options` (the options a
construction takes), :mod:`~langclass.models.construct.choice` (which construction a class gets),
:mod:`~langclass.models.construct.verify` (:func:`run_construction`: build, then check the model
against the DFA on every word to a length and on random long words) and
:mod:`~langclass.models.construct.verify_stream` (the words it checks, in bounded chunks).

Sources: *Disentangling the Expressivity of RoPE* (soft attention: §2.2 LTL[P] with NoPE, §3.2 /
Lemma 3.2 and App. C.3 MOD with periodic RoPE, §4.2–4.3 / Cor. 4.1 and App. D Y^k with conventional
RoPE) and *Masked Hard-Attention Transformers Recognize Exactly the Star-Free Languages* (hard
attention: Lemma 13, Thm 24, B-RASP → masked unique-hard-attention transformer).

Names are loaded lazily (PEP 562), so importing the plan modules loads no torch.
"""

from langclass.core.base.lazy import lazy_exports

_EXPORTS = {
    "ConstructionOptions": "plan", "FormulaPlan": "plan", "LayerPlan": "plan", "Head": "plan", "EncodingSpec": "plan",
    "plan_formula": "plan", "DTYPES": "plan",
    "BraspPlan": "brasp_plan", "BraspLayer": "brasp_plan", "HardHead": "brasp_plan", "plan_brasp": "brasp_plan",
    "Literal": "gates", "Gate": "gates", "ReluUnit": "gates", "MAX_FFN_INPUTS": "gates",
    "TORCH_DTYPES": "assembly", "write_feed_forward": "assembly",
    "FormulaTransformer": "soft", "build_formula_transformer": "soft", "SOURCE_SOFT": "soft",
    "BraspTransformer": "hard", "build_brasp_transformer": "hard", "SOURCE_HARD": "hard",
    "run_construction": "verify",
    "RouteChoice": "route", "choose_hard_route": "route", "planned_parameters": "route", "ROUTES": "route",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "ConstructionOptions", "FormulaTransformer", "BraspTransformer", "build_formula_transformer",
    "build_brasp_transformer", "TORCH_DTYPES", "MAX_FFN_INPUTS",
    "FormulaPlan", "LayerPlan", "Head", "EncodingSpec", "plan_formula", "DTYPES",
    "BraspPlan", "BraspLayer", "HardHead", "plan_brasp", "Literal", "Gate", "ReluUnit", "write_feed_forward",
    "SOURCE_SOFT", "SOURCE_HARD", "run_construction", "RouteChoice", "choose_hard_route", "planned_parameters", "ROUTES",
]
