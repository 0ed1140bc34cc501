"""Pydantic response models of the certificates and witnesses, derived from core's evidence types.

Each frozen :class:`~langclass.core.classes.Evidence` dataclass of a registered decider (and the
types nested in them) gets one model with the same fields (words as lists of symbols, nested
evidence as nested models) plus the ``check`` sentence, ``extra="forbid"``. A class result's
``certificate`` / ``witness`` is the union of these models, so the OpenAPI document lists every
shape; records stored by earlier versions, whose shapes differ, still validate as a plain object.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..core.classes import REGISTRY, Evidence, Implied, ImpliedWitness

__all__ = ["EVIDENCE_MODELS", "EvidenceModel", "evidence_model"]

EVIDENCE_MODELS: dict[type, type[BaseModel]] = {}
"""Evidence dataclass → its pydantic model."""


def _field_type(tp: Any) -> Any:
    if tp is Any:
        return Any
    origin = typing.get_origin(tp)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType")):
        args = typing.get_args(tp)
        return Union[tuple(_field_type(a) for a in args)]  # type: ignore[return-value]
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return list[_field_type(args[0])]  # type: ignore[misc]
        return list[Union[tuple(_field_type(a) for a in args)]] if len(set(args)) > 1 else list[_field_type(args[0])]  # type: ignore[misc]
    if isinstance(tp, type) and issubclass(tp, Evidence):
        return evidence_model(tp)
    if tp is type(None):
        return type(None)
    return tp


def evidence_model(cls: type[Evidence]) -> type[BaseModel]:
    """The pydantic model of one evidence dataclass (built once, cached in :data:`EVIDENCE_MODELS`)."""
    if cls in EVIDENCE_MODELS:
        return EVIDENCE_MODELS[cls]
    hints = typing.get_type_hints(cls)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        tp = _field_type(hints[f.name])
        default = ... if f.default is dataclasses.MISSING else f.default
        fields[f.name] = (tp, default)
    if cls.CHECK:
        fields["check"] = (Optional[str], Field(None, description="what a replay checks, in one sentence"))
    doc = (cls.__doc__ or "").strip()
    model = create_model(cls.__name__, __config__=ConfigDict(extra="forbid"), __doc__=doc, **fields)
    EVIDENCE_MODELS[cls] = model
    return model


def _all_types() -> list[type[Evidence]]:
    seen: list[type[Evidence]] = []
    for d in REGISTRY.values():
        for tp in (*d.certificate_types, *d.witness_types):
            if tp not in seen:
                seen.append(tp)
    return seen


_TYPED = [evidence_model(tp) for tp in _all_types()]
# answers implied through the lattice carry the implying class's evidence (any of the shapes above)
_NESTED = Optional[Union[tuple(_TYPED)]]  # type: ignore[valid-type]
EVIDENCE_MODELS[Implied] = create_model(
    "Implied", __config__=ConfigDict(extra="forbid"), __doc__=(Implied.__doc__ or "").strip(),
    implied_by=(str, ...), inclusion=(str, ...), certificate=(_NESTED, None), check=(Optional[str], None))
EVIDENCE_MODELS[ImpliedWitness] = create_model(
    "ImpliedWitness", __config__=ConfigDict(extra="forbid"), __doc__=(ImpliedWitness.__doc__ or "").strip(),
    implied_by=(str, ...), witness=(_NESTED, None), check=(Optional[str], None))

EvidenceModel = Union[tuple(_TYPED + [EVIDENCE_MODELS[Implied], EVIDENCE_MODELS[ImpliedWitness], dict[str, Any]])]  # type: ignore[valid-type]
"""A certificate or witness: one of the typed shapes (or, for records stored by an earlier version, an object)."""
