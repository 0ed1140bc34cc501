"""Turning a request into a classified language: parse → canonical DFA → analysis → record.

This is where a *classification* runs: the API routes, the CLI and batch classification all call
it, so ``langclass classify --json`` prints exactly the record ``POST /v1/classify`` returns. Other
modules use ``core`` for their own concerns (errors and limits everywhere; formulas and B-RASP in
:mod:`langclass.app.usecases.experiments`; the census in ``langclass.app.cli.census``); the experiment use cases live in
:mod:`langclass.app.usecases.experiments`.

Every step runs under the :class:`~langclass.core.base.limits.Limits` built from the settings; heavy work
runs off the event loop in :class:`~langclass.app.execution.runner.ClassifyRunner` (admission control, one
wall-clock budget per request, worker processes killed at the budget).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import TimeLimitExceeded
from langclass.core.base.limits import Limits
from langclass.core.ingest.source import ParsedLanguage, language_source
from langclass.core.ingest.source import parse_language as parse_source
from langclass.version import code_version  # one function for records, CLI and job results

__all__ = [
    "ClassificationCache",
    "ParsedLanguage",
    "parse_language",
    "analyze_language",
    "classification_record",
    "classification_json",
    "state_names_record",
    "ClassifiedJson",
    "limits_hit",
    "analysis_limits_hit",
    "classify",
    "classify_json",
    "code_version",
    "dfa_from_record",
    "find_duplicate_key",
    "monoid_page",
    "parse_and_analyze",
    "predicted_light",
    "dfa_json_states",
    "warm_predictor",
    "warm_worker",
]

def parse_language(
    *,
    regex: str | None = None,
    dfa: Mapping[str, Any] | str | bytes | None = None,
    formula: str | None = None,
    alphabet: Sequence[str] | None = None,
    limits: Limits,
) -> ParsedLanguage:
    """The API's keyword form of the one language parser: exactly one of ``regex`` / ``dfa`` /
    ``formula`` read by :func:`langclass.core.ingest.source.language_source` and parsed by
    :func:`langclass.core.ingest.source.parse_language` into the canonical minimal DFA.

    ``regex`` and ``formula`` need ``alphabet``; a ``dfa`` (a mapping, or JSON text so duplicate keys
    are detected) carries its own (a top-level ``alphabet`` given with it must be the same).

    Raises:
        InputError: none or several inputs given (``field`` names them).
        AlphabetError: regex/formula without an alphabet, or one that differs from the DFA's.
        RegexSyntaxError, DfaFormatError, FormulaSyntaxError, UnknownSymbolError, LimitExceeded:
            from the parsers in ``core``.
    """
    source = language_source(regex=regex, dfa=dfa, formula=formula, alphabet=alphabet)
    return parse_source(source, limits)


class _Pairs(list):
    """A JSON object kept as its list of (key, value) pairs, so repeated keys stay visible."""


def find_duplicate_key(raw: str | bytes) -> str | None:
    """The dotted path of the first key that a JSON object in ``raw`` repeats, or None.

    ``json.loads`` keeps the last of repeated keys silently; a DFA whose ``transitions`` repeat a
    state must be rejected instead (the request body is checked with this before parsing).
    """
    try:
        tree = json.loads(raw, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):
        return None  # not JSON: reported elsewhere

    stack: list[tuple[Any, str]] = [(tree, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _Pairs):
            seen: set[str] = set()
            for key, value in node:
                where = f"{path}.{key}" if path else key
                if key in seen:
                    return where
                seen.add(key)
                stack.append((value, where))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
    return None


def analyze_language(dfa: DFA, limits: Limits) -> dict[str, Any]:
    """The analysis record of ``dfa`` (``core.analysis.analyze(dfa, limits).to_dict()``)."""
    from langclass.core.classification.analysis import analyze

    return analyze(dfa, limits).to_dict()


def parse_and_analyze(
    *,
    regex: str | None = None,
    dfa: Mapping[str, Any] | str | bytes | None = None,
    formula: str | None = None,
    alphabet: Sequence[str] | None = None,
    limits: Limits,
) -> tuple[ParsedLanguage, dict[str, Any]]:
    """:func:`parse_language` then :func:`analyze_language` (one round trip to a worker process),
    under one budget: the analysis gets what parsing left of ``limits.time_limit_s``.

    Raises:
        TimeLimitExceeded: the budget ran out (``step`` names the step; ``value`` the whole budget).
    """
    t0 = time.monotonic()
    parsed = parse_language(regex=regex, dfa=dfa, formula=formula, alphabet=alphabet, limits=limits)
    rest = limits
    if limits.time_limit_s is not None:
        left = limits.time_limit_s - (time.monotonic() - t0)
        if left <= 0:
            err = TimeLimitExceeded("time_limit_s", limits.time_limit_s, f"time limit of {limits.time_limit_s} s exceeded during analysis")
            err.extra["step"] = "analysis"
            raise err
        rest = dataclasses.replace(limits, time_limit_s=left)
    try:
        return parsed, analyze_language(parsed.dfa, rest)
    except TimeLimitExceeded as err:
        err.value = err.extra["value"] = limits.time_limit_s
        raise


LIGHT_MAX_TEXT = 2_000
"""Longest regex / formula (characters) :func:`predicted_light` parses to predict its cost (a fixed
bound: a longer text goes to the main lane without being looked at)."""
LIGHT_PREDICT_TIME_S = 0.25
"""Wall-clock budget of one prediction (seconds; a cooperative deadline — the state bound is what
normally stops a prediction, after a few milliseconds)."""


def dfa_json_states(dfa: Any) -> int | None:
    """The number of states a DFA JSON object declares, read from its shape without parsing it: the
    length of ``states`` (named form) or of the ``transitions`` list (the canonical list form, which
    has no ``states``); None when the object has neither.

    >>> dfa_json_states({"alphabet": ["a", "b"], "transitions": [[1, 0], [2, 0], [2, 1]]})
    3
    """
    if not isinstance(dfa, Mapping):
        return None
    states, transitions = dfa.get("states"), dfa.get("transitions")
    if isinstance(states, list):
        return len(states)
    if "states" not in dfa and isinstance(transitions, list):
        return len(transitions)
    return None


def predicted_light(*, regex: str | None = None, dfa: Any = None, formula: str | None = None, program: str | None = None,
                    alphabet: Sequence[str] | None = None, max_states: int, limits: Limits | None = None,
                    max_text: int = LIGHT_MAX_TEXT, budget_s: float = LIGHT_PREDICT_TIME_S) -> bool:
    """Whether a classify request is small enough to try the light lane first
    (:meth:`~langclass.app.execution.runner.ClassifyRunner.run_light_first`), predicted from what
    the input really costs, not from its text: the request is parsed — regex → NFA → bounded subset
    construction, formula → automaton, DFA → completed and minimized — under ``limits`` lowered to
    at most ``max_states`` states of any intermediate automaton, :data:`max_text` characters and a
    ``budget_s`` deadline. Light means that parse finished: the minimal DFA has at most
    ``max_states`` states, for every input form (a DFA in the named form or the canonical list
    form, whose state count is read from its shape before anything is parsed).

    A request whose parse fails for another reason (a syntax error, an unknown symbol) is predicted
    light: the light lane answers that error at once. A B-RASP ``program`` is run, not turned into
    an automaton, so it is never light. Cost: at most ``max_states`` subset-construction steps (a
    few milliseconds); run it off the event loop
    (:meth:`~langclass.app.execution.runner.ClassifyRunner.predict`).

    >>> predicted_light(regex="(ab)*", alphabet=["a", "b"], max_states=256)
    True
    >>> predicted_light(regex="(a|b)*a" + "(a|b)" * 12, alphabet=["a", "b"], max_states=256)  # 8,192 states, no counter
    False
    """
    from langclass.core.base.errors import LangclassError, LimitExceeded
    from langclass.core.base.limits import DEFAULT_LIMITS, Deadline

    if program is not None:
        return False
    if dfa is not None:
        declared = dfa_json_states(dfa)
        if declared is not None and declared > max_states:
            return False
        if declared is not None and declared < max_states:
            # completed with a sink it has at most max_states states, so the bounded parse would
            # finish (light) or fail on the input (light too): no need to parse it twice
            return True
    else:
        text = regex if regex is not None else formula
        if isinstance(text, str) and len(text) > max_text:
            return False
    base = limits or DEFAULT_LIMITS
    lowered = dataclasses.replace(base, max_states=min(base.max_states, max_states),
                                  max_regex_length=min(base.max_regex_length, max_text), time_limit_s=budget_s)
    try:
        source = language_source(regex=regex, dfa=dfa, formula=formula, alphabet=alphabet)
        parse_source(source, lowered, deadline=Deadline(budget_s))
    except LimitExceeded:  # the state bound, the text bound or the prediction's deadline: heavy
        return False
    except (LangclassError, ValueError, TypeError):  # a bad input: the light lane answers its error at once
        return True
    return True


def warm_predictor() -> None:
    """Import what :func:`predicted_light` uses (the regex, DFA and formula parsers: ~0.2 s the
    first time), so the first prediction of a served process is not cut short by its deadline."""
    for kw in ({"regex": "(ab)*"}, {"formula": "a & Y b"}, {"dfa": {"alphabet": ["a", "b"], "transitions": [[1, 0], [0, 1]]}}):
        predicted_light(**kw, alphabet=None if "dfa" in kw else ["a", "b"], max_states=8)


def dfa_to_json(dfa: DFA) -> dict[str, Any]:
    """The canonical DFA in the DFA JSON schema (``core.export.dfa_to_json``)."""
    from langclass.core.automata.export import dfa_to_json as export

    return export(dfa)


def dfa_from_record(data: Mapping[str, Any], limits: Limits) -> DFA:
    """Rebuild a stored canonical DFA from its DFA JSON."""
    from langclass.core.ingest.parse import parse_dfa_json

    return parse_dfa_json(dict(data), limits)


_MONOID_CACHE: "OrderedDict[tuple[str, Limits], tuple[Any, int]]" = OrderedDict()
_MONOID_LOCK = threading.Lock()
MONOID_CACHE_BYTES = 256 * 2**20
"""Default byte budget of the monoid-page cache (``LANGCLASS_MONOID_CACHE_MB``)."""


def approx_bytes(obj: Any, _depth: int = 0) -> int:
    """A lower estimate of the memory ``obj`` holds: numpy buffers, and containers, strings and
    objects' ``__dict__`` / ``__slots__`` to a small depth."""
    nbytes = getattr(obj, "nbytes", None)
    if isinstance(nbytes, int) and hasattr(obj, "dtype"):
        return nbytes
    size = sys.getsizeof(obj, 64)
    if _depth >= 4:
        return size
    if isinstance(obj, dict):
        return size + sum(approx_bytes(k, _depth + 1) + approx_bytes(v, _depth + 1) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return size + sum(approx_bytes(v, _depth + 1) for v in obj)
    if isinstance(obj, (str, bytes, int, float, bool)) or obj is None:
        return size
    inner = dict(getattr(obj, "__dict__", {}) or {})
    for slot in getattr(type(obj), "__slots__", ()) or ():
        if hasattr(obj, slot):
            inner[slot] = getattr(obj, slot)
    return size + sum(approx_bytes(v, _depth + 1) for v in inner.values())


def monoid_cache_usage() -> tuple[int, int]:
    """``(entries, bytes)`` held by the monoid-page cache of this process."""
    with _MONOID_LOCK:
        return len(_MONOID_CACHE), sum(b for _, b in _MONOID_CACHE.values())


def monoid_page(fingerprint: str, dfa_json: Mapping[str, Any], limits: Limits, offset: int, limit: int,
                cache_bytes: int = MONOID_CACHE_BYTES) -> dict[str, Any]:
    """A page of the syntactic monoid of a stored language (``TransitionMonoid.describe``).

    The enumerated monoids of recent languages are kept in memory (keyed by fingerprint and the
    size limits), least recently used first out, within ``cache_bytes`` in all (a monoid larger than
    the budget is not kept), so paging through a large monoid does not rebuild it for every page
    and the cache never holds more than its budget.

    Raises:
        LimitExceeded: ``max_monoid_size`` when the monoid is over the cap; TimeLimitExceeded.
    """
    from langclass.core.algebra.monoid import transition_monoid

    key = (fingerprint, dataclasses.replace(limits, time_limit_s=None))
    with _MONOID_LOCK:
        hit = _MONOID_CACHE.get(key)
        if hit is not None:
            _MONOID_CACHE.move_to_end(key)
    if hit is not None:
        monoid = hit[0]
    else:
        monoid = transition_monoid(dfa_from_record(dfa_json, limits), limits)
        size = approx_bytes(monoid)
        with _MONOID_LOCK:
            if size <= cache_bytes:
                _MONOID_CACHE[key] = (monoid, size)
            total = sum(b for _, b in _MONOID_CACHE.values())
            while _MONOID_CACHE and total > cache_bytes:
                _, (_, dropped) = _MONOID_CACHE.popitem(last=False)
                total -= dropped
    return monoid.describe(offset, limit)


class ClassificationCache:
    """LRU of finished classifications, keyed by the exact request and the limits.

    Each app holds one (``app.state.classification_cache``, so one per API process), and
    ``POST /v1/classify`` of a language that app already classified answers from here
    without a round trip to a worker: the same text (regex, DFA JSON or formula), alphabet and
    :class:`~langclass.core.base.limits.Limits` always give the same canonical DFA (fingerprint) and
    analysis, so the stored answer (a :class:`ClassifiedJson`: the response body, already
    serialized) is the answer (its ``timings_ms`` are those of the computation that produced it).
    Only successes are stored — an error or a time limit is computed again — and only languages of
    at most ``max_states`` minimal-DFA states.
    """

    def __init__(self, size: int = 512, max_states: int = 1000) -> None:
        self.size = size
        self.max_states = max_states
        self._items: "OrderedDict[tuple[Any, ...], Any]" = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(*, regex: str | None, dfa: Any, formula: str | None, alphabet: Sequence[str] | None,
            limits: Limits) -> tuple[Any, ...] | None:
        """The cache key of a request, or ``None`` when the DFA JSON cannot be keyed canonically."""
        try:
            dfa_key = None if dfa is None else json.dumps(dfa, sort_keys=True, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            return None
        return (regex, dfa_key, formula, None if alphabet is None else tuple(alphabet), limits)

    def get(self, key: tuple[Any, ...] | None) -> Any:
        """The stored answer of ``key`` (most recently used now), or None."""
        if key is None or self.size <= 0:
            return None
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return hit

    def put(self, key: tuple[Any, ...] | None, value: Any, *, num_states: int) -> None:
        """Store ``value`` (the answer of a language of ``num_states`` minimal-DFA states) under ``key``."""
        if key is None or self.size <= 0 or num_states > self.max_states:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


def classification_record(parsed: ParsedLanguage, analysis: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The Classification resource: ``id``, ``alphabet``, ``source``, ``dfa`` and the analysis fields,
    and for a DFA input ``state_names`` (:func:`state_names_record`)."""
    record: dict[str, Any] = {
        "id": parsed.fingerprint,
        "alphabet": list(parsed.dfa.alphabet),
        "source": parsed.source,
        "dfa": dfa_to_json(parsed.dfa),
    }
    record.update(analysis)
    record.setdefault("num_states", parsed.dfa.num_states)
    record["code_version"] = version
    if parsed.document is not None:  # a DFA with the user's own state names
        record["state_names"] = state_names_record(parsed.document, parsed.dfa)
    return record


def state_names_record(document: Mapping[str, Any], dfa: DFA) -> dict[str, list[str]]:
    """``{canonical state (as a string): [the user's names of the states merged into it]}`` for a DFA
    input: evidence and ``dfa`` use the canonical numbers; this maps them back to the input's names
    (:func:`langclass.core.drawing.svg.user_state_names`)."""
    from langclass.core.drawing.svg import user_state_names

    return {str(q): list(ns) for q, ns in user_state_names(document, dfa).items()}


_CLASSIFICATION_ADAPTER: Any = None


def classification_json(record: Mapping[str, Any]) -> bytes:
    """``record`` (a :func:`classification_record`) as the JSON bytes ``POST /v1/classify`` sends:
    validated against the response model :class:`~langclass.app.usecases.schemas.Classification` and
    serialized by pydantic-core exactly as FastAPI's ``response_model`` does (validate, then
    ``dump_json(by_alias=True)``; through :class:`~langclass.app.usecases.schemas.ServedClassification`, which
    gives the same bytes and errors while trying each evidence record only against the shapes its keys
    allow) — but wherever this runs, which for the API is a classification
    worker process, so a large record (an 8192-state DFA is ~350 kB of JSON) costs the API process
    nothing but passing bytes on.

    Raises:
        pydantic.ValidationError: the record does not match the response model (a bug).
    """
    global _CLASSIFICATION_ADAPTER
    if _CLASSIFICATION_ADAPTER is None:
        from pydantic import TypeAdapter

        from .schemas import ServedClassification

        _CLASSIFICATION_ADAPTER = TypeAdapter(ServedClassification)
    adapter = _CLASSIFICATION_ADAPTER
    return adapter.dump_json(adapter.validate_python(record, from_attributes=True), by_alias=True)


@dataclass(frozen=True)
class ClassifiedJson:
    """A finished classification as the API sends it.

    Attributes:
        fingerprint: the language id (SHA-256 hex of the canonical minimal DFA).
        num_states: states of the minimal DFA.
        body: the Classification resource, JSON bytes (:func:`classification_json`).
        limits_hit: the limits that left part of the analysis undecided (:func:`limits_hit`).
    """

    fingerprint: str
    num_states: int
    body: bytes
    limits_hit: frozenset[str] = frozenset()


def limits_hit(record: Any) -> frozenset[str]:
    """The names of the limits that left something of an analysis record undecided (the ``limit``
    of every ``limit-exceeded`` / ``time-limit-exceeded`` error in it): ``analyze`` never raises
    for a limit, it records the error where it stopped, so an answer computed under lowered bounds
    (the light lane) has to be checked for them.

    >>> sorted(limits_hit({"classes": {"fo2": {"error": {"code": "limit-exceeded", "limit": "max_monoid_size"}}}}))
    ['max_monoid_size']
    """
    found: set[str] = set()
    stack = [record]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("code") in ("limit-exceeded", "time-limit-exceeded") and isinstance(node.get("limit"), str):
                found.add(node["limit"])
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return frozenset(found)


_LIMIT_CODES = ("limit-exceeded", "time-limit-exceeded")


def analysis_limits_hit(analysis: Mapping[str, Any]) -> frozenset[str]:
    """:func:`limits_hit` of an analysis record (``Analysis.to_dict()``), read only where
    :func:`langclass.core.classification.analysis.analyze` records a limit error — ``classes[key]["error"]``,
    ``monoid["error"]``, ``extra["error"]`` and ``extra["ltl_p_y_delay_error"]`` — instead of walking
    every certificate (a test checks it equals :func:`limits_hit` on records that hit limits).

    >>> sorted(analysis_limits_hit({"classes": {"fo2": {"error": {"code": "limit-exceeded", "limit": "max_monoid_size"}}},
    ...                             "monoid": {}, "extra": {}}))
    ['max_monoid_size']
    """
    errors = [c.get("error") for c in analysis.get("classes", {}).values() if isinstance(c, Mapping)]
    monoid, extra = analysis.get("monoid") or {}, analysis.get("extra") or {}
    errors += [monoid.get("error"), extra.get("error"), extra.get("ltl_p_y_delay_error")]
    return frozenset(err["limit"] for err in errors
                     if isinstance(err, Mapping) and err.get("code") in _LIMIT_CODES and isinstance(err.get("limit"), str))


def classify_json(
    *,
    regex: str | None = None,
    dfa: Mapping[str, Any] | str | bytes | None = None,
    formula: str | None = None,
    alphabet: Sequence[str] | None = None,
    limits: Limits,
    version: str,
) -> ClassifiedJson:
    """:func:`parse_and_analyze` (one budget: ``limits.time_limit_s``), then the record and its JSON
    (:func:`classification_json`) stamped with ``version`` — all of it in the caller's process (a
    classification worker, for the API).

    Raises:
        as :func:`parse_and_analyze`.
    """
    parsed, analysis = parse_and_analyze(regex=regex, dfa=dfa, formula=formula, alphabet=alphabet, limits=limits)
    record = classification_record(parsed, analysis, version)
    return ClassifiedJson(parsed.fingerprint, parsed.dfa.num_states, classification_json(record), analysis_limits_hit(analysis))


def warm_worker() -> None:
    """Do once what the first classification of a process would otherwise pay for inside its own
    time budget: the lazy imports of the analysis — the group tests' (``(aa)*`` has the group Z2;
    ~0.8 s the first time) among them — and the response model's validator/serializer
    (:func:`classification_json`). Classification worker processes call it before they report
    ready."""
    from langclass.core.base.limits import DEFAULT_LIMITS

    for regex in ("(ab)*", "(aa)*", "(a|b)*a(a|b)"):
        classify_json(regex=regex, alphabet=["a", "b"], limits=DEFAULT_LIMITS, version="warm-up")


def classify(
    *,
    regex: str | None = None,
    dfa: Mapping[str, Any] | str | bytes | None = None,
    formula: str | None = None,
    alphabet: Sequence[str] | None = None,
    limits: Limits,
) -> dict[str, Any]:
    """Parse and classify one language; the record ``POST /v1/classify`` returns (synchronous)."""
    parsed = parse_language(regex=regex, dfa=dfa, formula=formula, alphabet=alphabet, limits=limits)
    return classification_record(parsed, analyze_language(parsed.dfa, limits), code_version())
