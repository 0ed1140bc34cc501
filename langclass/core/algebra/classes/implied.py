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

__all__ = ["Implied", "ImpliedWitness", "implied_result", "implied_period", "MOD_FREE"]


@dataclass(frozen=True)
class Implied(Evidence):
    """Member because the language is in ``implied_by`` ⊆ this class; ``certificate`` is that class's."""

    CHECK = "implied_by ⊆ this class in the lattice, and implied_by's certificate replays"
    implied_by: str
    inclusion: str
    certificate: Any = None

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "evidence") -> Implied:
        by = _key(d, where, ("implied_by", "inclusion", "certificate"))
        raw = d.get("certificate")
        cert = None if raw is None else parse_evidence(REGISTRY[by].certificate_types, raw, f"{where}.certificate")
        inclusion = d.get("inclusion", "")
        if not isinstance(inclusion, str):
            raise ValueError(f"{where}.inclusion: expected a string, got {type(inclusion).__name__}")
        return cls(by, inclusion, cert)


@dataclass(frozen=True)
class ImpliedWitness(Evidence):
    """Not a member because the language is not in ``implied_by`` ⊇ this class; ``witness`` is that class's."""

    CHECK = "this class ⊆ implied_by in the lattice, and implied_by's witness replays"
    implied_by: str
    witness: Any = None

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "evidence") -> ImpliedWitness:
        by = _key(d, where, ("implied_by", "witness"))
        raw = d.get("witness")
        wit = None if raw is None else parse_evidence(REGISTRY[by].witness_types, raw, f"{where}.witness")
        return cls(by, wit)


def _key(d: Any, where: str, fields: tuple[str, ...]) -> str:
    """The ``implied_by`` key of a record with no fields but ``fields`` (and ``check``).

    Raises:
        ValueError: not an object, an unknown field, or ``implied_by`` not a class key."""
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected an object, got {type(d).__name__}")
    extra = set(d) - set(fields) - {"check"}
    if extra:
        raise ValueError(f"{where}: unknown fields {sorted(extra)} for an answer implied through the lattice")
    by = d.get("implied_by")
    if not isinstance(by, str) or by not in REGISTRY:
        raise ValueError(f"{where}.implied_by: not a class key: {by!r}"[:300])
    return by


MOD_FREE = {"ltl_p_mod": "ltl_p", "ltl_p_y_mod": "ltl_p_y"}
"""The classes with a period (least k of LTL[P,MOD_k], least m of LTL[P,Y,MOD_m]) and their
MOD-free counterparts: a language of the counterpart has period 1."""


def implied_period(key: str, by: str) -> int | None:
    """The period an implied membership of ``key`` carries: 1 when the implying class ``by`` lies
    inside ``key``'s MOD-free counterpart (e.g. locally testable ⊆ LTL[P,Y], so m = 1), else None
    (not determined by the inclusion; also for classes without a period)."""
    free = MOD_FREE.get(key)
    return 1 if free is not None and (by == free or free in implied_by(by)) else None


def implied_result(key: str, val: bool, by: ClassResult, error: dict[str, Any] | None = None) -> ClassResult:
    """The answer for ``key`` implied by the decided answer ``by`` (see :func:`langclass.core.algebra.lattice.infer`).
    A member of a class with a period gets :func:`implied_period`; when the inclusion does not
    determine it, the reason says so."""
    nb, nk = CLASS_INFO[by.key].name, CLASS_INFO[key].name
    rel = f"{nb} ⊆ {nk}" if val else f"{nk} ⊆ {nb}"
    cert = Implied(by.key, rel, by.certificate) if val else None
    wit = None if val else ImpliedWitness(by.key, by.witness)
    period = implied_period(key, by.key) if val else None
    reason = f"{'member' if val else 'not a member'} because the language is {'in' if val else 'not in'} {nb} and {rel}"
    if val and key in MOD_FREE:
        free = CLASS_INFO[MOD_FREE[key]].name
        reason += (f"; period 1 ({nb} ⊆ {free})" if period == 1 else
                   "; the least period is not determined by this inclusion (the decision hit a limit)"
                   + (f", but it is at most k = {by.period} (LTL[P,MOD_k] ⊆ LTL[P,Y,MOD_k])"
                      if key == "ltl_p_y_mod" and by.key == "ltl_p_mod" and by.period else ""))
    return ClassResult(key, val, reason, cert if val else wit, wit, CLASS_INFO[key].source, "lattice",
                       period=period, error=error)


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
