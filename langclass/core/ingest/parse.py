"""Ingest a regular language: a regex over an explicit alphabet, or a DFA as JSON.

Both entry points return the *canonical minimal complete DFA* (:meth:`DFA.canonical`): unreachable
states removed, Myhill–Nerode-equivalent states merged (the sink counts as a state, as in textbooks),
states numbered breadth-first from the initial state with letters in alphabet order. Two inputs
describing the same language over the same alphabet therefore give equal DFAs and equal
:meth:`DFA.fingerprint` values.

Every problem with the input raises a typed :class:`~langclass.core.base.errors.InputError` subclass
naming the offending item (``field`` is a path into the input such as ``"transitions.q1.c"`` or
``"states[2]"``); every expensive step is bounded by :class:`~langclass.core.base.limits.Limits`.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import DfaFormatError, UnknownSymbolError
from langclass.core.base.inputs import check_alphabet, has_surrogate, unsafe_character
from langclass.core.base.limits import DEFAULT_LIMITS, Deadline, Limits

__all__ = ["normalize_alphabet", "parse_regex", "parse_dfa_json", "read_dfa_json", "DFA_KEYS"]

#: Keys of the DFA JSON object (all required).
DFA_KEYS = ("alphabet", "states", "initial", "accepting", "transitions")


# ------------------------------------------------------------------------------ alphabet

def normalize_alphabet(symbols: Any, limits: Limits = DEFAULT_LIMITS, *, field: str = "alphabet") -> tuple[str, ...]:
    """Validate an ordered alphabet and NFC-normalize it: :func:`langclass.core.base.inputs.check_alphabet`
    (kept under this name for its callers).

    Raises:
        AlphabetError / LimitExceeded: see :func:`~langclass.core.base.inputs.check_alphabet`.

    Example:
        >>> normalize_alphabet(["a", "e\\u0301"])  # e + combining acute → é
        ('a', 'é')
    """
    return check_alphabet(symbols, limits, field=field)


# --------------------------------------------------------------------------------- regex


def parse_regex(
    regex: str, alphabet: Sequence[str], limits: Limits = DEFAULT_LIMITS, *, deadline: Deadline | None = None
) -> DFA:
    """The canonical minimal complete DFA of a regex over an explicit alphabet.

    Syntax (see ``docs/regex.md``): union ``|``, concatenation, ``*``, ``+``, ``?``, ``{n}``, ``{n,}``,
    ``{n,m}``, parentheses, ``ε`` or ``()`` for the empty word, ``∅`` for the empty language, ``.``
    for any symbol, ``&`` intersection and ``~`` complement w.r.t. Σ*; whitespace is ignored; ``\\c``
    escapes a reserved character ``c``. Symbols are single characters of ``alphabet``.

    Args:
        regex: the regex text (NFC-normalized before parsing; positions refer to the normalized text).
        alphabet: the ordered alphabet (list of single-character strings); it is part of the
            language's identity, nothing is ever inferred from the regex.
        limits: ``max_regex_length``, ``max_nesting_depth``, ``max_repetition``, ``max_states``
            (default 100,000 DFA states after determinization), ``time_limit_s``.
        deadline: share a running :class:`Deadline` instead of starting ``limits.deadline()``.

    Returns:
        canonical minimal complete :class:`DFA` (sink included when the language has one).

    Raises:
        RegexSyntaxError: malformed regex; ``extra['position']`` is the 0-based offset.
        UnknownSymbolError: a regex symbol not in ``alphabet`` (``extra['symbol']``, ``extra['position']``).
        AlphabetError: bad alphabet, or a symbol longer than one character.
        LimitExceeded / TimeLimitExceeded: a limit was hit; ``extra['limit']`` names it.

    Example:
        >>> parse_regex("(a|b)*a", ["a", "b"]).num_states
        2
        >>> parse_regex("a{0}", ["a"]).accepts([]), parse_regex("a{0}", ["a"]).accepts(["a"])
        (True, False)
    """
    from .regex import regex_to_dfa

    alpha = check_alphabet(alphabet, limits)
    return regex_to_dfa(regex, alpha, limits, deadline)


# ------------------------------------------------------------------------------ DFA JSON


class _PairsDict(dict):
    """A JSON object that remembers keys given more than once (``object_pairs_hook``)."""

    __slots__ = ("duplicates",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__()
        self.duplicates: list[str] = []
        for k, v in pairs:
            if k in self:
                self.duplicates.append(k)
            self[k] = v


def _check_duplicates(obj: Any, field: str) -> None:
    dups = getattr(obj, "duplicates", None)
    if dups:
        where = field or "the top-level object"
        raise DfaFormatError(f"duplicate JSON key {dups[0]!r} in {where}", field=(f"{field}.{dups[0]}" if field else dups[0]), key=dups[0])


def _state_key(name: Any, field: str) -> str:
    """Normalized name of a state: integers and strings are matched up (``1`` ≡ ``"1"``)."""
    if isinstance(name, bool) or name is None:
        raise DfaFormatError(f"state name {json.dumps(name)} is not a string or an integer", field=field)
    if isinstance(name, int):
        return str(name)
    if isinstance(name, str):
        if name == "":
            raise DfaFormatError("a state name is the empty string", field=field)
        if has_surrogate(name):
            raise DfaFormatError("a state name holds a lone UTF-16 surrogate, which is not Unicode text", field=field)
        why = unsafe_character(name)
        if why is not None:  # NUL cannot be stored; controls and bidi overrides garble the drawing and the tables
            raise DfaFormatError(f"state name {json.dumps(name)} cannot be used: {why}", field=field)
        return unicodedata.normalize("NFC", name)
    if isinstance(name, float) and math.isfinite(name) and name.is_integer():
        raise DfaFormatError(f"state name {name!r} is a float; write the integer {int(name)}", field=field)
    raise DfaFormatError(f"state name {name!r} ({type(name).__name__}) is not a string or an integer", field=field)


def _decode(data: str | bytes | bytearray | Mapping) -> Any:
    if isinstance(data, (bytes, bytearray)):
        try:
            data = bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise DfaFormatError(f"the DFA JSON is not valid UTF-8 (byte {e.start})", field=None) from None
    if isinstance(data, str):
        try:
            return json.loads(data, object_pairs_hook=_PairsDict, parse_constant=_reject_constant)
        except json.JSONDecodeError as e:
            raise DfaFormatError(
                f"the DFA is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", line=e.lineno, column=e.colno
            ) from None
        except RecursionError:
            raise DfaFormatError("the DFA JSON is nested too deeply") from None
    return data


def _reject_constant(name: str) -> Any:
    raise DfaFormatError(f"the DFA JSON contains {name}, which is not JSON")


_CANONICAL_KEYS = ("alphabet", "initial", "accepting", "transitions")


def _read_canonical_form(doc: Mapping, limits: Limits) -> DFA:
    """The canonical list form of DFA JSON (see :func:`read_dfa_json`), checked item by item."""
    for key in doc:
        if key not in _CANONICAL_KEYS:
            raise DfaFormatError(f"unknown key {key!r} in the DFA object (the list form allows: {', '.join(_CANONICAL_KEYS)})",
                                 field=str(key), key=key)
    if "alphabet" not in doc:
        raise DfaFormatError("the DFA object lacks the required key 'alphabet'", field="alphabet", key="alphabet")
    alphabet = normalize_alphabet(doc["alphabet"], limits)
    trans = doc["transitions"]
    if not isinstance(trans, list) or not trans:
        raise DfaFormatError("transitions must be a non-empty list with one row per state", field="transitions")
    n = len(trans)
    limits.check("max_states", n)
    for q, row in enumerate(trans):
        if not isinstance(row, list) or len(row) != len(alphabet):
            raise DfaFormatError(f"transitions[{q}] must be a list of {len(alphabet)} targets, one per symbol of the alphabet",
                                 field=f"transitions[{q}]")
        for i, t in enumerate(row):
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < n:
                raise DfaFormatError(f"transitions[{q}][{i}] (state {q}, symbol {alphabet[i]!r}) is {json.dumps(t)}, "
                                     f"not a state 0..{n - 1}", field=f"transitions[{q}][{i}]")
    init = doc.get("initial", 0)
    acc = doc.get("accepting", [])
    if isinstance(init, bool) or not (isinstance(init, int) and 0 <= init < n):
        raise DfaFormatError(f"initial {init!r} is not a state", field="initial")
    if not isinstance(acc, list):
        raise DfaFormatError("accepting must be a list of states 0..n-1", field="accepting")
    seen: set[int] = set()
    for i, q in enumerate(acc):
        if isinstance(q, bool) or not isinstance(q, int) or not 0 <= q < n:
            raise DfaFormatError(f"accepting[{i}] is {json.dumps(q)}, not a state 0..{n - 1}", field=f"accepting[{i}]")
        if q in seen:
            raise DfaFormatError(f"accepting state {q} is listed twice", field=f"accepting[{i}]")
        seen.add(q)
    return DFA.from_table(list(alphabet), trans, init, acc)


def parse_dfa_json(data: str | bytes | Mapping, limits: Limits = DEFAULT_LIMITS) -> DFA:
    """The canonical minimal complete DFA of a DFA given as JSON (:func:`read_dfa_json`, then
    :meth:`DFA.canonical`); raises what :func:`read_dfa_json` raises."""
    return read_dfa_json(data, limits)[0].canonical()


def read_dfa_json(data: str | bytes | Mapping, limits: Limits = DEFAULT_LIMITS) -> tuple[DFA, list[str]]:
    """The DFA given as JSON, completed but not minimized, with the user's state names.

    Schema::

        {"alphabet": ["a", "b"], "states": ["q0", "q1", 2], "initial": "q0",
         "accepting": ["q1"], "transitions": {"q0": {"a": "q1", "b": 2}, "q1": {"a": "q1"}, "2": {}}}

    The canonical form that :meth:`DFA.to_canonical_dict` writes (stored languages, job specs) is
    read too: no ``states``, states ``0..n-1``, ``transitions`` a list with one row per state and
    one target per symbol in alphabet order, ``initial`` a state (default 0), ``accepting`` a list::

        {"alphabet": ["a", "b"], "initial": 0, "accepting": [0], "transitions": [[1, 2], [2, 0], [2, 2]]}

    State names are strings or integers; JSON object keys are always strings, so ``"2"`` in
    ``transitions`` means the state ``2`` (a state list holding both ``2`` and ``"2"`` is an error).
    Symbols may be multi-character strings; they are NFC-normalized. Missing transitions (a state
    absent from ``transitions``, or a symbol absent from its row) go to a sink state that is added.

    Args:
        data: JSON text (``str``/``bytes``; duplicate keys are detected) or an already decoded mapping.
        limits: ``max_alphabet``, ``max_states``.

    Returns:
        ``(dfa, names)``: the complete :class:`DFA` with state ``i`` = ``states[i]`` (a sink state
        ``len(states)`` is appended when some transition is missing), and ``names[i]`` the name of
        state ``i`` as text (the sink has none: ``len(names) == len(states)``).

    Raises:
        DfaFormatError: invalid JSON, duplicate key, missing or unknown top-level key, bad or colliding
            state name, unknown state, initial state not listed, a list of targets (nondeterminism).
            ``field`` names the item, e.g. ``"transitions.q0.a"``.
        AlphabetError: empty alphabet, empty/non-string/duplicate symbol (``field`` = ``"alphabet[i]"``).
        UnknownSymbolError: a transition on a symbol not in the alphabet (``field`` = ``"transitions.q.sym"``).
        LimitExceeded: ``max_alphabet`` or ``max_states``.
    """
    doc = _decode(data)
    if not isinstance(doc, Mapping):
        raise DfaFormatError(f"the DFA must be a JSON object, not {type(doc).__name__}")
    _check_duplicates(doc, "")
    if isinstance(doc.get("transitions"), list) and "states" not in doc:
        dfa = _read_canonical_form(doc, limits)
        return dfa, [str(q) for q in range(dfa.num_states)]
    for key in doc:
        if key not in DFA_KEYS:
            raise DfaFormatError(f"unknown key {key!r} in the DFA object (allowed: {', '.join(DFA_KEYS)})", field=str(key), key=key)
    if isinstance(doc.get("transitions"), list) and not isinstance(doc.get("states"), (list, tuple)):
        # list-form transitions with a 'states' key that is no list: neither form; say which key is wrong
        raise DfaFormatError(f"'states' must be a list of state names, not {type(doc['states']).__name__}; leave it "
                             "out to give 'transitions' in the list form (row q = the successors of state q)",
                             field="states")
    for key in DFA_KEYS:
        if key not in doc:
            raise DfaFormatError(f"the DFA object lacks the required key {key!r}", field=key, key=key)

    alphabet = normalize_alphabet(doc["alphabet"], limits)
    letter = {s: i for i, s in enumerate(alphabet)}
    k = len(alphabet)

    states = doc["states"]
    if isinstance(states, (str, bytes)) or not isinstance(states, Sequence):
        raise DfaFormatError(f"'states' must be a list of state names, not {type(states).__name__}", field="states")
    if len(states) == 0:
        raise DfaFormatError("the DFA has no states ('states' is empty)", field="states")
    limits.check("max_states", len(states))
    index: dict[str, int] = {}
    for i, name in enumerate(states):
        key = _state_key(name, f"states[{i}]")
        if key in index:
            j = index[key]
            how = "is listed twice" if states[j] == name else f"collides with state {states[j]!r} at index {j} (names are matched as strings)"
            raise DfaFormatError(f"state {name!r} at index {i} {how}", field=f"states[{i}]", state=key)
        index[key] = i
    n = len(states)

    def lookup(name: Any, field: str) -> int:
        if isinstance(name, list):
            raise DfaFormatError(
                f"{field} is a list {name!r}: a DFA has exactly one target per state and symbol (nondeterminism is not allowed)",
                field=field,
            )
        key = _state_key(name, field)
        j = index.get(key)
        if j is None:
            raise DfaFormatError(f"{field} refers to {name!r}, which is not in 'states'", field=field, state=key)
        return j

    initial = doc["initial"]
    if isinstance(initial, list):
        raise DfaFormatError(f"'initial' must be one state, not a list {initial!r}", field="initial")
    init = lookup(initial, "initial")

    accepting = doc["accepting"]
    if isinstance(accepting, (str, bytes)) or not isinstance(accepting, Sequence):
        raise DfaFormatError(f"'accepting' must be a list of state names, not {type(accepting).__name__}", field="accepting")
    acc = np.zeros(n + 1, dtype=bool)
    for i, name in enumerate(accepting):
        j = lookup(name, f"accepting[{i}]")
        if acc[j]:
            raise DfaFormatError(f"accepting state {name!r} is listed twice", field=f"accepting[{i}]")
        acc[j] = True

    trans = doc["transitions"]
    if not isinstance(trans, Mapping):
        raise DfaFormatError(f"'transitions' must be an object {{state: {{symbol: state}}}}, not {type(trans).__name__}", field="transitions")
    _check_duplicates(trans, "transitions")
    sink = n
    table = np.full((n + 1, k), sink, dtype=np.int64)
    given: dict[int, Any] = {}
    for qname, row in trans.items():
        qfield = f"transitions.{qname}"
        q = lookup(qname, qfield)
        if q in given:
            raise DfaFormatError(
                f"transitions of state {qname!r} are given twice (as {given[q]!r} and {qname!r})", field=qfield, state=str(qname)
            )
        given[q] = qname
        if not isinstance(row, Mapping):
            if isinstance(row, list):
                raise DfaFormatError(
                    f"{qfield} must be an object {{symbol: state}}, not a list", field=qfield
                )
            raise DfaFormatError(f"{qfield} must be an object {{symbol: state}}, not {type(row).__name__}", field=qfield)
        _check_duplicates(row, qfield)
        seen_letters: dict[int, str] = {}
        for sym, target in row.items():
            sfield = f"{qfield}.{sym}"
            if not isinstance(sym, str) or sym == "":
                raise UnknownSymbolError(f"{sfield}: transition symbol {sym!r} is not a non-empty string", field=sfield, symbol=repr(sym))
            nsym = unicodedata.normalize("NFC", sym)
            a = letter.get(nsym)
            if a is None:
                raise UnknownSymbolError(
                    f"{sfield}: symbol {sym!r} is not in the alphabet {list(alphabet)}", field=sfield, symbol=nsym, state=str(qname)
                )
            if a in seen_letters:
                raise DfaFormatError(
                    f"{qfield}: symbols {seen_letters[a]!r} and {sym!r} are the same symbol once NFC-normalized", field=sfield
                )
            seen_letters[a] = sym
            table[q, a] = lookup(target, sfield)
    # the sink (row n) loops on itself; drop it when no edge reaches it
    if (table[:n] == sink).any():
        dfa = DFA(alphabet, table, init, acc)
    else:
        dfa = DFA(alphabet, table[:n], init, acc[:n])
    return dfa, [_state_key(name, f"states[{i}]") for i, name in enumerate(states)]
