"""Pydantic response models of the certificates and witnesses, derived from core's evidence types.

Each frozen :class:`~langclass.core.algebra.classes.Evidence` dataclass of a registered decider (and the
types nested in them) gets one model with the same fields (words as lists of symbols, nested
evidence as nested models) plus the ``check`` sentence, ``extra="forbid"``. A class result's
``certificate`` / ``witness`` is the union of these models, so the OpenAPI document lists every
shape; records stored by earlier versions, whose shapes differ, still validate as a plain object.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Annotated, Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from langclass.core.algebra.classes import REGISTRY, Evidence, Implied, ImpliedWitness

__all__ = ["EVIDENCE_MODELS", "EvidenceModel", "FastEvidenceModel", "evidence_model"]

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


def _keys_union(models: list[type[BaseModel]], other: Any, *, with_dict: bool) -> Any:
    """A union that validates (and serializes) exactly as ``Union[*models]`` (plus ``dict[str, Any]``
    last when ``with_dict``) in pydantic's smart mode, but tries only the models a mapping's keys allow.

    Every model here forbids extra keys, so it can accept a mapping only when the mapping's keys lie
    between its required fields and all its fields; the others fail whatever the values are. Smart
    mode chooses among the members that succeed (in their order), so leaving out members that must
    fail changes nothing: a callable discriminator maps the key set to the members it allows (in the
    original order, ``dict[str, Any]`` last); a mapping no model allows, or any other input, goes to
    ``other`` (the original union). A model instance (serialization) goes to its own model.
    """
    from itertools import combinations

    from pydantic import Discriminator, Tag

    specs = [(m, frozenset(n for n, f in m.model_fields.items() if f.is_required()), frozenset(m.model_fields))
             for m in models]
    tag_of_keys: dict[frozenset[str], str] = {}
    groups: dict[str, tuple[type[BaseModel], ...]] = {m.__name__: (m,) for m in models}
    for _, req, allowed in specs:  # every key set some model allows: its required fields plus some optional ones
        optional = sorted(allowed - req)
        for r in range(len(optional) + 1):
            for extra in combinations(optional, r):
                keys = req | frozenset(extra)
                cands = tuple(m for m, rq, al in specs if rq <= keys <= al)
                tag = "+".join(m.__name__ for m in cands)
                groups[tag] = cands
                tag_of_keys[keys] = tag
    own = {m: m.__name__ for m in models}

    def pick(value: Any) -> str:
        if isinstance(value, dict):
            return tag_of_keys.get(frozenset(value), "other")
        return own.get(type(value), "other")

    arms = []
    for tag, cands in groups.items():
        members = [*cands, dict[str, Any]] if with_dict else list(cands)
        arms.append(Annotated[Union[tuple(members)] if len(members) > 1 else members[0], Tag(tag)])  # type: ignore[valid-type]
    arms.append(Annotated[other, Tag("other")])
    return Annotated[Union[tuple(arms)], Discriminator(pick)]  # type: ignore[valid-type]


def _fast_implied(name: str, field: str) -> type[BaseModel]:
    model = EVIDENCE_MODELS[Implied if name == "Implied" else ImpliedWitness]
    fields: dict[str, Any] = {}
    for key, info in model.model_fields.items():
        tp = Optional[_keys_union(_TYPED, Union[tuple(_TYPED)], with_dict=False)] if key == field else info.annotation  # type: ignore[valid-type]
        fields[key] = (tp, ... if info.is_required() else info.default)
    return create_model(name, __config__=ConfigDict(extra="forbid"), __doc__=model.__doc__, **fields)


FastEvidenceModel = _keys_union(_TYPED + [_fast_implied("Implied", "certificate"), _fast_implied("ImpliedWitness", "witness")],
                                EvidenceModel, with_dict=True)
""":data:`EvidenceModel` for the server's own use: the same validation and serialization (the
published schema stays :data:`EvidenceModel`'s), without trying every shape on every record
(:func:`_keys_union`); ``tests/test_api_response_json.py`` checks the bytes agree."""
