"""What every class decision shares: the result, typed evidence, and the registered decider.

A decision is a :class:`ClassResult` whose ``certificate`` (members) and ``witness`` (non-members)
are frozen dataclasses deriving from :class:`Evidence`: their fields are JSON scalars, tuples
(words are tuples of symbols) and nested evidence, so ``to_dict()`` gives the JSON-ready record and
``from_dict()`` reads it back (what :func:`langclass.core.algebra.classes.replay` does with a record a user
hands in). Each class is one :class:`Decider` — key, ``decide``, the certificate and witness types,
the replay checks and the one-line rendering — registered in :data:`REGISTRY`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from functools import cache
from collections.abc import Mapping, Sequence
from typing import Any, Callable, ClassVar, TypeVar

from ..lattice import CLASS_INFO

__all__ = [
    "CERT_LIST_MAX",
    "ClassResult",
    "Decider",
    "Evidence",
    "REGISTRY",
    "register",
    "make_result",
    "parse_evidence",
    "show",
    "words",
    "truncate",
    "STATE_FIELDS",
    "state_label",
    "with_state_names",
]

CERT_LIST_MAX = 1000
"""Lists in certificates (state orders, components) are cut at this length (``truncated`` is then true)."""

E = TypeVar("E", bound="Evidence")


def words(word) -> tuple[str, ...]:
    """A word (any iterable of symbols) as a tuple of strings."""
    return tuple(str(s) for s in word)


def show(word) -> str:
    """A word for a reader: ε when empty; run together when every symbol is one letter (``abba``);
    quoted with its symbols separated by spaces when every symbol is one character but some is not a
    letter (``"( ) ) ("``, ``"0 1 1 0"``: run together, brackets and digits read as the text around
    them — ``η(()()))``); else joined by '·' (``x1·x2``)."""
    if word is None:
        return "ε"
    word = list(word)
    if not word:
        return "ε"
    if all(len(s) == 1 for s in word):
        if all(s.isalpha() for s in word):
            return "".join(word)
        return '"' + " ".join(word) + '"'
    return "·".join(word)


STATE_FIELDS = frozenset({"state", "p", "q", "cycle", "states", "topological_order", "successors", "image", "points",
                          "hasse"})
"""Evidence fields whose values are states of the canonical minimal DFA (an int, a list of ints, or
``hasse``'s pairs) — shown with the user's state names where the input named its states."""


def state_label(q: int, names: Mapping[int, Sequence[str]] | None) -> str:
    """A canonical state for a reader: ``"4 (canonical 0)"`` when the user named it 4, else ``"0"``."""
    given = names.get(int(q)) if names else None
    if not given:
        return str(q)
    return f"{', '.join(given)} (canonical {q})"


def with_state_names(d: Any, names: Mapping[int, Sequence[str]] | None) -> Any:
    """An evidence record (``to_dict()``) with every state of :data:`STATE_FIELDS` — also inside
    nested evidence — replaced by its :func:`state_label` (the record itself is not changed; without
    names it is returned as it is)."""
    if not names:
        return d

    def lab(v: Any) -> Any:
        if isinstance(v, bool):
            return v
        if isinstance(v, int):
            return state_label(v, names)
        if isinstance(v, list):
            return [lab(x) for x in v]
        return v

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: (lab(v) if k in STATE_FIELDS else walk(v)) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    return walk(d)


def truncate(lst: list, limit: int = CERT_LIST_MAX) -> tuple[tuple, bool]:
    """``(lst[:limit], cut)`` as a tuple, with ``cut`` true when something was left out."""
    return (tuple(lst[:limit]), True) if len(lst) > limit else (tuple(lst), False)


_SCALARS = frozenset({str, int, bool, float, type(None)})  # exact types: returned as they are


def _to_json(v: Any) -> Any:
    if isinstance(v, Evidence):
        return v.to_dict()
    if isinstance(v, (tuple, list)):
        return [x if type(x) in _SCALARS else _to_json(x) for x in v]
    return v


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _from_json(tp: Any, v: Any, where: str) -> Any:
    if tp is Any:
        return v
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        arms = [a for a in typing.get_args(tp) if a is not type(None)]
        if v is None and len(arms) < len(typing.get_args(tp)):
            return None
        errors = []
        for arm in arms:
            try:
                return _from_json(arm, v, where)
            except ValueError as err:
                errors.append(str(err))
        raise ValueError("; ".join(errors))
    if origin is tuple:
        if not isinstance(v, (list, tuple)):
            raise ValueError(f"{where}: expected a list, got {type(v).__name__}")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from_json(args[0], x, f"{where}[{i}]") for i, x in enumerate(v))
        if len(args) != len(v):
            raise ValueError(f"{where}: expected {len(args)} items, got {len(v)}")
        return tuple(_from_json(a, x, f"{where}[{i}]") for i, (a, x) in enumerate(zip(args, v)))
    if isinstance(tp, type) and issubclass(tp, Evidence):
        if not isinstance(v, dict):
            raise ValueError(f"{where}: expected an object, got {type(v).__name__}")
        return tp.from_dict(v, where)
    if tp is bool:
        if not isinstance(v, bool):
            raise ValueError(f"{where}: expected a boolean, got {v!r}")
        return v
    if tp is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{where}: expected an integer, got {v!r}")
        return v
    if tp is str:
        if not isinstance(v, str):
            raise ValueError(f"{where}: expected a string, got {v!r}")
        return v
    raise TypeError(f"{where}: unsupported field type {tp!r}")


class Evidence:
    """Base of the frozen certificate and witness dataclasses.

    Subclasses are ``@dataclass(frozen=True)``; fields are ``int``, ``bool``, ``str``, tuples of
    those (a word is ``tuple[str, ...]``), nested evidence, or optional versions of these. ``CHECK``
    says in one line what :func:`~langclass.core.algebra.classes.replay` verifies; it is written into the
    record as ``"check"``.
    """

    CHECK: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready record: fields in order (tuples as lists), then ``"check"``."""
        out = {}
        for name in _field_names(type(self)):
            v = getattr(self, name)
            out[name] = v if type(v) in _SCALARS else _to_json(v)
        if self.CHECK:
            out["check"] = self.CHECK
        return out

    @classmethod
    def from_dict(cls: type[E], d: dict[str, Any], where: str = "evidence") -> E:
        """Read a record written by :meth:`to_dict` (``"check"`` is ignored).

        Raises:
            ValueError: a field is missing, unknown or of the wrong type (the message names it).
        """
        hints = _hints(cls)
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        extra = set(d) - names - {"check"}
        if extra:
            raise ValueError(f"{where}: unknown fields {sorted(extra)} for {cls.__name__}")
        kw = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name not in d:
                if f.default is not dataclasses.MISSING:
                    continue
                raise ValueError(f"{where}: missing field {f.name!r} for {cls.__name__}")
            kw[f.name] = _from_json(hints[f.name], d[f.name], f"{where}.{f.name}")
        return cls(**kw)


def parse_evidence(types: tuple[type[Evidence], ...], d: Any, where: str = "evidence") -> Evidence:
    """Read a record as the first of ``types`` it fits.

    Raises:
        ValueError: it fits none (the message names each type's complaint).
    """
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected an object, got {type(d).__name__}")
    errors = []
    for tp in types:
        try:
            return tp.from_dict(d, where)
        except ValueError as err:
            errors.append(str(err))
    raise ValueError("; ".join(errors))


@dataclass(frozen=True)
class ClassResult:
    """The decision for one class.

    Attributes:
        key: class key (see :data:`langclass.core.algebra.lattice.CLASS_INFO`).
        member: ``True``/``False``, or ``None`` when a limit prevented the decision.
        reason: one human-readable line.
        certificate: the evidence for the answer (for members: what was checked, as data a replay
            can check on the DFA; for non-members the witness is repeated here).
        witness: the counterexample when ``member`` is ``False``, else ``None``.
        source: paper/theorem of the characterization used.
        method: ``"automaton"``, ``"monoid"``, ``"lattice"`` (implied by another answer) or ``"none"``.
        period: least k for ``ltl_p_mod`` members, least m for ``ltl_p_y_mod`` members (``None``
            when the membership is implied through the lattice), else ``None``.
        error: the limit error (``LangclassError.to_dict()``) when ``member`` is ``None``.
    """

    key: str
    member: bool | None
    reason: str
    certificate: Evidence | None
    witness: Evidence | None
    source: str
    method: str
    period: int | None = None
    error: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        info = CLASS_INFO[self.key]
        out: dict[str, Any] = {
            "key": self.key,
            "name": info.name,
            "logic": info.logic,
            "algebra": info.algebra,
            "member": self.member,
            "reason": self.reason,
            "certificate": None if self.certificate is None else self.certificate.to_dict(),
            "witness": None if self.witness is None else self.witness.to_dict(),
            "source": self.source,
            "method": self.method,
        }
        if self.key in ("ltl_p_mod", "ltl_p_y_mod"):
            out["period"] = self.period
        if self.error is not None:
            out["error"] = self.error
        return out


def make_result(key: str, member: bool | None, reason: str, certificate: Evidence | None = None,
                witness: Evidence | None = None, method: str = "monoid", **kw) -> ClassResult:
    """A :class:`ClassResult` with the class's source filled in from the lattice."""
    return ClassResult(key, member, reason, certificate, witness, CLASS_INFO[key].source, method, **kw)


@dataclass(frozen=True)
class Decider:
    """One class's decision procedure and everything that reads its evidence.

    Attributes:
        key: class key.
        decide: ``Context -> ClassResult``.
        certificate_types / witness_types: the evidence types a member's certificate / a
            non-member's witness may have (the first is what ``decide`` writes; more than one where
            another path, such as a counter found on the DFA alone, answers too).
        replay_yes / replay_no: ``(checker, evidence) -> None``, raise ``AssertionError`` when the
            evidence does not hold on the DFA (the checker is a
            :class:`~langclass.core.algebra.classes.replaykit.Checker`).
        on_automaton: decided from the minimal DFA alone (always answered, even over the monoid cap).
    """

    key: str
    decide: Callable[[Any], ClassResult]
    certificate_types: tuple[type[Evidence], ...]
    witness_types: tuple[type[Evidence], ...]
    replay_yes: Callable[[Any, Any], None]
    replay_no: Callable[[Any, Any], None]
    on_automaton: bool = False


REGISTRY: dict[str, Decider] = {}
"""Class key → its :class:`Decider`, in the order the families register (see ``classes/__init__``)."""


def register(decider: Decider) -> Decider:
    """Add a decider to :data:`REGISTRY` (one per class key).

    Raises:
        ValueError: the key is not a class of the lattice or is registered twice.
    """
    if decider.key not in CLASS_INFO:
        raise ValueError(f"unknown class key {decider.key!r}")
    if decider.key in REGISTRY:
        raise ValueError(f"class {decider.key!r} is registered twice")
    REGISTRY[decider.key] = decider
    return decider
