"""A language as the user gives it: one typed source, read and parsed in one place.

Every interface — the HTTP API, the CLI, the Python API, batch rows and job specs — names a language
by exactly one of four kinds of source, and hands it here:

* :class:`RegexSource` — a regex (docs/regex.md) over an explicit alphabet;
* :class:`DfaSource` — a DFA as JSON (the named input schema or the canonical list form, see
  :func:`langclass.core.ingest.parse.read_dfa_json`), JSON text, or a :class:`~langclass.core.automata.automaton.DFA`;
* :class:`FormulaSource` — a past-LTL formula (docs/formulas.md) over an explicit alphabet;
* :class:`ProgramSource` — a B-RASP program (docs/brasp.md) over an explicit alphabet.

:func:`language_source` (keyword fields) and :func:`source_from_mapping` (a JSON object) are the one
reader of the "exactly one kind, and an alphabet where the kind needs one" rule; an interface only
says which kinds it takes and how it spells them (``'regex'`` in the API, ``--regex`` in the CLI,
``dfa=`` in Python). :func:`parse_language` is the one parser from a source to the canonical
minimal DFA, its fingerprint and the source record; :func:`parse_source_program` gives the
:class:`~langclass.core.logic.brasp.Program` of a program source.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Union

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import AlphabetError, InputError, LangclassError, TimeLimitExceeded, UnsupportedError
from langclass.core.base.limits import DEFAULT_LIMITS, Deadline, Limits

__all__ = [
    "RegexSource", "DfaSource", "FormulaSource", "ProgramSource", "LanguageSource", "ParsedLanguage",
    "SOURCE_KINDS", "AUTOMATON_KINDS", "SPELLINGS", "language_source", "source_from_mapping", "parse_language",
    "parse_source_program", "mod_remainder_notes",
]


@dataclass(frozen=True)
class RegexSource:
    """A regex over ``alphabet`` (a sequence of single-character symbols)."""

    regex: str
    alphabet: Sequence[str]
    kind: ClassVar[str] = "regex"


@dataclass(frozen=True)
class DfaSource:
    """A DFA: a JSON object (mapping), JSON text (``str``/``bytes``: repeated keys are detected) or a
    :class:`DFA`. ``alphabet``, when given too, must equal the DFA's own; ``field`` is where the DFA
    sits in the input (``"dfa"`` in the API, ``"language"`` in a train spec): error fields are
    prefixed with it."""

    dfa: Mapping[str, Any] | str | bytes | DFA
    alphabet: Sequence[str] | None = None
    field: str = "dfa"
    kind: ClassVar[str] = "dfa"


@dataclass(frozen=True)
class FormulaSource:
    """A past-LTL formula over ``alphabet``."""

    formula: str
    alphabet: Sequence[str]
    kind: ClassVar[str] = "formula"


@dataclass(frozen=True)
class ProgramSource:
    """A B-RASP program over ``alphabet``."""

    program: str
    alphabet: Sequence[str]
    kind: ClassVar[str] = "program"


LanguageSource = Union[RegexSource, DfaSource, FormulaSource, ProgramSource]
"""One of the four kinds of source."""

SOURCE_KINDS: tuple[str, ...] = ("regex", "dfa", "formula", "program")
AUTOMATON_KINDS: tuple[str, ...] = ("regex", "dfa", "formula")
"""The kinds :func:`parse_language` turns into an automaton (a B-RASP program is run, not converted)."""

SPELLINGS: dict[str, dict[str, str]] = {
    "api": {"regex": "'regex'", "dfa": "'dfa'", "formula": "'formula'", "program": "'program'", "alphabet": "'alphabet'"},
    "cli": {"regex": "--regex", "dfa": "--dfa", "formula": "--formula", "program": "--program", "alphabet": "--alphabet"},
    "python": {"regex": "regex", "dfa": "dfa=", "formula": "formula=", "program": "program=", "alphabet": "alphabet="},
}
"""How each interface writes the fields in messages (JSON keys, CLI options, Python arguments)."""


def _one_of(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def language_source(
    *,
    regex: str | None = None,
    dfa: Mapping[str, Any] | str | bytes | DFA | None = None,
    formula: str | None = None,
    program: str | None = None,
    alphabet: Sequence[str] | None = None,
    kinds: Sequence[str] = AUTOMATON_KINDS,
    spelling: str = "api",
    dfa_field: str = "dfa",
) -> LanguageSource:
    """The source named by keyword fields: exactly one of the ``kinds`` given, with ``alphabet``
    where the kind needs one (regex, formula, program; optional with a DFA, which carries its own).

    Args:
        kinds: the kinds this interface takes (a field of another kind is an error like any other).
        spelling: ``"api"``, ``"cli"`` or ``"python"`` (:data:`SPELLINGS`): how messages name fields.
        dfa_field: where a DFA sits in the input (error fields are prefixed with it).

    Raises:
        InputError: none or several kinds given, or a kind this interface does not take
            (``field``: the second kind given, or the first kind when none is).
        AlphabetError: a regex, formula or program without ``alphabet`` (``field="alphabet"``).
    """
    spell = SPELLINGS[spelling]
    values = {"regex": regex, "dfa": dfa, "formula": formula, "program": program}
    given = [k for k in SOURCE_KINDS if values[k] is not None]
    if len(given) != 1 or given[0] not in kinds:
        what = "none" if not given else " and ".join(spell[k] for k in given)
        field = given[1] if len(given) > 1 else (given[0] if given else kinds[0])
        hint = " with " + spell["alphabet"] if spelling == "cli" and "dfa" in kinds and len(kinds) == 2 else ""
        names = [spell[k] + (hint if k == "regex" else "") for k in kinds]
        raise InputError(f"give exactly one of {_one_of(names)} (got {what})", field=field)
    kind = given[0]
    if kind == "dfa":
        return DfaSource(dfa, None if alphabet is None else tuple(alphabet), dfa_field)  # type: ignore[arg-type]
    if alphabet is None:
        raise AlphabetError(f"a {kind} needs an explicit alphabet: give {spell['alphabet']} (a list of symbols; "
                            "it is never inferred)", field="alphabet")
    cls = {"regex": RegexSource, "formula": FormulaSource, "program": ProgramSource}[kind]
    return cls(values[kind], alphabet)  # type: ignore[arg-type]


def source_from_mapping(spec: Any, *, kinds: Sequence[str] = AUTOMATON_KINDS, dfa_field: str = "dfa") -> LanguageSource:
    """The source named by a JSON object such as ``{"regex": "(ab)*", "alphabet": ["a", "b"]}`` or
    ``{"dfa": {...}}`` (other keys are left to the caller). Raises what :func:`language_source` raises,
    and InputError when ``spec`` is not an object."""
    if not isinstance(spec, Mapping):
        raise InputError(f"a language is an object with one of {_one_of([repr(k) for k in kinds])} "
                         f"(and 'alphabet'); got {type(spec).__name__}")
    return language_source(**{k: spec[k] for k in SOURCE_KINDS if k in spec}, alphabet=spec.get("alphabet"),
                           kinds=kinds, dfa_field=dfa_field)


@dataclass(frozen=True)
class ParsedLanguage:
    """A parsed source.

    Attributes:
        dfa: the canonical minimal complete DFA.
        fingerprint: its SHA-256 fingerprint (the language id).
        source: the input as given: ``{"kind": "regex"|"dfa"|"formula", ...}`` (a formula's record
            adds ``parsed``, its normalized text, and ``notes`` when it has any).
        document: the DFA JSON object as given (``None`` for other kinds and for a :class:`DFA`).
        formula: the parsed :class:`~langclass.core.logic.formulas.Formula` of a formula source (else ``None``).
    """

    dfa: DFA
    fingerprint: str
    source: dict[str, Any]
    document: Mapping[str, Any] | None = None
    formula: Any = None


def _prefixed(err: InputError, prefix: str) -> InputError:
    err.field = prefix if err.field is None else f"{prefix}.{err.field}"
    return err


def parse_language(source: LanguageSource, limits: Limits = DEFAULT_LIMITS, *, deadline: Deadline | None = None) -> ParsedLanguage:
    """The canonical minimal DFA of a source, with its fingerprint and the source record.

    Raises:
        RegexSyntaxError, DfaFormatError, FormulaSyntaxError, UnknownSymbolError, AlphabetError,
            LimitExceeded: from the parsers (a DFA's error fields prefixed with ``source.field``).
        AlphabetError: an ``alphabet`` given with a DFA that differs from the DFA's own.
        UnsupportedError: a :class:`ProgramSource` (a B-RASP program is run, not turned into an
            automaton: :func:`parse_source_program`).
    """
    document: Mapping[str, Any] | None = None
    formula = None
    if isinstance(source, RegexSource):
        from .parse import parse_regex

        try:
            machine = parse_regex(source.regex, list(source.alphabet), limits, deadline=deadline)
        except LangclassError as err:  # a limit (max_states) of this regex names it
            if err.field is None and not isinstance(err, TimeLimitExceeded):
                err.field = "regex"
            raise
        record: dict[str, Any] = {"kind": "regex", "regex": source.regex, "alphabet": list(source.alphabet)}
    elif isinstance(source, DfaSource):
        machine, record, document = _parse_dfa(source, limits)
    elif isinstance(source, FormulaSource):
        from langclass.core.logic.formulas import formula_to_dfa, parse_formula

        try:
            formula = parse_formula(source.formula, list(source.alphabet), limits)
            machine = formula_to_dfa(formula, list(source.alphabet), limits)
        except LangclassError as err:  # an input error or a limit (max_states) of this formula
            if err.field is None and not isinstance(err, TimeLimitExceeded):
                err.field = "formula"
            raise
        record = {"kind": "formula", "formula": source.formula, "alphabet": list(source.alphabet), "parsed": formula.text()}
        notes = mod_remainder_notes(source.formula)
        if notes:
            record["notes"] = notes
    elif isinstance(source, ProgramSource):
        raise UnsupportedError("a B-RASP program is run, not turned into an automaton: give the language as a "
                               "regex, DFA or formula", field="program")
    else:
        raise InputError(f"not a language source: {type(source).__name__}")
    machine = machine.canonical()
    return ParsedLanguage(machine, machine.fingerprint(), record, document, formula)


def _parse_dfa(source: DfaSource, limits: Limits) -> tuple[DFA, dict[str, Any], Mapping[str, Any] | None]:
    from .parse import normalize_alphabet, parse_dfa_json

    data = source.dfa
    if isinstance(data, DFA):
        from langclass.core.automata.export import dfa_to_json

        machine, document = data, None
        record = {"kind": "dfa", "dfa": dfa_to_json(data)}
    else:
        if not isinstance(data, (str, bytes, Mapping)):
            from langclass.core.base.errors import DfaFormatError

            raise DfaFormatError(f"the DFA must be a JSON object or JSON text, not {type(data).__name__}", field=source.field)
        try:
            machine = parse_dfa_json(data if isinstance(data, (str, bytes)) else dict(data), limits)
        except InputError as err:
            raise _prefixed(err, source.field) from None
        document = json.loads(data) if isinstance(data, (str, bytes)) else dict(data)
        record = {"kind": "dfa", "dfa": document}
    if source.alphabet is not None and tuple(normalize_alphabet(source.alphabet)) != tuple(machine.alphabet):
        raise AlphabetError("'alphabet' differs from the DFA's own alphabet (omit it, or give the same symbols in "
                            "the same order)", field="alphabet")
    return machine, record, document


def parse_source_program(source: ProgramSource, limits: Limits = DEFAULT_LIMITS) -> Any:
    """The :class:`~langclass.core.logic.brasp.Program` of a program source (errors as
    :func:`langclass.core.logic.brasp.parse_program` raises them)."""
    from langclass.core.logic.brasp import parse_program

    return parse_program(source.program, source.alphabet, limits)


_MOD_ATOM = re.compile(r"MOD\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)|MOD_(\d+)\^(\d+)")


def mod_remainder_notes(formula: str) -> list[str]:
    """One note per ``MOD(m, r)`` / ``MOD_m^r`` of ``formula`` whose remainder r is not in 0..m−1:
    the formula syntax reads r modulo m (docs/formulas.md), which the record says out loud.

    >>> mod_remainder_notes("MOD(2,5) & a")
    ['MOD(2,5) is read as MOD(2,1): the remainder is taken modulo m']
    """
    notes = []
    for match in _MOD_ATOM.finditer(formula):
        m, r = (int(g) for g in (match.group(1, 2) if match.group(1) is not None else match.group(3, 4)))
        if m >= 1 and r >= m:
            notes.append(f"{match.group(0)} is read as MOD({m},{r % m}): the remainder is taken modulo m")
    return notes
