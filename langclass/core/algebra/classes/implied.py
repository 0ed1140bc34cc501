"""Answers implied by another class through the inclusions of the lattice, with that class's evidence.

When a limit leaves a class undecided, :func:`langclass.core.algebra.lattice.infer` may still answer it: a
language in a subclass is in the class, a language outside a superclass is not. The result then
carries the implying class's own certificate or witness, so a replay checks it on the DFA like any
other answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..lattice import CLASS_INFO, implied_by
from .base import REGISTRY, ClassResult, Evidence, parse_evidence
from .replaykit import Checker, ReplayError

__all__ = ["Implied", "ImpliedWitness", "implied_result"]


@dataclass(frozen=True)
class Implied(Evidence):
    """Member because the language is in ``implied_by`` ⊆ this class; ``certificate`` is that class's."""

    CHECK = "implied_by ⊆ this class in the lattice, and implied_by's certificate replays"
    implied_by: str
    inclusion: str
    certificate: Any = None

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "evidence") -> Implied:
        by = _key(d, where)
        raw = d.get("certificate")
        cert = None if raw is None else parse_evidence(REGISTRY[by].certificate_types, raw, f"{where}.certificate")
        return cls(by, str(d.get("inclusion", "")), cert)


@dataclass(frozen=True)
class ImpliedWitness(Evidence):
    """Not a member because the language is not in ``implied_by`` ⊇ this class; ``witness`` is that class's."""

    CHECK = "this class ⊆ implied_by in the lattice, and implied_by's witness replays"
    implied_by: str
    witness: Any = None

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "evidence") -> ImpliedWitness:
        by = _key(d, where)
        raw = d.get("witness")
        wit = None if raw is None else parse_evidence(REGISTRY[by].witness_types, raw, f"{where}.witness")
        return cls(by, wit)


def _key(d: dict[str, Any], where: str) -> str:
    by = d.get("implied_by")
    if by not in REGISTRY:
        raise ValueError(f"{where}.implied_by: not a class key: {by!r}")
    return by


def implied_result(key: str, val: bool, by: ClassResult, error: dict[str, Any] | None = None) -> ClassResult:
    """The answer for ``key`` implied by the decided answer ``by`` (see :func:`langclass.core.algebra.lattice.infer`)."""
    nb, nk = CLASS_INFO[by.key].name, CLASS_INFO[key].name
    rel = f"{nb} ⊆ {nk}" if val else f"{nk} ⊆ {nb}"
    cert = Implied(by.key, rel, by.certificate) if val else None
    wit = None if val else ImpliedWitness(by.key, by.witness)
    return ClassResult(key, val,
                       f"{'member' if val else 'not a member'} because the language is "
                       f"{'in' if val else 'not in'} {nb} and {rel}",
                       cert if val else wit, wit, CLASS_INFO[key].source, "lattice", period=None, error=error)


def replay_implied(chk: Checker, key: str, member: bool, ev: Implied | ImpliedWitness) -> None:
    """Check the inclusion and replay the implying class's evidence."""
    d = REGISTRY[ev.implied_by]
    if member:
        if not (isinstance(ev, Implied) and key in implied_by(ev.implied_by)):
            raise ReplayError(f"{ev.implied_by} ⊄ {key}")
        if ev.certificate is None:
            raise ReplayError("an implied answer carries the implying class's certificate")
        want = f"{CLASS_INFO[ev.implied_by].name} ⊆ {CLASS_INFO[key].name}"
        if ev.inclusion != want:
            raise ReplayError(f"the inclusion is {want!r}, not {ev.inclusion!r}")
        d.replay_yes(chk, ev.certificate)
    else:
        if not (isinstance(ev, ImpliedWitness) and ev.implied_by in implied_by(key)):
            raise ReplayError(f"{key} ⊄ {ev.implied_by}")
        if ev.witness is None:
            raise ReplayError("an implied answer carries the implying class's witness")
        d.replay_no(chk, ev.witness)
